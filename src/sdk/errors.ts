/**
 * The two error kinds task code can throw on purpose. Anything else a task throws is retried
 * by its retry policy.
 */

/**
 * Marks `error` as an instance of the SDK class `brand` names, under a key shared by every copy of
 * the SDK (`Symbol.for`): `baton worker` and the service's example worker run their own copy,
 * while the module they load imports `@baton/sdk` (another copy, or the user's tarball), and an
 * `instanceof` of one copy's class was false for the other's errors (a NonRetryableError retried,
 * a TaskFailedError not recognised).
 */
function brand(error: Error, key: symbol): void {
  Object.defineProperty(error, key, { value: true });
}

/** `instanceof` for a branded class: any error carrying its brand, from any copy of the SDK; a subclass checks as usual. */
function branded(cls: abstract new (...args: never[]) => unknown, base: unknown, key: symbol, value: unknown): boolean {
  if (cls !== base) return Function.prototype[Symbol.hasInstance].call(cls, value);
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[key] === true;
}

const NON_RETRYABLE = Symbol.for('baton.sdk.NonRetryableError');
const RETRYABLE = Symbol.for('baton.sdk.RetryableError');
const TASK_FAILED = Symbol.for('baton.sdk.TaskFailedError');
const NON_DETERMINISM = Symbol.for('baton.sdk.NonDeterminismError');

/**
 * Fails the task at once: no further attempts, whatever the retry policy says.
 * @example
 * if (!user) throw new NonRetryableError(`no user ${id}`);
 */
export class NonRetryableError extends Error {
  /**
   * Makes the error; throw it from a task (or a step) to fail it without retrying.
   * @param message - Why the task failed: recorded as its error (and the workflow's
   *   {@link TaskFailedError} message).
   * @param options - `cause`: the underlying error, kept as `error.cause` (not sent to the service).
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
    brand(this, NON_RETRYABLE);
  }

  /** True for a NonRetryableError from any copy of the SDK (a module's `@baton/sdk` and the worker's own). */
  static [Symbol.hasInstance](value: unknown): boolean {
    return branded(this, NonRetryableError, NON_RETRYABLE, value);
  }
}

/**
 * Fails this attempt and asks for the next one after `retryAfterMs` (instead of the policy's
 * backoff). The policy's `maxAttempts` still applies.
 * @example
 * if (response.status === 429) throw new RetryableError('rate limited', { retryAfterMs: 30_000 });
 */
export class RetryableError extends Error {
  /**
   * Milliseconds to wait before the next attempt; undefined when none was given (the retry
   * policy's backoff then applies).
   */
  readonly retryAfterMs: number | undefined;
  /**
   * Makes the error; throw it from a task (or a step) to retry after a delay of your choosing.
   * @param message - Why this attempt failed, recorded with the attempt.
   * @param options - `retryAfterMs`: delay before the next attempt, in milliseconds (default: the
   *   retry policy's backoff; a negative one is 0, one past 2^31 - 1 ms (about 24.8 days, what the
   *   worker protocol carries) is that); `cause`: the
   *   underlying error, kept as `error.cause`.
   */
  constructor(message: string, options?: { retryAfterMs?: number; cause?: unknown }) {
    super(message, { cause: options?.cause });
    this.name = 'RetryableError';
    this.retryAfterMs = options?.retryAfterMs;
    brand(this, RETRYABLE);
  }

  /** True for a RetryableError from any copy of the SDK (a module's `@baton/sdk` and the worker's own). */
  static [Symbol.hasInstance](value: unknown): boolean {
    return branded(this, RetryableError, RETRYABLE, value);
  }
}

/** A task awaited with `ctx.run` (or a child awaited with `ctx.workflow`) failed for good. */
export class TaskFailedError extends Error {
  /**
   * Made by the SDK when it hands a recorded failure back to workflow code; user code catches it.
   * @param message - The last attempt's error message, as recorded.
   * @param errorName - The `name` of the error the task threw (e.g. `NonRetryableError`), when recorded.
   */
  constructor(
    message: string,
    /** The `name` of the error the task (or child, or step) threw, e.g. `TypeError`; undefined when none was recorded. */
    readonly errorName?: string,
  ) {
    super(message);
    this.name = 'TaskFailedError';
    brand(this, TASK_FAILED);
  }

  /** True for a TaskFailedError from any copy of the SDK (the worker's own, handed to code importing `@baton/sdk`). */
  static [Symbol.hasInstance](value: unknown): boolean {
    return branded(this, TaskFailedError, TASK_FAILED, value);
  }
}

/**
 * The workflow code did not do what its recorded history says it did at this point (code
 * changed in a way that breaks replay). The decision is reported failed with code
 * `NON_DETERMINISTIC`; the workflow stays where it was until fixed code replays it.
 */
export class NonDeterminismError extends Error {
  /** The failure code the worker reports for the decision (`DecisionFailed.code` in the history). */
  readonly code = 'NON_DETERMINISTIC';
  /**
   * Thrown by the SDK's replay, not by user code.
   * @param message - What the code produced and what the history has instead.
   * @param historyPosition - Revision of the history event at which they differ (null when unknown).
   */
  constructor(
    message: string,
    /** Revision of the history event at which the code and the history differ; null when unknown. */
    readonly historyPosition: number | null,
  ) {
    super(message);
    this.name = 'NonDeterminismError';
    brand(this, NON_DETERMINISM);
  }

  /** True for a NonDeterminismError from any copy of the SDK. */
  static [Symbol.hasInstance](value: unknown): boolean {
    return branded(this, NonDeterminismError, NON_DETERMINISM, value);
  }
}
