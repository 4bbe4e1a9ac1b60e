import { describe, expect, it } from '@jest/globals';
import { cutText } from './thrown.js';

/** Where cutText ends the kept text (before its note). */
const kept = (cut: string) => cut.slice(0, cut.indexOf('… (cut;'));
const graphemes = (text: string) => [...new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(text)].map((s) => s.segment);

describe('cutText', () => {
  const family = '👩‍👩‍👧‍👦'; // one grapheme of 11 UTF-16 units (4 emoji joined by ZWJ)
  const flag = '🇫🇷'; // one grapheme of two regional indicators (4 units)
  const accented = 'e\u0301'; // é as e + a combining acute accent

  it.each([
    ['a family emoji (ZWJ sequence)', family],
    ['a flag (two regional indicators)', flag],
    ['a letter and its combining accent', accented],
  ])('never cuts inside a grapheme: %s', (_, cluster) => {
    for (let most = 60; most < 80; most++) {
      const text = 'x'.repeat(20) + cluster.repeat(40);
      const cut = cutText(text, most);
      expect(cut.length).toBeLessThanOrEqual(most);
      const keptGraphemes = graphemes(kept(cut));
      // Every grapheme kept is whole: the last one is the cluster itself (or an x), never a piece of it.
      expect(keptGraphemes.every((g) => g === 'x' || g === cluster)).toBe(true);
    }
  });

  it('keeps within the limit even when the limit is shorter than its note', () => {
    for (const most of [1, 5, 20, 33, 40]) expect(cutText('y'.repeat(100_000), most).length).toBeLessThanOrEqual(most);
  });

  it('leaves text within the limit as it is, and cuts long text to the limit, saying how long it was', () => {
    expect(cutText('short', 16_384)).toBe('short');
    const cut = cutText('z'.repeat(300_000), 16_384);
    expect(cut.length).toBeLessThanOrEqual(16_384);
    expect(cut).toMatch(/… \(cut; 300000 characters in all\)$/);
  });
});
