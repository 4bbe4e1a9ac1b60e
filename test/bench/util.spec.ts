import { describe, expect, it } from '@jest/globals';

type Util = {
  percentile: (values: number[], p: number) => number;
  summary: (values: number[]) => { median: number; min: number; max: number; runs: number[] };
  atRate: (count: number, perSecond: number, job: (i: number) => Promise<unknown>) => Promise<unknown[]>;
};
// The bench is plain JavaScript outside the TypeScript project: imported by path.
const utilModule = '../../bench/lib/util.mjs';
const { percentile, summary, atRate } = (await import(utilModule)) as Util;

describe('the bench statistics (bench/lib/util.mjs)', () => {
  it('sorts latencies as numbers, not as strings, and interpolates between ranks', () => {
    // As strings, 10 and 100 would sort before 2 and 9.
    expect(percentile([10, 9, 100, 2], 50)).toBe(9.5);
    expect(percentile([10, 9, 100, 2], 0)).toBe(2);
    expect(percentile([10, 9, 100, 2], 100)).toBe(100);
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1
    expect(percentile(hundred, 99)).toBeCloseTo(99.01, 10);
    expect(percentile(hundred, 50)).toBe(50.5);
    expect(percentile([-3.5, 7], 50)).toBe(1.75);
    expect(percentile([], 50)).toBeNaN();
  });

  it('summarises runs by their median, leaving out runs that produced no figure', () => {
    const s = summary([3, NaN, 1, 2, Infinity]);
    expect(s.median).toBe(2);
    expect(s.min).toBe(1);
    expect(s.max).toBe(3);
    expect(s.runs).toEqual([3, 1, 2]);
  });
});

describe('the fixed-rate schedule (atRate)', () => {
  it('is an open loop: a slow answer does not delay the next send', async () => {
    const starts: number[] = [];
    const t0 = performance.now();
    // 8 jobs at 20/s, each answered after 400 ms: a closed loop would start the last after 2.8 s.
    await atRate(8, 20, async (i) => {
      starts[i] = performance.now() - t0;
      await new Promise((resolve) => setTimeout(resolve, 400));
    });
    for (let i = 1; i < starts.length; i++) {
      expect(starts[i]).toBeGreaterThanOrEqual(i * 50 - 2);
      expect(starts[i] - starts[i - 1]).toBeLessThan(150);
    }
    expect(starts[7]).toBeLessThan(350 + 150);
  });
});
