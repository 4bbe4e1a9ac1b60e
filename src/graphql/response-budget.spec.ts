import { describe, expect, it } from '@jest/globals';
import { exceeds } from './response-budget.js';

/** The measure the budget is defined by: UTF-8 bytes of strings, printed length of scalars. */
function measured(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8') + 2;
  if (value === null || value === undefined || typeof value !== 'object') return String(value).length;
  if (value instanceof Date) return 26;
  if (Array.isArray(value)) return 2 + value.length + value.reduce((n: number, v) => n + measured(v), 0);
  return Object.entries(value).reduce((n, [k, v]) => n + k.length + 4 + measured(v), 0);
}

describe('exceeds (the response budget)', () => {
  const values: unknown[] = [
    'plain ascii',
    'ünïcödé and 漢字 and 🎉🎉',
    { a: 1, b: [true, null, 'x'.repeat(500)], c: { d: new Date(0), e: -1.7976931348623157e308 } },
    Array.from({ length: 50 }, (_, i) => ({ id: String(i), history: '€'.repeat(i * 10), n: i / 7 })),
    Object.assign(Object.create(null), { data: { items: ['a', 'ß'.repeat(300)] } }),
  ];

  it('answers exactly as measuring every byte would, on both sides of the limit', () => {
    for (const value of values) {
      const size = measured(value);
      for (const budget of [0, 1, size - 100, size - 1, size, size + 1, size * 3, size * 10]) {
        if (budget < 0) continue;
        expect(exceeds(value, budget)).toBe(size > budget);
      }
    }
  });
});
