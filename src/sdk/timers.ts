/** Node timers wait at most 2^31 - 1 ms (about 24.8 days); past it they fire at once. */
const LONGEST_TIMER_MS = 2 ** 30;

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
    timer = setTimeout(delay > LONGEST_TIMER_MS ? arm : fn, Math.max(0, Math.min(delay, LONGEST_TIMER_MS)));
  };
  arm();
  return () => clearTimeout(timer);
}

/** Waits `ms`, however long. @internal */
export const delay = (ms: number): Promise<void> => new Promise((resolve) => after(ms, resolve));
