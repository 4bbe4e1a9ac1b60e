/**
 * Time as a dependency: the engine and the scheduler read the time and wait through a Clock,
 * so tests can drive time instead of sleeping.
 */
export interface Clock {
  now(): number;
  /** Calls `fn` once `at` (epoch ms) has passed; returns a cancel function. */
  at(at: number, fn: () => void): () => void;
}

/**
 * Longest a wait sleeps before looking at the wall clock again. Node's timers count monotonic
 * time while `at` is a wall time: armed for the whole delay, a due time that a step of the wall
 * clock (NTP stepping a drifting clock, a host or VM resumed from suspend) brought forward rang
 * only when the stale delay ran out, an hour or days late (found in review), and a step back
 * rang it early. One wake-up per armed wait every 10 s costs nothing (the engine and the
 * scheduler each arm one).
 */
export const WALL_CLOCK_CHECK_MS = 10_000;

/** The machine's clock. Waits are chunked: Node timers overflow past ~24.8 days, and the wall clock can step. */
export const systemClock: Clock = {
  now: () => Date.now(),
  at(at, fn) {
    let timer: NodeJS.Timeout;
    const arm = () => {
      const delay = at - Date.now();
      // The last stretch rings `fn` itself, at its time (checked again: the clock may have stepped back).
      timer = delay > WALL_CLOCK_CHECK_MS ? setTimeout(arm, WALL_CLOCK_CHECK_MS) : setTimeout(() => (Date.now() >= at ? fn() : arm()), Math.max(0, delay));
      timer.unref?.();
    };
    arm();
    return () => clearTimeout(timer);
  },
};

/** A clock that only moves when told to (tests). */
export class ManualClock implements Clock {
  private timers: Array<{ at: number; fn: () => void }> = [];
  constructor(private current = 0) {}
  now(): number {
    return this.current;
  }
  at(at: number, fn: () => void): () => void {
    const timer = { at, fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((t) => t !== timer));
  }
  /** Moves time forward, firing due timers in time order. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = Math.max(this.current, due.at);
      due.fn();
    }
    this.current = target;
  }
}

export const CLOCK = Symbol('CLOCK');
