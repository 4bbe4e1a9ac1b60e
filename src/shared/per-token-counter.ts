/**
 * How many of something each token (or other key) holds right now, against one limit: long polls, say.
 * A key is forgotten when its count falls back to zero, so memory follows what is in progress,
 * not every key ever seen.
 */
export class PerTokenCounter {
  private readonly held = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** Takes one for `key`; false (and nothing taken) when `key` already holds `limit`. */
  take(key: string): boolean {
    const count = this.held.get(key) ?? 0;
    if (count >= this.limit) return false;
    this.held.set(key, count + 1);
    return true;
  }

  /** Gives back one taken by `take`. */
  release(key: string): void {
    const left = (this.held.get(key) ?? 1) - 1;
    if (left > 0) this.held.set(key, left);
    else this.held.delete(key);
  }

  count(key: string): number {
    return this.held.get(key) ?? 0;
  }

  /** Keys holding at least one. */
  get size(): number {
    return this.held.size;
  }
}
