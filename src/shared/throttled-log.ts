import type { Clock } from './clock.js';

export interface ThrottledLogOptions {
  /** At most one line per key this often. */
  intervalMs: number;
  /** Keys remembered; past it the one refused longest ago is forgotten. */
  maxKeys: number;
  /** Lines per interval over all keys: a client that never repeats a key cannot flood the log either. */
  maxLinesPerInterval: number;
}

interface KeyState {
  /** When this key's last line was written; null while none was (the line budget was spent). */
  loggedAt: number | null;
  /** Occurrences since that line, not yet in any line. */
  unlogged: number;
}

/**
 * A log line per key at most once an interval, each carrying how many times the key occurred
 * since its previous line, so that something repeated a thousand times a second (a client
 * hammering with a bad token) costs one line a minute and still shows how often it happened.
 * Memory is bounded by `maxKeys` (least recently seen dropped first); time comes from the clock.
 */
export class ThrottledLog {
  private readonly keys = new Map<string, KeyState>();
  private windowStart = Number.NEGATIVE_INFINITY;
  private linesInWindow = 0;
  private budgetNoticed = false;

  constructor(
    private readonly clock: Clock,
    private readonly write: (line: string) => void,
    private readonly options: ThrottledLogOptions,
  ) {}

  /**
   * Notes one occurrence of `key`; writes `line(count, sinceMs)` when the key's interval has run:
   * `count` occurrences since its last line, this one included, and `sinceMs` since that line
   * (null for the key's first line).
   */
  note(key: string, line: (count: number, sinceMs: number | null) => string): void {
    const now = this.clock.now();
    const state = this.keys.get(key) ?? { loggedAt: null, unlogged: 0 };
    // Least recently seen first: a key seen again moves to the end.
    this.keys.delete(key);
    this.keys.set(key, state);
    if (this.keys.size > this.options.maxKeys) this.keys.delete(this.keys.keys().next().value!);
    state.unlogged++;
    if (state.loggedAt !== null && now - state.loggedAt < this.options.intervalMs) return;
    if (now - this.windowStart >= this.options.intervalMs) {
      this.windowStart = now;
      this.linesInWindow = 0;
      this.budgetNoticed = false;
    }
    if (this.linesInWindow >= this.options.maxLinesPerInterval) {
      if (!this.budgetNoticed) {
        this.budgetNoticed = true;
        this.write(`(${this.options.maxLinesPerInterval} lines of this kind in ${this.options.intervalMs / 1000} s; more are left out until the next interval and counted in their own next line)`);
      }
      return;
    }
    this.linesInWindow++;
    this.write(line(state.unlogged, state.loggedAt === null ? null : now - state.loggedAt));
    state.loggedAt = now;
    state.unlogged = 0;
  }

  /** Keys remembered (tests). */
  get size(): number {
    return this.keys.size;
  }
}
