export interface WaitForOptions {
  /** Give up after this long. */
  timeoutMs?: number;
  /** Pause between two checks. */
  intervalMs?: number;
  /** Says what was awaited, in the timeout error. */
  description?: string;
}

/**
 * Polls `condition` until it returns a truthy value (which is returned) or the deadline passes.
 * A condition that throws counts as not met; its last error is reported on timeout.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { timeoutMs = 5_000, intervalMs = 10, description = 'condition' }: WaitForOptions = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const detail = lastError instanceof Error ? `; last error: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${description}${detail}`, { cause: lastError });
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
