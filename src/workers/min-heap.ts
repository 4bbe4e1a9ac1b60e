/** A binary min-heap keyed by a number; the engine's due times. */
export class MinHeap<T> {
  private readonly items: Array<{ key: number; value: T }> = [];

  get size(): number {
    return this.items.length;
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
   * calls it once stale entries outnumber live ones, so it holds O(live) entries whatever its
   * history: a canceled 30-day timer left its entry for 30 days.
   */
  retain(keep: (key: number, value: T) => boolean): void {
    const items = this.items;
    let n = 0;
    for (const item of items) if (keep(item.key, item.value)) items[n++] = item;
    items.length = n;
    for (let i = (n >> 1) - 1; i >= 0; i--) this.siftDown(i);
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
