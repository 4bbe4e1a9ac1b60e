import { describe, expect, it } from '@jest/globals';
import { BadUserInputError } from './errors.js';
import { DEFAULT_LIMITS, jsonTextDepth, parseLimitedJson } from './limits.js';

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

function rejection(fn: () => unknown): BadUserInputError {
  try {
    fn();
  } catch (error) {
    if (error instanceof BadUserInputError) return error;
    throw error;
  }
  throw new Error('expected a BadUserInputError, nothing was thrown');
}

describe('input limits', () => {
  it('measures depth without parsing, ignoring brackets inside strings', () => {
    expect(jsonTextDepth('[]')).toBe(1);
    expect(jsonTextDepth('{"a":[{"b":"[[[[\\"]]"}]}')).toBe(3);
    expect(jsonTextDepth(nested(1_000_000), 64)).toBe(65);
  });

  it('a value nested a million deep is BAD_USER_INPUT on its field, not a stack overflow', () => {
    expect(rejection(() => parseLimitedJson('input', nested(1_000_000), { ...DEFAULT_LIMITS, payloadBytes: 4_000_000 })).details.field).toBe('input');
  });

  it('depth, array length, string length and bytes are each enforced', () => {
    const limits = { ...DEFAULT_LIMITS, jsonDepth: 3, arrayLength: 3, stringLength: 5, payloadBytes: 100 };
    expect(parseLimitedJson('f', '[[[1]]]', limits)).toEqual([[[1]]]);
    expect(rejection(() => parseLimitedJson('f', '[[[[1]]]]', limits)).message).toMatch(/nested deeper than 3/);
    expect(rejection(() => parseLimitedJson('f', '[1,2,3,4]', limits)).message).toMatch(/more than 3 elements/);
    expect(rejection(() => parseLimitedJson('f', '{"a":1,"b":2,"c":3,"d":4}', limits)).message).toMatch(/more than 3 keys/);
    expect(rejection(() => parseLimitedJson('f', '["abcdef"]', limits)).message).toMatch(/longer than 5/);
    expect(rejection(() => parseLimitedJson('f', JSON.stringify(['x'.repeat(120)]), { ...limits, stringLength: 1000 })).message).toMatch(/100 bytes/);
  });

  it('the array shape is required where the API says so', () => {
    expect(rejection(() => parseLimitedJson('data', '{"a":1}', DEFAULT_LIMITS, 'array')).details.field).toBe('data');
    expect(parseLimitedJson('result', '{"a":1}', DEFAULT_LIMITS)).toEqual({ a: 1 });
  });
});
