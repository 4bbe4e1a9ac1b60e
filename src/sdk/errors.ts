/**
 * The two error kinds task code can throw on purpose. Anything else a task throws is retried
 * by its retry policy.
 */

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
  }
}
