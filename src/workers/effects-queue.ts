/** A first-in first-out queue on an array: O(1) amortised push and shift, no per-item allocation. */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  get first(): T | undefined {
    return this.items[this.head];
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    // Drop the consumed front once it is half the array (each item is moved at most once more).
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/**
 * One event whose effect is held: queued in its app's queue, then running, then finished. A
 * running effect whose attempt failed may back off (`suspend`): it keeps its place for its app's
 * barriers and for the checkpoint, but not its slot, until `resume` asks for one again.
 */
export interface HeldEffect<T> {
  readonly position: bigint;
  readonly app: string;
  /** Waits for every earlier effect of its app, and holds every later one until it is finished. */
  readonly barrier: boolean;
  readonly bytes: number;
  readonly item: T;
  finished: boolean;
  /** Failed attempts so far (each `suspend` counts one). */
  attempts: number;
  /** Neighbours among the held effects, in position order (the queue's own list). */
  older?: HeldEffect<T>;
  newer?: HeldEffect<T>;
}

interface AppQueue<T> {
  readonly app: string;
  readonly queued: Fifo<HeldEffect<T>>;
  /** Started and not finished: running, or backing off (a barrier waits for all of them). */
  running: number;
  /** Of those, retries holding a slot or about to (handed to `retryReady`): at most maxRetryingPerApp. */
  retrying: number;
  /** Retries whose delay is over, waiting until fewer than maxRetryingPerApp of the app's retries hold a slot. */
  readonly parked: Fifo<HeldEffect<T>>;
  barrierRunning: boolean;
  /** Bytes of its held effects. */
  bytes: number;
  /** Of its held effects, those backing off (suspended, not yet given a slot again), and their bytes. */
  backingOff: number;
  backingOffBytes: number;
  /** In the ring of apps whose next effect may start. */
  inRing: boolean;
}

export interface EffectsQueueLimits {
  /** Effects running at once, all apps together. */
  maxRunning: number;
  /** Effects held (queued or running), all apps together: `full` past this... */
  maxHeldEvents: number;
  /** ...or past this many bytes of their events. */
  maxHeldBytes: number;
  /**
   * Retries of one app attempted at once, at most: an app whose effects all fail (one fault for
   * every event of its data) retries them this many at a time, so its retries do not take every
   * slot each time their delays end together. Its other effects still start as usual.
   */
  maxRetryingPerApp: number;
}

/**
 * The effects reactor's scheduling, apart from carrying effects out: a FIFO queue per app, and
 * the next effect to start taken round robin from a ring of the apps whose next effect may start,
 * so one app's backlog does not hold another app's effects. Within an app, a barrier (a
 * `ControlRequested`) starts once every earlier effect of its app is finished, and later ones
 * start once it is finished; other apps go on. `oldestUnfinished` is where the checkpoint must
 * stay before: the oldest effect, of any app, not finished (queued, running or backing off).
 *
 * An effect that failed backs off without its slot (`suspend`), so effects that keep failing do not
 * take the slots of the others, and its app's later effects go on; once its delay is over
 * (`resume`), it takes the next free slot before any queued effect, but no more than
 * `maxRetryingPerApp` retries of one app are attempted at once (the others wait for one of them to
 * end, in order). An effect that fails for good stays held, so what the read-ahead holds
 * (`maxHeldEvents`) bounds how many of them the reactor can carry before its reader waits.
 *
 * Every operation is O(1) amortised, but `add` of an effect older than effects already held (an
 * app's effects read again from the log), which walks past them once per such run of adds:
 * nothing grows with the number of apps.
 */
export class EffectsQueue<T> {
  private readonly apps = new Map<string, AppQueue<T>>();
  private readonly ring = new Fifo<AppQueue<T>>();
  /**
   * The held effects (queued, running or backing off) in position order: a doubly linked list, so
   * that a finished effect leaves it at once wherever it is. (A queue that dropped
   * finished effects only from its front grew without bound behind one effect retried for long.)
   */
  private oldest: HeldEffect<T> | undefined;
  private newest: HeldEffect<T> | undefined;
  private heldCount = 0;
  private heldBytesTotal = 0;
  private runningCount = 0;
  private backingOffCount = 0;
  /** Effects whose delay is over, waiting for a slot (served before queued effects). */
  private readonly retryReady = new Fifo<HeldEffect<T>>();
  /** The last effect added behind newer ones (see `add`). */
  private insertHint: HeldEffect<T> | undefined;

  constructor(private readonly limits: EffectsQueueLimits) {}

  get running(): number {
    return this.runningCount;
  }

  /** Effects backing off after a failed attempt, all apps together (holding no slot). */
  get backingOff(): number {
    return this.backingOffCount;
  }

  get held(): number {
    return this.heldCount;
  }

  get heldBytes(): number {
    return this.heldBytesTotal;
  }

  /** Nothing more should be added until an effect finishes (an empty queue always takes one, however large). */
  get full(): boolean {
    return this.heldCount > 0 && (this.heldCount >= this.limits.maxHeldEvents || this.heldBytesTotal >= this.limits.maxHeldBytes);
  }

  /**
   * Queues an effect; `position` must be greater than every one of its app added before. One older
   * than effects of other apps held (read again from the log) costs a walk past the held effects
   * between the last one added that way and it: O(held) once per read again, then O(1) amortised.
   */
  add(position: bigint, app: string, barrier: boolean, bytes: number, item: T): HeldEffect<T> {
    const effect: HeldEffect<T> = { position, app, barrier, bytes, item, finished: false, attempts: 0 };
    let queue = this.apps.get(app);
    if (!queue) {
      queue = { app, queued: new Fifo(), running: 0, retrying: 0, parked: new Fifo(), barrierRunning: false, bytes: 0, backingOff: 0, backingOffBytes: 0, inRing: false };
      this.apps.set(app, queue);
    }
    queue.queued.push(effect);
    queue.bytes += bytes;
    // In position order. An app's events read again from the log (the reactor's refill) come after
    // newer events of other apps: they go in after the newest held effect older than them, found
    // from the last one put in out of order (consecutive ones of a refill), else from the oldest.
    let after = this.newest;
    if (after && after.position > position) {
      const hint = this.insertHint;
      after = hint && !hint.finished && hint.position < position ? hint : undefined;
      let next = after ? after.newer : this.oldest;
      while (next && next.position < position) {
        after = next;
        next = next.newer;
      }
      this.insertHint = effect;
    }
    effect.older = after;
    effect.newer = after ? after.newer : this.oldest;
    if (effect.older) effect.older.newer = effect;
    else this.oldest = effect;
    if (effect.newer) effect.newer.older = effect;
    else this.newest = effect;
    this.heldCount++;
    this.heldBytesTotal += bytes;
    this.enterRing(queue);
    return effect;
  }

  /**
   * The next effect to start (counted as running): a resumed retry first, else round robin across
   * apps; undefined when none may start now.
   */
  next(): HeldEffect<T> | undefined {
    if (this.runningCount >= this.limits.maxRunning) return undefined;
    const retry = this.retryReady.shift();
    if (retry) {
      const queue = this.apps.get(retry.app)!;
      queue.backingOff--;
      queue.backingOffBytes -= retry.bytes;
      this.backingOffCount--;
      this.runningCount++;
      return retry;
    }
    for (;;) {
      const queue = this.ring.shift();
      if (!queue) return undefined;
      queue.inRing = false;
      if (!this.mayStart(queue)) continue; // defensive: the ring holds only apps that may start
      const effect = queue.queued.shift()!;
      queue.running++;
      if (effect.barrier) queue.barrierRunning = true;
      this.runningCount++;
      this.enterRing(queue);
      return effect;
    }
  }

  /** A running effect's attempt failed: it backs off, giving up its slot but not its place. */
  suspend(effect: HeldEffect<T>): void {
    if (effect.finished) return;
    const queue = this.apps.get(effect.app)!;
    if (effect.attempts++ > 0) this.retryEnded(queue);
    queue.backingOff++;
    queue.backingOffBytes += effect.bytes;
    this.runningCount--;
    this.backingOffCount++;
  }

  /**
   * A suspended effect's delay is over: it takes the next free slot (see `next`), or, when
   * `maxRetryingPerApp` of its app's retries are under way, the one after one of them ends.
   */
  resume(effect: HeldEffect<T>): void {
    if (effect.finished) return;
    const queue = this.apps.get(effect.app)!;
    if (queue.retrying >= this.limits.maxRetryingPerApp) {
      queue.parked.push(effect);
      return;
    }
    queue.retrying++;
    this.retryReady.push(effect);
  }

  /** Marks a running effect finished (carried out, or skipped for good). */
  finish(effect: HeldEffect<T>): void {
    if (effect.finished) return;
    effect.finished = true;
    this.runningCount--;
    this.heldCount--;
    this.heldBytesTotal -= effect.bytes;
    const queue = this.apps.get(effect.app)!;
    queue.running--;
    queue.bytes -= effect.bytes;
    if (effect.attempts > 0) this.retryEnded(queue);
    if (effect.barrier) queue.barrierRunning = false;
    if (queue.running === 0 && queue.queued.size === 0) this.apps.delete(effect.app);
    else this.enterRing(queue);
    if (effect.older) effect.older.newer = effect.newer;
    else this.oldest = effect.newer;
    if (effect.newer) effect.newer.older = effect.older;
    else this.newest = effect.older;
    effect.older = effect.newer = undefined;
    if (this.insertHint === effect) this.insertHint = undefined;
  }

  /** Effects of `app` held: queued, running or backing off. */
  heldOf(app: string): number {
    const queue = this.apps.get(app);
    return queue ? queue.queued.size + queue.running : 0;
  }

  /** Effects of `app` backing off, and their bytes (held, but they may fail for good). */
  backingOffOf(app: string): { count: number; bytes: number } {
    const queue = this.apps.get(app);
    return queue ? { count: queue.backingOff, bytes: queue.backingOffBytes } : { count: 0, bytes: 0 };
  }

  /** Bytes of the effects of `app` held. */
  heldBytesOf(app: string): number {
    return this.apps.get(app)?.bytes ?? 0;
  }

  /** Position of the oldest effect not finished (queued, running or backing off), of any app (undefined when none). */
  oldestUnfinished(): bigint | undefined {
    return this.oldest?.position;
  }

  /** One of the app's retries ended (carried out, or failed again): the next parked one may go. */
  private retryEnded(queue: AppQueue<T>): void {
    queue.retrying--;
    const parked = queue.parked.shift();
    if (parked) {
      queue.retrying++;
      this.retryReady.push(parked);
    }
  }

  private mayStart(queue: AppQueue<T>): boolean {
    const head = queue.queued.first;
    if (!head || queue.barrierRunning) return false;
    return !head.barrier || queue.running === 0;
  }

  private enterRing(queue: AppQueue<T>): void {
    if (!queue.inRing && this.mayStart(queue)) {
      queue.inRing = true;
      this.ring.push(queue);
    }
  }
}
