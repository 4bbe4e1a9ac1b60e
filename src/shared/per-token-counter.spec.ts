import { describe, expect, it } from '@jest/globals';
import { PerTokenCounter } from './per-token-counter.js';

describe('PerTokenCounter', () => {
  it('lets each key take up to the limit, and refuses the next without taking it', () => {
    const counter = new PerTokenCounter(2);
    expect(counter.take('a')).toBe(true);
    expect(counter.take('a')).toBe(true);
    expect(counter.take('a')).toBe(false);
    expect(counter.count('a')).toBe(2);
    expect(counter.take('b')).toBe(true);
    expect(counter.count('b')).toBe(1);
  });

  it('takes again once one is released', () => {
    const counter = new PerTokenCounter(1);
    expect(counter.take('a')).toBe(true);
    expect(counter.take('a')).toBe(false);
    counter.release('a');
    expect(counter.take('a')).toBe(true);
  });

  it('forgets a key whose count is back at zero, so it holds only what is in progress', () => {
    const counter = new PerTokenCounter(3);
    for (let i = 0; i < 1_000; i++) {
      counter.take(`token-${i}`);
      counter.take(`token-${i}`);
    }
    expect(counter.size).toBe(1_000);
    for (let i = 0; i < 1_000; i++) {
      counter.release(`token-${i}`);
      counter.release(`token-${i}`);
    }
    expect(counter.size).toBe(0);
    expect(counter.count('token-0')).toBe(0);
  });

  it('a release with nothing taken leaves nothing behind', () => {
    const counter = new PerTokenCounter(1);
    counter.release('a');
    expect(counter.size).toBe(0);
    expect(counter.take('a')).toBe(true);
    expect(counter.take('a')).toBe(false);
  });
});
