import { describe, expect, it } from '@jest/globals';
import { DeciderSpecification } from '../../../test/support/decider-specification.js';
import { ConflictError, NotFoundError } from '../../shared/errors.js';
import { RetryPolicy, backoffDelay, isClaimable } from './task-attempts.js';
import { TaskCommand, TaskEvent, taskDecider, taskNextDueAt } from './task.decider.js';

const spec = DeciderSpecification.for(taskDecider);

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const LEASE = 1000;
const POLICY: RetryPolicy = { maxAttempts: 2, initialDelayMs: 100, backoffFactor: 3, maxDelayMs: 10_000 };

const dispatched: TaskEvent = {
  type: 'TaskDispatched',
  data: { taskId: 't1', appId: 'demo', environment: 'test', name: 'resize', args: [1], scheduleId: null, parent: null, dispatchedAt: at(0) },
};
const started = (attempt: number, attemptId: string, ms: number, deadlineMs: number | null = null): TaskEvent => ({
  type: 'TaskStarted',
  data: {
    attempt,
    attemptId,
    workerId: 'w1',
    startedAt: at(ms),
    leaseExpiresAt: at(Math.min(ms + LEASE, deadlineMs ?? Infinity)),
    deadlineAt: deadlineMs === null ? null : at(deadlineMs),
    retryPolicy: POLICY,
  },
});
const start = (attemptId: string, ms: number, timeoutMs: number | null = null): TaskCommand => ({
  type: 'StartTask',
  attemptId,
  workerId: 'w1',
  now: T0 + ms,
  leaseMs: LEASE,
  retryPolicy: POLICY,
  timeoutMs,
});

describe('standalone task decider', () => {
  it('records the dispatch once', () => {
    spec
      .given([])
      .when({ type: 'DispatchTask', taskId: 't1', appId: 'demo', environment: 'test', name: 'resize', args: [1], now: T0 })
      .then([dispatched]);
    spec.given([dispatched]).when({ type: 'DispatchTask', taskId: 't1', appId: 'demo', environment: 'test', name: 'resize', args: [1], now: T0 }).thenNothingHappens();
    spec.given([]).when({ type: 'Tick', now: T0 }).thenThrows(NotFoundError);
  });

  it('is claimable until an attempt starts, then completes once', () => {
    const state = spec.given([dispatched]).state();
    expect(state.status === 'exists' && isClaimable(state.attempt, T0)).toBe(true);
    spec.given([dispatched]).when(start('a1', 5)).then([started(1, 'a1', 5)]);
    spec.given([dispatched, started(1, 'a1', 5)]).when(start('a2', 6)).thenThrows(ConflictError);
    spec
      .given([dispatched, started(1, 'a1', 5)])
      .when({ type: 'CompleteTask', attemptId: 'a1', result: 'done' })
      .thenState((s, events) => {
        expect(events).toEqual([{ type: 'TaskCompleted', data: { attemptId: 'a1', result: 'done' } }]);
        expect(s.status === 'exists' && s.attempt.status).toBe('completed');
        expect(taskNextDueAt(s, T0)).toBeUndefined();
      });
  });

  it('retries after the backoff, then fails for good', () => {
    const first = [dispatched, started(1, 'a1', 0)];
    spec
      .given(first)
      .when({ type: 'FailTask', attemptId: 'a1', error: { message: 'x' }, now: T0 + 10 })
      .then([{ type: 'TaskAttemptFailed', data: { attemptId: 'a1', attempt: 1, reason: 'error', error: { message: 'x' }, retryAt: at(110) } }]);
    const retrying: TaskEvent[] = [...first, { type: 'TaskAttemptFailed', data: { attemptId: 'a1', attempt: 1, reason: 'error', error: { message: 'x' }, retryAt: at(110) } }];
    expect(taskNextDueAt(spec.given(retrying).state(), T0 + 10)).toBe(T0 + 110);
    spec.given(retrying).when(start('a2', 109)).thenThrows(ConflictError);
    spec
      .given([...retrying, started(2, 'a2', 110)])
      .when({ type: 'FailTask', attemptId: 'a2', error: { message: 'y' }, now: T0 + 120 })
      .then([
        { type: 'TaskAttemptFailed', data: { attemptId: 'a2', attempt: 2, reason: 'error', error: { message: 'y' }, retryAt: null } },
        { type: 'TaskFailed', data: { attempts: 2, error: { message: 'y' } } },
      ]);
  });

  it('fails an attempt whose lease lapsed or whose deadline passed (Tick)', () => {
    spec
      .given([dispatched, started(1, 'a1', 0)])
      .when({ type: 'Tick', now: T0 + LEASE })
      .thenMatches([{ type: 'TaskAttemptFailed', data: { reason: 'lease_expired', retryAt: at(LEASE + 100) } }]);
    spec.given([dispatched]).when(start('a1', 0, 250)).then([started(1, 'a1', 0, 250)]);
    spec
      .given([dispatched, started(1, 'a1', 0, 250)])
      .when({ type: 'Tick', now: T0 + 250 })
      .thenMatches([{ type: 'TaskAttemptFailed', data: { reason: 'timeout', error: { name: 'TimeoutError' } } }]);
  });

  it('ignores a stale attempt', () => {
    spec
      .given([dispatched, started(1, 'a1', 0), { type: 'TaskAttemptFailed', data: { attemptId: 'a1', attempt: 1, reason: 'lease_expired', error: { message: 'l' }, retryAt: at(1100) } }, started(2, 'a2', 1100)])
      .when({ type: 'CompleteTask', attemptId: 'a1', result: 'late' })
      .then([{ type: 'TaskResultIgnored', data: { attemptId: 'a1', reason: 'superseded by a later attempt' } }]);
  });

  it('records a late report once, refuses one for an attempt it never issued, and knows its attempts after a retry (TaskRetried)', () => {
    const failedFor: TaskEvent = { type: 'TaskAttemptFailed', data: { attemptId: 'a1', attempt: 1, reason: 'error', error: { message: 'x' }, retryAt: null } };
    const failed: TaskEvent[] = [dispatched, started(1, 'a1', 0), failedFor, { type: 'TaskFailed', data: { attempts: 1, error: { message: 'x' } } }];
    const retried: TaskEvent[] = [...failed, { type: 'TaskRetried', data: { previousAttempts: 1, retriedAt: at(500) } }, started(1, 'b1', 600)];
    const late: TaskCommand = { type: 'CompleteTask', attemptId: 'a1', result: 'late' };
    spec.given(retried).when(late).then([{ type: 'TaskResultIgnored', data: { attemptId: 'a1', reason: 'superseded by a later attempt' } }]);
    const ignored: TaskEvent[] = [...retried, { type: 'TaskResultIgnored', data: { attemptId: 'a1', reason: 'superseded by a later attempt' } }];
    spec.given(ignored).when(late).then([]);
    spec.given(ignored).when({ type: 'FailTask', attemptId: 'a1', error: { message: 'late too' }, now: T0 + 700 }).then([]);
    spec.given(ignored).when({ type: 'CompleteTask', attemptId: 'b1', result: 'ok' }).then([{ type: 'TaskCompleted', data: { attemptId: 'b1', result: 'ok' } }]);
    spec.given(retried).when({ type: 'CompleteTask', attemptId: 'never-issued', result: 'x' }).thenThrows(NotFoundError, 'task attempt never-issued not found');
  });

  it('folds a stream recorded before reports were ignored once (the same attempt ignored many times, attempts never issued) into one id per attempt it issued', () => {
    const ignoredAgain = (attemptId: string): TaskEvent => ({ type: 'TaskResultIgnored', data: { attemptId, reason: 'superseded by a later attempt' } });
    const superseded: TaskEvent[] = [
      dispatched,
      started(1, 'a1', 0),
      { type: 'TaskAttemptFailed', data: { attemptId: 'a1', attempt: 1, reason: 'lease_expired', error: { message: 'l' }, retryAt: at(1100) } },
      started(2, 'a2', 1100),
    ];
    const old = [...superseded, ...Array.from({ length: 1000 }, () => ignoredAgain('a1')), ...Array.from({ length: 1000 }, (_, i) => ignoredAgain(`forged-${i}`))];
    spec
      .given(old)
      .when({ type: 'CompleteTask', attemptId: 'a1', result: 'late' })
      .thenState((state, events) => {
        expect(events).toEqual([]);
        expect(state.status === 'exists' && state.attempt.ignored).toEqual(['a1']);
      });
  });
});

describe('backoffDelay', () => {
  it('grows by the factor and stops at the maximum', () => {
    const policy: RetryPolicy = { maxAttempts: 10, initialDelayMs: 1000, backoffFactor: 2, maxDelayMs: 5000 };
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(policy, n))).toEqual([1000, 2000, 4000, 5000, 5000]);
  });
});
