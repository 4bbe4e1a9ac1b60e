import { describe, expect, it } from '@jest/globals';
import { ManualClock } from './clock.js';
import { ThrottledLog } from './throttled-log.js';

const line = (key: string) => (count: number, sinceMs: number | null) => `${key} x${count} since ${sinceMs}`;

function setup(options: Partial<ConstructorParameters<typeof ThrottledLog>[2]> = {}) {
  const clock = new ManualClock(1_000_000);
  const lines: string[] = [];
  const log = new ThrottledLog(clock, (l) => lines.push(l), { intervalMs: 60_000, maxKeys: 10_000, maxLinesPerInterval: 100, ...options });
  return { clock, lines, log };
}

describe('ThrottledLog', () => {
  it('writes one line for many occurrences of a key in an interval, and the next interval\'s line carries their count', () => {
    const { clock, lines, log } = setup();
    for (let i = 0; i < 500; i++) log.note('a', line('a'));
    expect(lines).toEqual(['a x1 since null']);
    clock.advance(59_999);
    log.note('a', line('a'));
    expect(lines).toHaveLength(1);
    clock.advance(1);
    log.note('a', line('a'));
    expect(lines).toEqual(['a x1 since null', 'a x501 since 60000']);
  });

  it('keys are throttled apart', () => {
    const { lines, log } = setup();
    log.note('a', line('a'));
    log.note('b', line('b'));
    log.note('a', line('a'));
    expect(lines).toEqual(['a x1 since null', 'b x1 since null']);
  });

  it('remembers at most maxKeys keys, dropping the one seen longest ago', () => {
    const { lines, log } = setup({ maxKeys: 3 });
    for (const key of ['a', 'b', 'c']) log.note(key, line(key));
    log.note('a', line('a')); // seen again: now b is the oldest
    log.note('d', line('d'));
    expect(log.size).toBe(3);
    log.note('a', line('a')); // still remembered: no line
    expect(lines).toEqual(['a x1 since null', 'b x1 since null', 'c x1 since null', 'd x1 since null']);
    log.note('b', line('b')); // forgotten: logs as a first line again
    expect(lines.at(-1)).toBe('b x1 since null');
    for (let i = 0; i < 10_000; i++) log.note(`k${i}`, line('k'));
    expect(log.size).toBe(3);
  });

  it('keys that never repeat are held to maxLinesPerInterval lines (and one notice) an interval; the ones left out log with their count later', () => {
    const { clock, lines, log } = setup({ maxLinesPerInterval: 2 });
    for (let i = 0; i < 1_000; i++) log.note(`k${i}`, line(`k${i}`));
    expect(lines).toEqual(['k0 x1 since null', 'k1 x1 since null', expect.stringMatching(/^\(2 lines of this kind in 60 s; more are left out/)]);
    log.note('k5', line('k5'));
    clock.advance(60_000);
    log.note('k5', line('k5'));
    expect(lines.at(-1)).toBe('k5 x3 since null');
    expect(lines).toHaveLength(4);
  });
});
