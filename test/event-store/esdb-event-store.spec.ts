import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { AllStreamResolvedEvent, EventStoreDBClient, Position } from '@eventstore/db-client';
import { StoreUnavailableError } from '../../src/event-store/event-store.port.js';
import { EsdbEventStore } from '../../src/event-store/esdb/esdb-event-store.js';

/*
 * The EventStoreDB adapter against a stubbed client (`@eventstore/db-client`'s own API, not
 * Baton's): what can be shown without a server. The contract against a real server is
 * esdb-event-store.e2e-spec.ts.
 */

interface StubEvent {
  streamId: string;
  type: string;
  commit: bigint;
}

/** A `$all` log held in memory, answering `readAll` as the server does (a position is inclusive forwards, exclusive backwards: AllReader; see test/support/fake-esdb.ts). */
class StubClient {
  readonly reads: Array<{ direction: string; maxCount: number }> = [];
  constructor(readonly log: StubEvent[]) {}

  readAll(options: { direction: string; fromPosition: Position | 'start' | 'end'; maxCount: number }) {
    this.reads.push({ direction: options.direction, maxCount: options.maxCount });
    const backwards = options.direction === 'backwards';
    const from = options.fromPosition;
    let events = backwards ? [...this.log].reverse() : this.log;
    if (typeof from === 'object') events = events.filter((e) => (backwards ? e.commit < from.commit : e.commit >= from.commit));
    const resolved: AllStreamResolvedEvent[] = events.slice(0, options.maxCount).map((e) => ({
      event: {
        streamId: e.streamId,
        id: `00000000-0000-4000-8000-${e.commit.toString().padStart(12, '0')}`,
        revision: 0n,
        type: e.type,
        data: {},
        metadata: {},
        isJson: true,
        created: new Date(),
        position: { commit: e.commit, prepare: e.commit },
      },
    })) as AllStreamResolvedEvent[];
    return Object.assign(Readable.from(resolved), { cancel: async () => undefined });
  }

  /** A stream of `count` events, sent one every `everyMs` (a long history on a busy link), then `stall`s if asked. */
  slowStream = { count: 0, everyMs: 0, stallAfter: Infinity };
  readStream(streamId: string) {
    const { count, everyMs, stallAfter } = this.slowStream;
    let timer: NodeJS.Timeout | undefined;
    async function* events() {
      for (let i = 0; i < count; i++) {
        await new Promise((resolve) => (timer = setTimeout(resolve, i >= stallAfter ? 3_600_000 : everyMs)));
        yield {
          event: {
            streamId,
            id: `00000000-0000-4000-8000-${i.toString().padStart(12, '0')}`,
            revision: BigInt(i),
            type: 'ThingHappened',
            data: { i },
            metadata: {},
            isJson: true,
            created: new Date(),
            position: { commit: BigInt(1000 + i), prepare: BigInt(1000 + i) },
          },
        };
      }
    }
    const read = Readable.from(events());
    read.on('close', () => clearTimeout(timer));
    return Object.assign(read, { cancel: async () => clearTimeout(timer) });
  }

  async dispose(): Promise<void> {}
}

function storeOn(client: StubClient, callTimeoutMs = 2_000): EsdbEventStore {
  const store = new EsdbEventStore('esdb://127.0.0.1:1?tls=false', { callTimeoutMs });
  void (store as unknown as { client: EventStoreDBClient }).client.dispose();
  (store as unknown as { client: unknown }).client = client;
  return store;
}

describe('EsdbEventStore (stubbed client)', () => {
  let store: EsdbEventStore | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  it('headPosition is the last event a subscriber can be handed, past trailing system events', async () => {
    // A fresh server starts its log with system events, and a tombstone (retention) ends it with
    // `$streamDeleted`: neither ever reaches a subscriber, so no read model can reach its position.
    const client = new StubClient([
      { streamId: '$epochs', type: '$epoch-information', commit: 100n },
      { streamId: 'workflow-a', type: 'WorkflowDispatched', commit: 200n },
      { streamId: 'workflow-b', type: 'WorkflowDispatched', commit: 300n },
      { streamId: 'workflow-b', type: '$streamDeleted', commit: 400n },
      { streamId: '$$workflow-a', type: '$metadata', commit: 500n },
    ]);
    store = storeOn(client);

    expect(await store.headPosition()).toBe(300n);
    expect(await store.readAll({ after: 300n })).toEqual([]);
  });

  it("passes over a projection's results in a `$` stream, whatever their type, as system events", async () => {
    // A user's projection writes its results to `$projections-<name>-result` with types of its own.
    const client = new StubClient([
      { streamId: 'workflow-a', type: 'WorkflowDispatched', commit: 100n },
      { streamId: '$projections-totals-result', type: 'Result', commit: 200n },
      { streamId: 'workflow-a', type: 'DecisionStarted', commit: 300n },
      { streamId: '$projections-totals-result', type: 'Result', commit: 400n },
    ]);
    store = storeOn(client);

    expect(await store.headPosition()).toBe(300n);
    expect((await store.readAll()).map((e) => [e.streamId, e.type])).toEqual([
      ['workflow-a', 'WorkflowDispatched'],
      ['workflow-a', 'DecisionStarted'],
    ]);
  });

  it('headPosition pages backwards past many trailing system events', async () => {
    const client = new StubClient([
      { streamId: 'workflow-a', type: 'WorkflowDispatched', commit: 100n },
      ...Array.from({ length: 100 }, (_, i) => ({ streamId: `workflow-${i}`, type: '$streamDeleted', commit: 200n + BigInt(i) })),
    ]);
    store = storeOn(client);

    expect(await store.headPosition()).toBe(100n);
    expect(client.reads.length).toBeGreaterThan(1);
  });

  it('headPosition does not read the same trailing system events again at every call (every fenced read calls it)', async () => {
    // Retention deleting 3,000 streams leaves 3,000 system events after the last of Baton's.
    const client = new StubClient([
      { streamId: 'workflow-a', type: 'WorkflowDispatched', commit: 100n },
      ...Array.from({ length: 3_000 }, (_, i) => ({ streamId: `$$workflow-${i}`, type: '$metadata', commit: 200n + BigInt(i) })),
    ]);
    store = storeOn(client);
    expect(await store.headPosition()).toBe(100n);

    client.reads.length = 0;
    expect(await store.headPosition()).toBe(100n);
    expect(client.reads).toHaveLength(1);

    // New system events only: read back to those already passed over, not to the last of Baton's.
    client.log.push(...Array.from({ length: 40 }, (_, i) => ({ streamId: `$$workflow-x${i}`, type: '$metadata', commit: 5_000n + BigInt(i) })));
    client.reads.length = 0;
    expect(await store.headPosition()).toBe(100n);
    expect(client.reads.length).toBeLessThanOrEqual(2);

    // One of Baton's events after them is the head at once.
    client.log.push({ streamId: 'workflow-b', type: 'WorkflowDispatched', commit: 6_000n }, { streamId: '$$workflow-a', type: '$metadata', commit: 6_001n });
    expect(await store.headPosition()).toBe(6_000n);
    expect(await store.headPosition()).toBe(6_000n);
  });

  it('headPosition of a log holding system events only is undefined (empty for Baton)', async () => {
    store = storeOn(
      new StubClient([
        { streamId: '$epochs', type: '$epoch-information', commit: 100n },
        { streamId: '$settings', type: '$settings', commit: 200n },
      ]),
    );

    expect(await store.headPosition()).toBeUndefined();
  });

  it('ping does not page past system events: one bounded read', async () => {
    const client = new StubClient([
      { streamId: 'workflow-a', type: 'WorkflowDispatched', commit: 100n },
      ...Array.from({ length: 2_000 }, (_, i) => ({ streamId: `$stats-${i}`, type: '$statsCollected', commit: 200n + BigInt(i) })),
    ]);
    store = storeOn(client);

    await store.ping();
    expect(client.reads).toEqual([{ direction: 'backwards', maxCount: 1 }]);
  });

  it('reads a long stream that keeps answering past one call deadline, and keeps its connection', async () => {
    const client = new StubClient([]);
    client.slowStream = { count: 8, everyMs: 100, stallAfter: Infinity };
    store = storeOn(client, 400);

    const events = await store.readStream('workflow-long');

    expect(events.map((e) => e.revision)).toEqual([0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n]);
    expect((store as unknown as { client: unknown }).client).toBe(client);
  });

  it('still fails a read that stops answering half-way with StoreUnavailableError', async () => {
    const client = new StubClient([]);
    client.slowStream = { count: 8, everyMs: 10, stallAfter: 3 };
    store = storeOn(client, 400);

    await expect(store.readStream('workflow-stalled')).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('readAll pages past system events: the next non-system events strictly after a position, in order', async () => {
    const log = Array.from({ length: 300 }, (_, i) => ({
      streamId: i % 3 === 0 ? `$stats-${i}` : `workflow-${i % 7}`,
      type: i % 3 === 0 ? '$statsCollected' : 'WorkflowDispatched',
      commit: BigInt(10 * (i + 1)),
    }));
    const client = new StubClient(log);
    store = storeOn(client);
    const wanted = log.filter((e) => !e.type.startsWith('$'));

    const first = await store.readAll({ maxCount: 50 });
    expect(first.map((e) => e.position)).toEqual(wanted.slice(0, 50).map((e) => e.commit));
    const next = await store.readAll({ after: first[49].position, maxCount: 50 });
    expect(next.map((e) => e.position)).toEqual(wanted.slice(50, 100).map((e) => e.commit));
    // From a system event's position, too (a checkpoint taken past one).
    const fromSystem = await store.readAll({ after: 30n, maxCount: 3 });
    expect(fromSystem.map((e) => e.position)).toEqual([50n, 60n, 80n]);
    expect(await store.readAll({ after: 3000n })).toEqual([]);
  });
});
