import { describe, expect, it } from '@jest/globals';

type WallClock = (mono?: () => number, wall?: () => number) => () => number;
// The bench is plain JavaScript outside the TypeScript project: imported by path.
const clockModule = '../../bench/lib/clock.mjs';
const { wallClock } = (await import(clockModule)) as { wallClock: WallClock };

describe('the bench clock (bench/lib/clock.mjs)', () => {
  it('reads the wall clock to a fraction of a millisecond', () => {
    const now = wallClock();
    let fractional = 0;
    for (let i = 0; i < 5_000; i++) {
      const before = Date.now();
      const reading = now();
      const after = Date.now();
      expect(reading).toBeGreaterThanOrEqual(before - 0.1);
      expect(reading).toBeLessThan(after + 1.1);
      if (reading % 1 !== 0) fractional++;
    }
    expect(fractional).toBeGreaterThan(4_500);
  });

  it('follows a step of the wall clock at its next reading, where a clock anchored once at start keeps the old offset', () => {
    // A monotonic clock the test moves, and a wall clock that truncates (truth + mono) to the millisecond.
    let mono = 1_000;
    let truth = 1_800_000_000_000.4;
    const now = wallClock(
      () => (mono += 0.001),
      () => Math.floor(truth + mono),
    );
    const anchoredAt = mono;
    const anchoredOnce = truth + mono;
    const error = () => now() - (truth + mono);
    for (let i = 0; i < 50; i++) {
      mono += 3.37;
      expect(Math.abs(error())).toBeLessThan(0.05);
    }
    truth -= 15; // the system clock is stepped back
    mono += 3.37;
    expect(Math.abs(error())).toBeLessThan(1);
    for (let i = 0; i < 50; i++) mono += 0.29 + (i % 7) * 0.13, now();
    expect(Math.abs(error())).toBeLessThan(0.05);
    // What performance.timeOrigin + performance.now() would read: 15 ms off for the rest of the process.
    expect(anchoredOnce + (mono - anchoredAt) - (truth + mono)).toBeCloseTo(15, 2);
  });
});
