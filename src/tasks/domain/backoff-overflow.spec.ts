/**
 * A retry policy the service accepts (maxAttempts up to 1,000, initialDelayMs
 * 0, backoffFactor up to 100) makes `backoffDelay` compute 0 * Infinity = NaN once the factor's
 * power overflows (attempt 156 with factor 100): `iso(now + NaN)` then throws RangeError ("Invalid
 * time value"), an internal error, on every report and every lease expiry of that task, so the
 * attempt can never fail, and its lease expiry (a Tick) throws each time the clock comes round.
 */
import { describe, expect, it } from '@jest/globals';
import { backoffDelay, decideExpiry, decideFail, type AttemptState } from './task-attempts.js';

const policy = { maxAttempts: 1000, initialDelayMs: 0, backoffFactor: 100, maxDelayMs: 1000 };
const NOW = Date.parse('2030-01-01T00:00:00.000Z');
const started = (attempts: number): AttemptState => ({
  status: 'started',
  attempts,
  attemptId: 'a',
  workerId: 'w',
  startedAt: NOW - 10,
  leaseExpiresAt: NOW - 1,
  deadlineAt: null,
  retryPolicy: policy,
});

describe('backoff past what a double holds', () => {
  it('is a number of milliseconds within the policy, not NaN', () => {
    expect(backoffDelay(policy, 200)).toBe(0);
    expect(backoffDelay({ ...policy, initialDelayMs: 5 }, 200)).toBe(1000);
  });

  it('a failed attempt and a lapsed lease late in a long policy are recorded with a retry time', () => {
    const failed = decideFail(started(200), { attemptId: 'a', error: { message: 'boom' }, now: NOW });
    expect(failed).toEqual([expect.objectContaining({ type: 'TaskAttemptFailed', data: expect.objectContaining({ retryAt: new Date(NOW).toISOString() }) })]);
    expect(decideExpiry(started(200), NOW)).toHaveLength(1);
  });
});
