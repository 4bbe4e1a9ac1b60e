import { describe, expect, it } from '@jest/globals';
import { AnswerBudget } from '../graphql/answer-budget.js';
import { BytesInFlight } from './bytes-in-flight.js';

describe('BytesInFlight', () => {
  it('admits while the declared bytes fit, always one when nothing is held, and gives back once', () => {
    const bytes = new BytesInFlight({ maxBytesInFlight: 1_000 });
    const first = bytes.admit(5_000);
    expect(first).toBeDefined(); // nothing held: progress, even past the bound
    expect(bytes.admit(1)).toBeUndefined();
    first!.release();
    first!.release();
    expect(bytes.held).toBe(0);
    const a = bytes.admit(600)!;
    const b = bytes.admit(400)!;
    expect(bytes.admit(1)).toBeUndefined();
    expect(bytes.refused).toBe(2);
    a.add(100);
    b.release();
    expect(bytes.held).toBe(700);
    a.release();
    a.add(50); // after release: nothing
    expect(bytes.held).toBe(0);
  });

  it('with the bound off (0) admits everything and still counts', () => {
    const bytes = new BytesInFlight({ maxBytesInFlight: 0 });
    const held = [bytes.admit(1e9), bytes.admit(1e9)];
    expect(held.every(Boolean)).toBe(true);
    expect(bytes.held).toBe(2e9);
  });

  it("counts an answer's stored values as its budget charges them, refused or not", () => {
    const bytes = new BytesInFlight({ maxBytesInFlight: 1_000_000 });
    const held = bytes.admit(100)!;
    const budget = new AnswerBudget(10_000, held);
    budget.charge({ input: 'x'.repeat(2_000) }, undefined);
    expect(bytes.held).toBeGreaterThan(2_100);
    const before = bytes.held;
    budget.spend(['y'.repeat(1_000)], undefined);
    expect(bytes.held).toBeGreaterThan(before + 1_000);
    expect(() => budget.charge('z'.repeat(20_000), undefined)).toThrow(/response limit/);
    held.release();
    expect(bytes.held).toBe(0);
  });
});
