/**
 * Time as a dependency: the engine and the scheduler read the time and wait through a Clock,
 * so tests can drive time instead of sleeping.
 */
export interface Clock {
  now(): number;
  /** Calls `fn` once `at` (epoch ms) has passed; returns a cancel function. */
  at(at: number, fn: () => void): () => void;
}

/** The machine's clock. Long waits are chunked: Node timers overflow past ~24.8 days. */
export const systemClock: Clock = {
  now: () => Date.now(),
  at(at, fn) {
    let timer: NodeJS.Timeout;
    const arm = () => {
      const delay = at - Date.now();
      timer = setTimeout(delay > 2 ** 30 ? arm : fn, Math.max(0, Math.min(delay, 2 ** 30)));
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
