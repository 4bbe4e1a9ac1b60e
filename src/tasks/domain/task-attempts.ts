import { Json } from '../../event-store/event-store.port.js';
import { ConflictError, NotFoundError } from '../../shared/errors.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicyMs, backoffDelay } from '../../protocol/retry-policy.js';

/**
 * The life of one task's attempts, shared by standalone tasks (`task-<id>` streams) and the
 * tasks a workflow schedules (inside `workflow-<id>`, keyed by the call's sequence number).
 * Pure: times arrive as arguments (epoch milliseconds), persisted as ISO strings.
 */

/** How a task is retried; sent by the worker that claims an attempt and recorded with it. */
export type RetryPolicy = RetryPolicyMs;
export { DEFAULT_RETRY_POLICY, backoffDelay };

export interface TaskError {
  message: string;
  name?: string;
  /** The task asked not to be retried (`NonRetryableError`). */
  nonRetryable?: boolean;
  /** The task asked for this delay before the next attempt (`RetryableError`). */
  retryAfterMs?: number;
}

export type AttemptFailureReason = 'error' | 'lease_expired' | 'timeout' | 'released';

/** `seq` is present for a workflow's task and absent for a standalone one. */
export interface AttemptEventData {
  TaskStarted: {
    seq?: number;
    attempt: number;
    attemptId: string;
    workerId: string;
    startedAt: string;
    leaseExpiresAt: string;
    deadlineAt: string | null;
    retryPolicy: RetryPolicy;
    /** The poll that claimed it, when the worker named its poll (a poll sent again is answered with this claim). */
    pollId?: string;
  };
  TaskLeaseExtended: { seq?: number; attemptId: string; leaseExpiresAt: string };
  TaskCompleted: { seq?: number; attemptId: string; result: Json };
  TaskAttemptFailed: {
    seq?: number;
    attemptId: string;
    attempt: number;
    reason: AttemptFailureReason;
    error: TaskError;
    retryAt: string | null;
    /** Given back by its worker (shutting down): the attempt does not count. */
    released?: boolean;
  };
  TaskFailed: { seq?: number; attempts: number; error: TaskError };
  TaskResultIgnored: { seq?: number; attemptId: string; reason: string };
}

export type AttemptEvent = {
  [K in keyof AttemptEventData]: { type: K; data: AttemptEventData[K] };
}[keyof AttemptEventData];

export const ATTEMPT_EVENT_TYPES = [
  'TaskStarted',
  'TaskLeaseExtended',
  'TaskCompleted',
  'TaskAttemptFailed',
  'TaskFailed',
  'TaskResultIgnored',
] as const satisfies ReadonlyArray<keyof AttemptEventData>;

/**
 * What a task's state keeps of the attempts before its current (or last) one, for late reports:
 * their ids (`earlier`, absent while there was at most one), and those whose late report was
 * recorded (`ignored`). A report naming an attempt the task never issued records nothing, and one
 * ignored once is not recorded again: reports cannot grow a stream.
 */
export interface AttemptMemory {
  earlier?: readonly string[];
  ignored?: readonly string[];
}

export type AttemptState = AttemptMemory &
  (
  /** Waiting for a worker; `readyAt` is when a retry becomes claimable. */
  | { status: 'pending'; attempts: number; readyAt: number; lastAttemptId?: string }
  | {
      status: 'started';
      attempts: number;
      attemptId: string;
      workerId: string;
      startedAt: number;
      leaseExpiresAt: number;
      deadlineAt: number | null;
      retryPolicy: RetryPolicy;
      pollId?: string;
    }
  /** The result itself stays in the stream: state keeps only what deciding needs. */
  | { status: 'completed'; attempts: number; attemptId: string }
  | { status: 'failed'; attempts: number; error: TaskError; lastAttemptId?: string }
  );

export const initialAttemptState = (readyAt = 0): AttemptState => ({ status: 'pending', attempts: 0, readyAt });

/** The state of a task retried from the start (`TaskRetried`, `WorkflowRetried`): its attempts so far stay known. */
export function retriedAttemptState(state: AttemptState): AttemptState {
  const last = lastAttemptIdOf(state);
  const earlier = last === undefined ? state.earlier : [...(state.earlier ?? []), last];
  return remember({ status: 'pending', attempts: 0, readyAt: 0 }, earlier, state.ignored);
}

/** The current attempt's id, or the last one's. */
function lastAttemptIdOf(state: AttemptState): string | undefined {
  return state.status === 'started' || state.status === 'completed' ? state.attemptId : state.lastAttemptId;
}

/** True when this task issued the attempt: its current or last one, or one before. */
function issued(state: AttemptState, attemptId: string): boolean {
  return lastAttemptIdOf(state) === attemptId || state.earlier?.includes(attemptId) === true;
}

/** `next` with the memory of earlier attempts (set only when there is some: most tasks have one attempt). */
function remember<S extends AttemptState>(next: S, earlier: readonly string[] | undefined, ignored: readonly string[] | undefined): S {
  if (earlier !== undefined) next.earlier = earlier;
  if (ignored !== undefined) next.ignored = ignored;
  return next;
}

export function evolveAttempt(state: AttemptState, event: AttemptEvent): AttemptState {
  switch (event.type) {
    case 'TaskStarted': {
      const last = lastAttemptIdOf(state);
      const earlier = last === undefined || last === event.data.attemptId ? state.earlier : [...(state.earlier ?? []), last];
      return remember<AttemptState>({
        status: 'started',
        attempts: event.data.attempt,
        attemptId: event.data.attemptId,
        workerId: event.data.workerId,
        startedAt: Date.parse(event.data.startedAt),
        leaseExpiresAt: Date.parse(event.data.leaseExpiresAt),
        deadlineAt: event.data.deadlineAt === null ? null : Date.parse(event.data.deadlineAt),
        retryPolicy: event.data.retryPolicy,
        ...(event.data.pollId !== undefined ? { pollId: event.data.pollId } : {}),
      }, earlier, state.ignored);
    }
    case 'TaskLeaseExtended':
      return state.status === 'started' && state.attemptId === event.data.attemptId
        ? { ...state, leaseExpiresAt: Date.parse(event.data.leaseExpiresAt) }
        : state;
    case 'TaskCompleted':
      return remember<AttemptState>({ status: 'completed', attempts: state.attempts, attemptId: event.data.attemptId }, state.earlier, state.ignored);
    case 'TaskAttemptFailed':
      return event.data.retryAt === null
        ? state
        : remember<AttemptState>(
            {
              status: 'pending',
              attempts: event.data.released ? event.data.attempt - 1 : event.data.attempt,
              readyAt: Date.parse(event.data.retryAt),
              lastAttemptId: event.data.attemptId,
            },
            state.earlier,
            state.ignored,
          );
    case 'TaskFailed':
      return remember<AttemptState>(
        { status: 'failed', attempts: event.data.attempts, error: event.data.error, lastAttemptId: state.status === 'started' ? state.attemptId : state.status === 'pending' ? state.lastAttemptId : undefined },
        state.earlier,
        state.ignored,
      );
    case 'TaskResultIgnored':
      // Once per attempt it issued: a stream recorded before reports were ignored once may hold
      // the same attempt ignored thousands of times, or attempts it never issued (copying the
      // list for each made its fold quadratic).
      return !issued(state, event.data.attemptId) || state.ignored?.includes(event.data.attemptId)
        ? state
        : { ...state, ignored: [...(state.ignored ?? []), event.data.attemptId] };
  }
}

export interface StartAttempt {
  attemptId: string;
  workerId: string;
  /** The poll claiming it, recorded when given. */
  pollId?: string;
  now: number;
  leaseMs: number;
  retryPolicy: RetryPolicy;
  /** Start-to-close timeout of one attempt, if any. */
  timeoutMs: number | null;
}

export function isClaimable(state: AttemptState, now: number): boolean {
  return state.status === 'pending' && state.readyAt <= now;
}

export function decideStart(state: AttemptState, cmd: StartAttempt, seq?: number): AttemptEvent[] {
  if (!isClaimable(state, cmd.now)) throw new ConflictError('task attempt is not available to claim');
  const deadlineAt = cmd.timeoutMs === null ? null : cmd.now + cmd.timeoutMs;
  const leaseExpiresAt = Math.min(cmd.now + cmd.leaseMs, deadlineAt ?? Number.MAX_SAFE_INTEGER);
  return [
    {
      type: 'TaskStarted',
      data: {
        ...withSeq(seq),
        attempt: state.attempts + 1,
        attemptId: cmd.attemptId,
        workerId: cmd.workerId,
        startedAt: iso(cmd.now),
        leaseExpiresAt: iso(leaseExpiresAt),
        deadlineAt: deadlineAt === null ? null : iso(deadlineAt),
        retryPolicy: cmd.retryPolicy,
        ...(cmd.pollId !== undefined ? { pollId: cmd.pollId } : {}),
      },
    },
  ];
}

/**
 * Extends the lease of the current attempt. To keep streams short the extension is recorded
 * only once less than half of the lease is left.
 */
export function decideHeartbeat(
  state: AttemptState,
  cmd: { attemptId: string; now: number; leaseMs: number },
  seq?: number,
): AttemptEvent[] {
  if (state.status !== 'started' || state.attemptId !== cmd.attemptId) return [];
  const target = Math.min(cmd.now + cmd.leaseMs, state.deadlineAt ?? Number.MAX_SAFE_INTEGER);
  if (!leaseWorthExtending(state.leaseExpiresAt, cmd.now, cmd.leaseMs) || target <= state.leaseExpiresAt) return [];
  return [{ type: 'TaskLeaseExtended', data: { ...withSeq(seq), attemptId: cmd.attemptId, leaseExpiresAt: iso(target) } }];
}

/** A heartbeat extends a lease (and records it) only once half of it is gone: short work records nothing. */
export const leaseWorthExtending = (leaseExpiresAt: number, now: number, leaseMs: number): boolean => leaseExpiresAt - now <= leaseMs / 2;

/** True when the attempt is still the one the caller holds. */
export const holdsAttempt = (state: AttemptState, attemptId: string): boolean =>
  state.status === 'started' && state.attemptId === attemptId;

export function decideComplete(
  state: AttemptState,
  cmd: { attemptId: string; result: Json },
  seq?: number,
): AttemptEvent[] {
  // The same report again (a worker retrying after a lost answer): already applied, nothing to record.
  if (state.status === 'completed' && state.attemptId === cmd.attemptId) return [];
  if (!holdsAttempt(state, cmd.attemptId)) return ignoreLate(state, cmd.attemptId, seq);
  return [{ type: 'TaskCompleted', data: { ...withSeq(seq), attemptId: cmd.attemptId, result: cmd.result } }];
}

export function decideFail(
  state: AttemptState,
  cmd: { attemptId: string; error: TaskError; now: number; reason?: AttemptFailureReason },
  seq?: number,
): AttemptEvent[] {
  if ((state.status === 'pending' || state.status === 'failed') && state.lastAttemptId === cmd.attemptId) return [];
  if (state.status !== 'started' || state.attemptId !== cmd.attemptId) return ignoreLate(state, cmd.attemptId, seq);
  const policy = state.retryPolicy;
  const exhausted = state.attempts >= policy.maxAttempts || cmd.error.nonRetryable === true;
  const delay = cmd.error.retryAfterMs ?? backoffDelay(policy, state.attempts);
  const failed: AttemptEvent = {
    type: 'TaskAttemptFailed',
    data: {
      ...withSeq(seq),
      attemptId: cmd.attemptId,
      attempt: state.attempts,
      reason: cmd.reason ?? 'error',
      error: cmd.error,
      retryAt: exhausted ? null : iso(cmd.now + delay),
    },
  };
  if (!exhausted) return [failed];
  return [failed, { type: 'TaskFailed', data: { ...withSeq(seq), attempts: state.attempts, error: cmd.error } }];
}

/** The worker gives the current attempt back unfinished: claimable again at once, not counted. */
export function decideRelease(state: AttemptState, cmd: { attemptId: string; now: number }, seq?: number): AttemptEvent[] {
  if (state.status !== 'started' || state.attemptId !== cmd.attemptId) return [];
  return [
    {
      type: 'TaskAttemptFailed',
      data: {
        ...withSeq(seq),
        attemptId: cmd.attemptId,
        attempt: state.attempts,
        reason: 'released',
        error: { message: `attempt ${state.attempts} given back unfinished by worker ${state.workerId} (shutting down, or told to stop)`, name: 'ReleasedError' },
        retryAt: iso(cmd.now),
        released: true,
      },
    },
  ];
}

/** Fails the current attempt when its lease or its start-to-close deadline has passed. */
export function decideExpiry(state: AttemptState, now: number, seq?: number): AttemptEvent[] {
  if (state.status !== 'started' || state.leaseExpiresAt > now) return [];
  const timedOut = state.deadlineAt !== null && state.deadlineAt <= now;
  const reason: AttemptFailureReason = timedOut ? 'timeout' : 'lease_expired';
  const message = timedOut
    ? `attempt ${state.attempts} exceeded its start-to-close timeout`
    : `attempt ${state.attempts} lost its lease (no heartbeat from worker ${state.workerId})`;
  return decideFail(state, { attemptId: state.attemptId, now, reason, error: { message, name: timedOut ? 'TimeoutError' : 'LeaseExpiredError' } }, seq);
}

/**
 * A report on an attempt that is no longer current: recorded once (`TaskResultIgnored`, for the
 * audit), nothing the second time, and refused (NOT_FOUND, nothing recorded) for an attempt this
 * task never issued.
 */
function ignoreLate(state: AttemptState, attemptId: string, seq: number | undefined): AttemptEvent[] {
  if (!issued(state, attemptId)) throw new NotFoundError('task attempt', attemptId);
  if (state.ignored?.includes(attemptId)) return [];
  return [{ type: 'TaskResultIgnored', data: { ...withSeq(seq), attemptId, reason: staleReason(state) } }];
}

/** When this attempt next needs the clock: a lease to expire. */
export const attemptDueAt = (state: AttemptState): number | undefined =>
  state.status === 'started' ? state.leaseExpiresAt : undefined;

function staleReason(state: AttemptState): string {
  switch (state.status) {
    case 'started':
      return 'superseded by a later attempt';
    case 'pending':
      return 'the attempt lapsed before it reported';
    case 'completed':
      return 'the task had already completed';
    case 'failed':
      return 'the task had already failed';
  }
}

const withSeq = (seq: number | undefined) => (seq === undefined ? {} : { seq });
export const iso = (ms: number): string => new Date(ms).toISOString();
