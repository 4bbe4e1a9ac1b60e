import { describe, expect, it } from '@jest/globals';
import { jsonStringBytes } from './json-size.js';

const expected = (text: string) => Buffer.byteLength(JSON.stringify(text));

describe('jsonStringBytes', () => {
  it.each([
    ['empty', ''],
    ['ascii', 'hello world'],
    ['quotes and backslashes', 'say "hi" \\ C:\\path\\"x"'],
    ['JSON escaped once already', JSON.stringify(JSON.stringify([{ type: 'DispatchTask', input: '{"a":"b\\n"}' }]))],
    ['the short escapes', '\b\t\n\f\r'],
    ['every control character', Array.from({ length: 32 }, (_, c) => String.fromCharCode(c)).join('')],
    ['DEL and C1 controls (not escaped)', '\x7f\x80\x9f'],
    ['two- and three-byte characters', 'héllo wörld ߿ ࠀ ✓ ￿'],
    ['emoji (surrogate pairs)', '😀👍🏽 𝄞 family: 👨‍👩‍👧'],
    ['a lone high surrogate', 'a\ud83db'],
    ['a lone low surrogate', 'a\ude00b'],
    ['a lone high surrogate at the end', 'abc\ud800'],
    ['a lone low surrogate at the start', '\udc00abc'],
    ['reversed pair', '\ude00\ud83d'],
    ['high, high, low', '\ud83d\ud83d\ude00'],
    ['surrogates next to escapes', '"\ud83d"\\\ude00\n'],
  ])('%s: the same as Buffer.byteLength(JSON.stringify(text))', (_name, text) => {
    expect(jsonStringBytes(text)).toBe(expected(text));
  });

  it('every single UTF-16 unit, and every unit after a high surrogate', () => {
    const wrong: string[] = [];
    for (let c = 0; c <= 0xffff; c++) {
      const unit = String.fromCharCode(c);
      if (jsonStringBytes(unit) !== expected(unit)) wrong.push(c.toString(16));
      const pair = '\ud83d' + unit;
      if (jsonStringBytes(pair) !== expected(pair)) wrong.push(`d83d ${c.toString(16)}`);
    }
    expect(wrong).toEqual([]);
  });

  it('random strings drawn from the tricky ranges (seeded)', () => {
    let seed = 42;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31);
    const ranges = [[0, 0x20], [0x20, 0x80], [0x80, 0x800], [0x800, 0xd800], [0xd800, 0xdc00], [0xdc00, 0xe000], [0xe000, 0x10000]];
    const wrong: string[] = [];
    for (let n = 0; n < 5_000; n++) {
      let text = '';
      for (let i = next() % 40; i > 0; i--) {
        const [from, to] = ranges[next() % ranges.length];
        text += String.fromCharCode(from + (next() % (to - from)));
      }
      if (jsonStringBytes(text) !== expected(text)) wrong.push(JSON.stringify(text));
    }
    expect(wrong).toEqual([]);
  });
});
