import { Inject, Injectable } from '@nestjs/common';
import { StoreUnavailable } from '../shared/errors.js';
import { EVENT_STORE, type EventStore } from './event-store.port.js';
import { ProjectionRunner } from './projection-runner.js';
import { notePosition } from './request-position.js';

const DEADLINE_MS = 10_000;
/** How long `upToStream` waits for the store to answer its read (the token check's, on every request). */
const STREAM_READ_TIMEOUT_MS = 2_000;

/** The store did not answer `upToStream`'s read in time. */
export class StreamReadTimeout extends Error {}

/**
 * Read-your-writes across instances. A read that decides what a mutation acts on (a selector,
 * a token lookup that missed) and the queries first bring this instance's read models up to the
 * store's head: whatever any instance acknowledged before the read began is then visible.
 * Already there, it costs one head read (`SELECT max(position)` on SQLite).
 */
@Injectable()
export class ReadFence {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly projections: ProjectionRunner,
  ) {}

  /** Waits until the read models include the store's head (and `min`); returns the position read to. */
  async upToHead(min?: bigint): Promise<bigint> {
    const head = (await this.store.headPosition()) ?? -1n;
    return this.atLeast(min !== undefined && min > head ? min : head);
  }

  /**
   * A client's `x-baton-min-position`: waits as `atLeast` does, but answers null at once, without
   * waiting, when the store has no such position yet (no write ever answered it, so no read can
   * be owed it). The head is read only when the read models are behind the position.
   */
  async clientPosition(position: bigint): Promise<bigint | null> {
    if (position > this.projections.checkpoint && position > ((await this.store.headPosition()) ?? -1n)) return null;
    return this.atLeast(position);
  }

  /**
   * Waits until the read models include the newest event of one stream: one read of its last
   * event, and a wait only when this instance has not applied it yet. Returns that event's
   * position (-1 for an empty stream). A read the store does not answer within `readTimeoutMs`
   * rejects with the store's error or `StreamReadTimeout` (not `StoreUnavailable`, which is a wait
   * for the read models past the deadline).
   */
  async upToStream(streamId: string, readTimeoutMs = STREAM_READ_TIMEOUT_MS): Promise<bigint> {
    let timer: NodeJS.Timeout | undefined;
    const read = this.store.readStream(streamId, { direction: 'backwards', maxCount: 1 });
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StreamReadTimeout(`no answer to a read of ${streamId} within ${readTimeoutMs} ms`)), readTimeoutMs);
    });
    let last: Awaited<typeof read>[number] | undefined;
    try {
      [last] = await Promise.race([read, timeout]);
    } finally {
      clearTimeout(timer);
      read.catch(() => undefined);
    }
    if (!last) return -1n;
    if (last.position > this.projections.checkpoint) await this.atLeast(last.position);
    return last.position;
  }

  /** Waits until the read models include `position`. */
  async atLeast(position: bigint): Promise<bigint> {
    if (position > this.projections.checkpoint) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new StoreUnavailable(`read models did not reach position ${position} within ${DEADLINE_MS / 1000} s (at ${this.projections.checkpoint}; ${this.projections.notReadyReason ?? 'behind'})`)),
          DEADLINE_MS,
        );
      });
      try {
        await Promise.race([this.projections.waitFor(position), timeout]);
      } finally {
        clearTimeout(timer);
      }
    }
    const at = this.projections.checkpoint;
    notePosition(at);
    return at;
  }

  get position(): bigint {
    return this.projections.checkpoint;
  }
}
