/** How a task (or an inline step) is retried, in milliseconds: what a worker declares for a task and the service records. */
export interface RetryPolicyMs {
  /** Total attempts, the first included. */
  maxAttempts: number;
  initialDelayMs: number;
  backoffFactor: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicyMs = {
  maxAttempts: 3,
  initialDelayMs: 1000,
  backoffFactor: 2,
  maxDelayMs: 60_000,
};

/** The wait before the attempt after `attempt` (1-based): exponential, capped. */
export function backoffDelay(policy: RetryPolicyMs, attempt: number): number {
  // No delay grows from 0 (0 * Infinity is NaN once the factor's power overflows a double).
  if (policy.initialDelayMs <= 0) return 0;
  return Math.min(policy.initialDelayMs * policy.backoffFactor ** Math.max(0, attempt - 1), policy.maxDelayMs);
}
