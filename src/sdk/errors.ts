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
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options?: { retryAfterMs?: number; cause?: unknown }) {
    super(message, { cause: options?.cause });
    this.name = 'RetryableError';
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** A task awaited with `ctx.run` (or a child awaited with `ctx.workflow`) failed for good. */
export class TaskFailedError extends Error {
  constructor(
    message: string,
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
  readonly code = 'NON_DETERMINISTIC';
  constructor(
    message: string,
    readonly historyPosition: number | null,
  ) {
    super(message);
    this.name = 'NonDeterminismError';
  }
}
