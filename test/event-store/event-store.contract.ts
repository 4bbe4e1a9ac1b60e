import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  EventMetadata,
  EventStore,
  ExpectedRevision,
  NewEvent,
  RecordedEvent,
  WrongExpectedRevisionError,
} from '../../src/event-store/event-store.port.js';
import { waitFor } from '../support/wait-for.js';

export interface EventStoreContractOptions {
  /** How long an asynchronous condition (a subscription delivery) may take. */
  waitTimeoutMs?: number;
  /** Appenders racing on one stream. */
  concurrentAppenders?: number;
}

/**
 * The behaviour every `EventStore` adapter must have. `open` connects a new client to the same
 * store each time it is called (same file, same server), so a second call stands for a restarted
 * process. Stream names are unique per test and positions are only compared with
 * `headPosition()`, so the suite also runs against a shared server that already holds events.
 */
export function eventStoreContract(
  name: string,
  open: () => Promise<EventStore>,
  options: EventStoreContractOptions = {},
): void {
  const waitTimeoutMs = options.waitTimeoutMs ?? 10_000;
  const appenders = options.concurrentAppenders ?? 20;
  const until = <T>(condition: () => T, description: string) => waitFor(condition, { timeoutMs: waitTimeoutMs, description });

  describe(`EventStore contract: ${name}`, () => {
    let store: EventStore;

    beforeAll(async () => {
      store = await open();
    });

    afterAll(async () => {
      await store?.close();
    });

    describe('append and read back', () => {
      it('stores events with revision, position, data, metadata and recordedAt', async () => {
        const streamId = streamIn(category('basic'));
        const metadata: EventMetadata = {
          correlationId: randomUUID(),
          causationId: randomUUID(),
          actor: 'system',
          appId: 'demo',
          environment: 'test',
          at: '2024-01-02T03:04:05.678Z',
          custom: { nested: [1, 'two', { three: true }], nothing: null },
        };
        const batch = [
          newEvent('Nested', { a: { b: [1, 2.5, -3] }, flag: false, none: null }, metadata),
          newEvent('List', [1, 'two', null]),
          newEvent('Text', 'just a string'),
          newEvent('Number', 42),
          newEvent('Null', null),
        ];
        const before = Date.now();

        const result = await store.append(streamId, batch, 'no_stream');

        const stored = await store.readStream(streamId);
        expect(stored.map((e) => [e.id, e.type, e.streamId, e.revision, e.data])).toEqual(
          batch.map((e, i) => [e.id, e.type, streamId, BigInt(i), e.data]),
        );
        expect(stored[0].metadata).toEqual(metadata);
        expect(stored[1].metadata).toEqual({});
        expect(result).toEqual({ nextExpectedRevision: 4n, position: stored[4].position });
        expectStrictlyIncreasing(stored.map((e) => e.position));
        for (const event of stored) {
          expect(event.recordedAt).toBeInstanceOf(Date);
          // The server's clock, not ours: allow for some skew.
          expect(Math.abs(event.recordedAt.getTime() - before)).toBeLessThan(5 * 60_000);
        }
      });

      it('rejects an empty append and writes nothing', async () => {
        const streamId = streamIn(category('empty'));
        await expect(store.append(streamId, [])).rejects.toThrow();
        expect(await store.readStream(streamId)).toEqual([]);
      });
    });

    describe('expected revision', () => {
      it("'any' appends to a missing and to an existing stream", async () => {
        const streamId = streamIn(category('any'));
        expect((await store.append(streamId, [newEvent()], 'any')).nextExpectedRevision).toBe(0n);
        expect((await store.append(streamId, [newEvent()])).nextExpectedRevision).toBe(1n);
      });

      it("'no_stream' creates a stream and conflicts once it exists", async () => {
        const streamId = streamIn(category('nostream'));
        expect((await store.append(streamId, [newEvent()], 'no_stream')).nextExpectedRevision).toBe(0n);
        await expectConflict(store.append(streamId, [newEvent()], 'no_stream'), streamId, 'no_stream', 0n);
        expect(await store.readStream(streamId)).toHaveLength(1);
      });

      it("'stream_exists' conflicts on a missing stream and appends to an existing one", async () => {
        const streamId = streamIn(category('exists'));
        await expectConflict(store.append(streamId, [newEvent()], 'stream_exists'), streamId, 'stream_exists', 'no_stream');
        expect(await store.readStream(streamId)).toEqual([]);
        await store.append(streamId, [newEvent()], 'no_stream');
        expect((await store.append(streamId, [newEvent()], 'stream_exists')).nextExpectedRevision).toBe(1n);
      });

      it('an exact revision appends when it is the last one and conflicts otherwise', async () => {
        const streamId = streamIn(category('exact'));
        await expectConflict(store.append(streamId, [newEvent()], 0n), streamId, 0n, 'no_stream');
        await store.append(streamId, [newEvent(), newEvent()], 'no_stream');
        expect((await store.append(streamId, [newEvent()], 1n)).nextExpectedRevision).toBe(2n);
        await expectConflict(store.append(streamId, [newEvent()], 1n), streamId, 1n, 2n);
        await expectConflict(store.append(streamId, [newEvent()], 5n), streamId, 5n, 2n);
        expect((await store.readStream(streamId)).map((e) => e.revision)).toEqual([0n, 1n, 2n]);
      });
    });

    describe('concurrent appenders on one stream', () => {
      it(`lets exactly one of ${appenders} appenders with the same expected revision win, round after round`, async () => {
        const streamId = streamIn(category('race'));
        let expected: ExpectedRevision = 'no_stream';
        for (let round = 0n; round < 5n; round++) {
          const outcomes = await Promise.allSettled(range(appenders).map(() => store.append(streamId, [newEvent()], expected)));
          const winners = outcomes.filter((o) => o.status === 'fulfilled');
          expect(winners).toHaveLength(1);
          for (const outcome of outcomes) {
            if (outcome.status === 'rejected') {
              expect(outcome.reason).toBeInstanceOf(WrongExpectedRevisionError);
              expect(outcome.reason).toMatchObject({ streamId, expected, actual: round });
            }
          }
          expected = round;
        }
        expect((await store.readStream(streamId)).map((e) => e.revision)).toEqual([0n, 1n, 2n, 3n, 4n]);
      });

      it(`loses no event when ${appenders} appenders retry on conflict`, async () => {
        const streamId = streamIn(category('retry'));
        const perAppender = 5;
        let conflicts = 0;
        const appender = async (n: number): Promise<string[]> => {
          const mine: string[] = [];
          for (let i = 0; i < perAppender; i++) {
            const event = newEvent('Counted', { appender: n, i });
            for (;;) {
              const [last] = await store.readStream(streamId, { direction: 'backwards', maxCount: 1 });
              try {
                await store.append(streamId, [event], last ? last.revision : 'no_stream');
                break;
              } catch (error) {
                if (!(error instanceof WrongExpectedRevisionError)) throw error;
                conflicts++;
              }
            }
            mine.push(event.id);
          }
          return mine;
        };

        const written = await Promise.all(range(appenders).map(appender));

        const stored = await store.readStream(streamId);
        const total = appenders * perAppender;
        expect(stored.map((e) => e.revision)).toEqual(range(total).map(BigInt));
        expect(new Set(ids(stored)).size).toBe(total);
        for (const mine of written) expect(ids(stored).filter((id) => mine.includes(id))).toEqual(mine);
        expect(conflicts).toBeGreaterThan(0);
      });
    });

    describe('idempotent re-append', () => {
      it('stores the same event ids once and answers as the first append did', async () => {
        const streamId = streamIn(category('idem'));
        const batch = [newEvent(), newEvent()];
        const first = await store.append(streamId, batch, 'no_stream');

        expect(await store.append(streamId, batch, 'no_stream')).toEqual(first);

        const next = newEvent();
        const second = await store.append(streamId, [next], first.nextExpectedRevision);
        expect(await store.append(streamId, [next], first.nextExpectedRevision)).toEqual(second);
        // A retry that arrives after the stream moved on.
        expect(await store.append(streamId, batch, 'no_stream')).toEqual(first);

        expect(ids(await store.readStream(streamId))).toEqual([...ids(batch), next.id]);
      });

      it("answers a retried 'any' append as the first one did; an append reusing another append's event id is refused or written whole, never in part", async () => {
        const streamId = streamIn(category('idemany'));
        const batch = [newEvent(), newEvent()];
        const first = await store.append(streamId, batch, 'any');
        expect(await store.append(streamId, batch, 'any')).toEqual(first);
        expect(await store.append(streamId, batch, 'stream_exists')).toEqual(first);
        // A new first event, then one already stored: not a retry. The embedded store refuses it
        // (event ids are unique there); EventStoreDB's idempotency check of an 'any' append looks
        // at its first event id only (IndexWriter.CheckCommit) and writes it. The engine never
        // appends several events with 'any'; what both must do is write all of it or nothing.
        // (The adapter's own error, which need not be an Error of this realm: only the refusal is checked.)
        const fresh = newEvent();
        const outcome = await store.append(streamId, [fresh, batch[1]], 'any').then(() => 'written', () => 'refused');
        if (name === 'sqlite') expect(outcome).toBe('refused');
        expect(ids(await store.readStream(streamId))).toEqual(outcome === 'refused' ? ids(batch) : [...ids(batch), fresh.id, batch[1].id]);
      });
    });

    describe('readStream', () => {
      let streamId: string;
      let written: string[];

      beforeAll(async () => {
        streamId = streamIn(category('read'));
        const batch = range(10).map((i) => newEvent('Numbered', { i }));
        await store.append(streamId, batch, 'no_stream');
        written = ids(batch);
      });

      it.each([
        ['forwards (default)', {}, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]],
        ['backwards', { direction: 'backwards' }, [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]],
        ['forwards from a revision (inclusive)', { fromRevision: 3n }, [3, 4, 5, 6, 7, 8, 9]],
        ['backwards from a revision (inclusive)', { direction: 'backwards', fromRevision: 6n }, [6, 5, 4, 3, 2, 1, 0]],
        ['forwards, at most maxCount', { maxCount: 4 }, [0, 1, 2, 3]],
        ['backwards, at most maxCount', { direction: 'backwards', maxCount: 2 }, [9, 8]],
        ['from a revision, at most maxCount', { fromRevision: 2n, maxCount: 3 }, [2, 3, 4]],
        ['backwards from a revision, at most maxCount', { direction: 'backwards', fromRevision: 5n, maxCount: 2 }, [5, 4]],
        ['forwards from past the end', { fromRevision: 10n }, []],
      ] as const)('reads %s', async (_label, readOptions, expected) => {
        const events = await store.readStream(streamId, readOptions);
        expect(events.map((e) => e.revision)).toEqual(expected.map(BigInt));
        expect(ids(events)).toEqual(expected.map((i) => written[i]));
      });

      it('reads an unknown stream as empty, in both directions', async () => {
        const missing = streamIn(category('missing'));
        expect(await store.readStream(missing)).toEqual([]);
        expect(await store.readStream(missing, { direction: 'backwards' })).toEqual([]);
      });

      it('deletes a stream at an expected revision only while that is still its last one (retention)', async () => {
        if (!store.deleteStream) return;
        const streamId = streamIn(category('deleted'));
        await store.append(streamId, [newEvent(), newEvent()]);
        // Another instance appended after the revision the deleter read: nothing is deleted.
        expect(await store.deleteStream(streamId, { expectedRevision: 0n })).toBe(0);
        expect(await store.readStream(streamId)).toHaveLength(2);
        expect(await store.deleteStream(streamId, { expectedRevision: 1n })).not.toBe(0);
        expect(await store.readStream(streamId)).toEqual([]);
      });

      it('answers an append expecting a revision of a deleted stream as a conflict with a missing stream (another instance deleted it)', async () => {
        if (!store.deleteStream) return;
        const streamId = streamIn(category('deleted-append'));
        await store.append(streamId, [newEvent(), newEvent()]);
        expect(await store.deleteStream(streamId, { expectedRevision: 1n })).not.toBe(0);
        await expectConflict(store.append(streamId, [newEvent()], 1n), streamId, 1n, 'no_stream');
        expect(await store.readStream(streamId)).toEqual([]);
      });

      it('tells a stream deleted with remember from one that never existed (an idempotency key\'s generations)', async () => {
        if (!store.deleteStream || !store.wasDeleted) return;
        const cat = category('remembered');
        const [deleted, refused, never] = [streamIn(cat), streamIn(cat), streamIn(cat)];
        await store.append(deleted, [newEvent()]);
        await store.append(refused, [newEvent(), newEvent()]);
        expect(await store.deleteStream(deleted, { expectedRevision: 0n, remember: true })).not.toBe(0);
        // Not deleted (another append came first): nothing to remember.
        expect(await store.deleteStream(refused, { expectedRevision: 0n, remember: true })).toBe(0);
        expect(await store.readStream(deleted)).toEqual([]);
        expect(await store.wasDeleted(deleted)).toBe(true);
        expect(await store.wasDeleted(refused)).toBe(false);
        expect(await store.wasDeleted(never)).toBe(false);
      });

      it("remembers a stream deleted with remember and an owner while the owner is stored (a child whose parent's log may replay its creation)", async () => {
        if (!store.deleteStream || !store.wasDeleted) return;
        const cat = category('owned');
        const [owner, owned] = [streamIn(cat), streamIn(cat)];
        await store.append(owner, [newEvent()]);
        await store.append(owned, [newEvent()]);
        expect(await store.deleteStream(owned, { expectedRevision: 0n, remember: true, owner })).not.toBe(0);
        expect(await store.wasDeleted(owned)).toBe(true);
        expect(await store.wasDeleted(owner)).toBe(false);
      });

      it('keeps headPosition at the last event a subscriber is handed once a stream is deleted', async () => {
        if (!store.deleteStream) return;
        const cat = category('deleted-head');
        const [gone, kept] = [streamIn(cat), streamIn(cat)];
        await store.append(gone, [newEvent()]);
        const { position } = await store.append(kept, [newEvent()]);
        await store.deleteStream(gone, { expectedRevision: 0n });
        // On EventStoreDB the tombstone is a system event ending `$all`: no read model reaches it.
        expect(await store.headPosition()).toBe(position);
        expect(await store.readAll({ after: position })).toEqual([]);
      });
    });

    describe('global log', () => {
      it('reads the log after a position, in commit order across streams', async () => {
        const cat = category('all');
        const [a, b, c] = [streamIn(cat), streamIn(cat), streamIn(cat)];
        const head = await store.headPosition();
        const appended: NewEvent[] = [];
        const positions: bigint[] = [];
        for (const streamId of [a, b, a, c, b, a]) {
          const event = newEvent();
          positions.push((await store.append(streamId, [event])).position);
          appended.push(event);
        }

        const ours = await readAllAfter(store, head, inCategory(cat));
        expect(ids(ours)).toEqual(ids(appended));
        expect(ours.map((e) => e.position)).toEqual(positions);
        expectStrictlyIncreasing([head ?? -1n, ...positions]);

        // `after` is exclusive.
        expect(ids(await readAllAfter(store, ours[2].position, inCategory(cat)))).toEqual(ids(appended.slice(3)));

        const page = await store.readAll({ after: head, maxCount: 2 });
        expect(page).toHaveLength(2);
        expectStrictlyIncreasing([head ?? -1n, ...page.map((e) => e.position)]);

        expect(await store.headPosition()).toBeGreaterThanOrEqual(positions[positions.length - 1]);
      });

      it('gives concurrent appends to many streams increasing positions, each batch contiguous', async () => {
        const cat = category('order');
        const streams = range(8).map(() => streamIn(cat));
        const head = await store.headPosition();
        const batches = range(40).map((i) => ({
          streamId: streams[i % streams.length],
          events: range(1 + (i % 3)).map((j) => newEvent('Ordered', { i, j })),
        }));

        const results = await Promise.all(batches.map((b) => store.append(b.streamId, b.events)));

        const all = await readAllAfter(store, head, () => true);
        expectStrictlyIncreasing(all.map((e) => e.position));
        const ours = all.filter(inCategory(cat));
        expect(ours).toHaveLength(batches.reduce((n, b) => n + b.events.length, 0));
        batches.forEach((batch, i) => {
          const at = all.findIndex((e) => e.id === batch.events[0].id);
          // No other event lands inside one append.
          expect(ids(all.slice(at, at + batch.events.length))).toEqual(ids(batch.events));
          expect(all[at + batch.events.length - 1].position).toBe(results[i].position);
        });
        for (const streamId of streams) {
          const inLog = ours.filter((e) => e.streamId === streamId).map((e) => e.revision);
          expect(inLog).toEqual(range(inLog.length).map(BigInt));
        }
      });

      it("hands on none of a server's own events ($-prefixed streams or types: stats, settings, stream metadata, projections' links), and the head is the last event it hands on", async () => {
        // EventStoreDB writes such events into `$all` around the log's own (its stats on a timer,
        // the standard projections' links after each event); the embedded store has none.
        const system = (e: RecordedEvent) => e.streamId.startsWith('$') || e.type.startsWith('$');
        const cat = category('own');
        const head = await store.headPosition();
        const seen = collector(() => true);
        let caughtUp = false;
        const subscription = store.subscribe(seen.handler, { after: head, onCaughtUp: () => (caughtUp = true) });
        const appended: string[] = [];
        let last = 0n;
        try {
          await until(() => caughtUp, 'catch-up');
          for (let i = 0; i < 3; i++) {
            const event = newEvent('Own', { i });
            last = (await store.append(streamIn(cat), [event])).position;
            appended.push(event.id);
            await until(() => seen.events.some((e) => e.id === event.id), 'the live event');
          }
        } finally {
          await subscription.close();
        }
        expect(seen.events.filter(system)).toEqual([]);
        expect(ids(seen.events.filter(inCategory(cat)))).toEqual(appended);
        const read = await readAllAfter(store, head, () => true);
        expect(read.filter(system)).toEqual([]);
        expect(ids(read.filter(inCategory(cat)))).toEqual(appended);
        expect(await store.headPosition()).toBe(last);
        expect(await store.readAll({ after: last })).toEqual([]);
      });
    });

    describe('subscribe', () => {
      it('catches up, goes live, and resumes from its checkpoint with no gap or duplicate', async () => {
        const cat = category('sub');
        const [a, b] = [streamIn(cat), streamIn(cat)];
        const start = await store.headPosition();
        const appended: string[] = [];
        const appendTo = async (streamId: string, count: number) => {
          for (let i = 0; i < count; i++) {
            const event = newEvent('Subscribed', { i });
            await store.append(streamId, [event]);
            appended.push(event.id);
          }
        };
        await appendTo(a, 3);
        await appendTo(b, 2);

        const first = collector(inCategory(cat));
        let caughtUp = 0;
        const subscription = store.subscribe(first.handler, { after: start, onCaughtUp: () => caughtUp++ });
        await until(() => caughtUp > 0, 'catch-up');
        expect(ids(first.events)).toEqual(appended);

        await appendTo(b, 2);
        await appendTo(a, 2);
        await until(() => first.events.length === appended.length, 'live events');
        expect(ids(first.events)).toEqual(appended);
        expect(caughtUp).toBe(1);
        expect(first.maxConcurrent).toBe(1);
        expectStrictlyIncreasing(first.events.map((e) => e.position));

        await subscription.close();
        const checkpoint = subscription.checkpoint;
        expect(checkpoint).toBeGreaterThanOrEqual(first.events[first.events.length - 1].position);
        const deliveredBeforeClose = first.events.length;

        await appendTo(a, 2);
        await appendTo(b, 1);
        const restarted = await open();
        try {
          const second = collector(inCategory(cat));
          const resumed = restarted.subscribe(second.handler, { after: checkpoint });
          await appendTo(a, 1);
          const last = appended[appended.length - 1];
          await until(() => second.events.some((e) => e.id === last), 'resumed events');
          await resumed.close();

          expect(ids(second.events)).toEqual(appended.slice(deliveredBeforeClose));
          expect(first.events).toHaveLength(deliveredBeforeClose);
        } finally {
          await restarted.close();
        }
      });

      it('delivers only streams that match streamPrefixes', async () => {
        const [wanted, alsoWanted, unwanted] = [category('pa'), category('pb'), category('pc')];
        const head = await store.headPosition();
        const delivered: RecordedEvent[] = [];
        const subscription = store.subscribe((event) => void delivered.push(event), {
          after: head,
          streamPrefixes: [`${wanted}-`, `${alsoWanted}-`],
        });
        const expected: string[] = [];
        for (const cat of [unwanted, wanted, unwanted, alsoWanted, unwanted, wanted]) {
          const event = newEvent();
          await store.append(streamIn(cat), [event]);
          if (cat !== unwanted) expected.push(event.id);
        }

        await until(() => delivered.length >= expected.length, 'matching events');
        await subscription.close();
        expect(ids(delivered)).toEqual(expected);
      });

      it('stops when the handler throws and reports the error', async () => {
        const streamId = streamIn(category('fail'));
        const head = await store.headPosition();
        const failure = new Error('handler failed');
        const delivered: string[] = [];
        let reported: Error | undefined;
        const subscription = store.subscribe(
          (event) => {
            if (event.streamId !== streamId) return;
            delivered.push(event.id);
            throw failure;
          },
          { after: head, onError: (error) => (reported = error) },
        );
        const [first, second] = [newEvent(), newEvent()];
        const { position } = await store.append(streamId, [first]);
        await store.append(streamId, [second]);

        await until(() => reported, 'onError');
        await subscription.close();
        expect(reported).toBe(failure);
        expect(delivered).toEqual([first.id]);
        expect(subscription.checkpoint ?? -1n).toBeLessThan(position);
      });
    });

    describe('payloads', () => {
      it('round-trips a 1 MiB event', async () => {
        const streamId = streamIn(category('big'));
        const blob = range(1024)
          .map((i) => i.toString(36).padStart(4, '0') + 'x'.repeat(1020))
          .join('');
        expect(blob).toHaveLength(1024 * 1024);
        const head = await store.headPosition();
        const event = newEvent('Large', { blob });

        await store.append(streamId, [event]);

        expect((await store.readStream(streamId))[0].data).toEqual({ blob });
        const [viaLog] = await readAllAfter(store, head, (e) => e.streamId === streamId);
        expect(viaLog.data).toEqual({ blob });
      });

      it('round-trips Unicode in stream names, types, data and metadata', async () => {
        const text = {
          emoji: '😀🚀 👩‍👩‍👧‍👦 🇯🇵',
          cjk: '漢字・かな・カナ・한국어',
          rtl: 'مرحبا بالعالم — שלום עולם',
          other: 'Ünïcødé ✓ 𝄞 e\u0301',
        };
        const cat = `${category('uni')}漢字😀`;
        const streamId = `${cat}-שלום-${randomUUID()}`;
        const metadata: EventMetadata = { actor: 'ユーザー😀', appId: 'مرحبا', note: text.other };
        const head = await store.headPosition();
        const delivered: RecordedEvent[] = [];
        const subscription = store.subscribe((event) => void delivered.push(event), {
          after: head,
          streamPrefixes: [`${cat}-`],
        });
        const event = newEvent('Événement✓漢字', text, metadata);

        await store.append(streamId, [event]);

        const [stored] = await store.readStream(streamId);
        expect(stored).toMatchObject({ id: event.id, streamId, type: event.type, data: text, metadata });
        const [viaLog] = await readAllAfter(store, head, (e) => e.streamId === streamId);
        expect(viaLog).toMatchObject({ streamId, type: event.type, data: text, metadata });
        await until(() => delivered.length > 0, 'Unicode prefix subscription');
        await subscription.close();
        expect(delivered.map((e) => [e.streamId, e.data])).toEqual([[streamId, text]]);
      });
    });
  });
}

function category(label: string): string {
  return `${label}${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

function streamIn(cat: string): string {
  return `${cat}-${randomUUID()}`;
}

function inCategory(cat: string): (event: RecordedEvent) => boolean {
  return (event) => event.streamId.startsWith(`${cat}-`);
}

function newEvent(type = 'ThingHappened', data: unknown = { n: 1 }, metadata?: EventMetadata): NewEvent {
  return { id: randomUUID(), type, data, ...(metadata && { metadata }) };
}

function ids(events: Array<{ id: string }>): string[] {
  return events.map((e) => e.id);
}

function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

function expectStrictlyIncreasing(values: bigint[]): void {
  values.slice(1).forEach((value, i) => expect(value).toBeGreaterThan(values[i]));
}

async function expectConflict(
  append: Promise<unknown>,
  streamId: string,
  expected: ExpectedRevision,
  actual: bigint | 'no_stream',
): Promise<void> {
  const error = await append.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(WrongExpectedRevisionError);
  expect(error).toMatchObject({ code: 'WRONG_EXPECTED_REVISION', name: 'WrongExpectedRevisionError', streamId, expected, actual });
}

/** Every event after `after` that `keep` accepts, paging through the whole rest of the log. */
async function readAllAfter(
  store: EventStore,
  after: bigint | undefined,
  keep: (event: RecordedEvent) => boolean,
): Promise<RecordedEvent[]> {
  const kept: RecordedEvent[] = [];
  const pageSize = 256;
  for (let cursor = after; ; ) {
    const page = await store.readAll({ after: cursor, maxCount: pageSize });
    kept.push(...page.filter(keep));
    if (page.length < pageSize) return kept;
    cursor = page[page.length - 1].position;
  }
}

/** A handler that records matching events and how many calls overlapped. */
function collector(keep: (event: RecordedEvent) => boolean) {
  const events: RecordedEvent[] = [];
  let active = 0;
  let maxConcurrent = 0;
  return {
    events,
    get maxConcurrent() {
      return maxConcurrent;
    },
    handler: async (event: RecordedEvent) => {
      active++;
      maxConcurrent = Math.max(maxConcurrent, active);
      await new Promise((resolve) => setImmediate(resolve));
      if (keep(event)) events.push(event);
      active--;
    },
  };
}
