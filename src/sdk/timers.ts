/**
 * Longest a wait sleeps before looking at the wall clock again: Node timers count monotonic time
 * (and wait at most 2^31 - 1 ms, about 24.8 days; past it they fire at once), while the time
 * waited for is a wall time, as the service's deadline for the same attempt is. A step of the
 * wall clock (the host resumed from suspend, NTP) delays a wait by at most this.
 */
const LONGEST_TIMER_MS = 10_000;

/**
 * Calls `fn` after `ms`, however long (a task's or a step's timeout of 30 days must not fire at
 * once, as `setTimeout` past ~24.8 days does); answers the function that cancels it.
 * @internal
 */
export function after(ms: number, fn: () => void): () => void {
  const at = Date.now() + ms;
  let timer: ReturnType<typeof setTimeout>;
  const arm = () => {
    const delay = at - Date.now();
    // The last stretch rings `fn` itself, at its time (checked again: the clock may have stepped back).
    timer = delay > LONGEST_TIMER_MS ? setTimeout(arm, LONGEST_TIMER_MS) : setTimeout(() => (Date.now() >= at ? fn() : arm()), Math.max(0, delay));
  };
  arm();
  return () => clearTimeout(timer);
}

/** Waits `ms`, however long. @internal */
export const delay = (ms: number): Promise<void> => new Promise((resolve) => after(ms, resolve));
