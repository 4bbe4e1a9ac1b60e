/** The least size at which `overgrown` is true. */
const MIN_RETAIN_AT = 1024;

/** A binary min-heap keyed by a number; the engine's due times. */
export class MinHeap<T> {
  private readonly items: Array<{ key: number; value: T }> = [];
  /** The size past which `overgrown` says to `retain` (twice the size after the last, at least 1,024). */
  private retainAt = MIN_RETAIN_AT;

  get size(): number {
    return this.items.length;
  }

  /**
   * Whether the heap has doubled since its last `retain` (and holds over 1,024 entries): the
   * moment for an owner whose entries go stale to drop them, at O(1) a push amortized.
   */
  get overgrown(): boolean {
    return this.items.length > this.retainAt;
  }

  peek(): { key: number; value: T } | undefined {
    return this.items[0];
  }

  push(key: number, value: T): void {
    const items = this.items;
    items.push({ key, value });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent].key <= items[i].key) break;
      [items[parent], items[i]] = [items[i], items[parent]];
      i = parent;
    }
  }

  /**
   * Keeps only the entries `keep` accepts, in heap order again (O(n)). A heap whose entries go
   * stale (their item was rescheduled or dropped) and are skipped only when they reach the top
   * calls it when `overgrown`, so it holds O(live) entries whatever its history: a canceled
   * 30-day timer left its entry for 30 days.
   */
  retain(keep: (key: number, value: T) => boolean): void {
    const items = this.items;
    let n = 0;
    for (const item of items) if (keep(item.key, item.value)) items[n++] = item;
    items.length = n;
    for (let i = (n >> 1) - 1; i >= 0; i--) this.siftDown(i);
    this.retainAt = Math.max(MIN_RETAIN_AT, 2 * n);
  }

  pop(): { key: number; value: T } | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last) {
      items[0] = last;
      this.siftDown(0);
    }
    return top;
  }

  private siftDown(from: number): void {
    const items = this.items;
    for (let i = from; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let smallest = i;
      if (l < items.length && items[l].key < items[smallest].key) smallest = l;
      if (r < items.length && items[r].key < items[smallest].key) smallest = r;
      if (smallest === i) break;
      [items[smallest], items[i]] = [items[i], items[smallest]];
      i = smallest;
    }
  }
}
