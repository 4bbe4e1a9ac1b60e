import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { NewEvent, RecordedEvent, WrongExpectedRevisionError } from '../../src/event-store/event-store.port.js';
import { ReadModelDb } from '../../src/event-store/read-model-db.js';
import Database from '../../src/event-store/sqlite/better-sqlite3.js';
import { CATEGORY_SQL, SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store.js';
import { waitFor } from '../support/wait-for.js';
import { eventStoreContract } from './event-store.contract.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');
const child = join(here, 'fixtures/sqlite-child.mjs');
const compiledAdapter = join(root, 'dist/src/event-store/sqlite/sqlite-event-store.js');

const dir = mkdtempSync(join(tmpdir(), 'baton-sqlite-store-'));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

eventStoreContract('sqlite', async () => new SqliteEventStore(join(dir, 'contract.db')));

describe('SqliteEventStore, embedded only', () => {
  const file = join(dir, 'embedded.db');
  let store: SqliteEventStore;

  beforeAll(() => {
    // `npm test` builds first; a lone run of this file builds if the child's import is missing.
    if (!existsSync(compiledAdapter)) execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
    store = new SqliteEventStore(file);
  }, 120_000);

  afterAll(async () => {
    await store.close();
  });

  it("forgets a deleted stream remembered for an owner once the owner is deleted, and never remembers one whose owner is gone: one row per child only while its parent is stored", async () => {
    const owner = `workflow-${randomUUID()}`;
    const [first, late, plain] = [`workflow-${randomUUID()}`, `workflow-${randomUUID()}`, `workflow-${randomUUID()}`];
    for (const streamId of [owner, first, late, plain]) await store.append(streamId, [newEvent()]);
    const rows = () => {
      const db = new Database(file, { readonly: true });
      try {
        return (db.prepare('SELECT count(*) AS n FROM deleted_owned_streams').get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    const before = rows();
    expect(await store.deleteStream(first, { expectedRevision: 0n, remember: true, owner })).toBe(1);
    expect(await store.deleteStream(plain, { expectedRevision: 0n, remember: true })).toBe(1);
    expect([await store.wasDeleted(first), rows() - before]).toEqual([true, 1]);
    // The owner deleted: its log can no longer replay the creation, and the row goes with it.
    expect(await store.deleteStream(owner, { expectedRevision: 0n })).toBe(1);
    expect(await store.deleteStream(late, { expectedRevision: 0n, remember: true, owner })).toBe(1);
    expect([await store.wasDeleted(first), await store.wasDeleted(late), rows() - before]).toEqual([false, false, 0]);
    // Remembered without an owner: kept (an idempotency key's generation).
    expect(await store.wasDeleted(plain)).toBe(true);
  });

  describe('two processes on one file', () => {
    it('delivers events appended by another process to a subscription here', async () => {
      const cat = category('fromchild');
      const delivered: RecordedEvent[] = [];
      const subscription = store.subscribe((event) => void delivered.push(event), {
        after: await store.headPosition(),
        streamPrefixes: [`${cat}-`],
      });

      const writer = startChild(file, 'append', `${cat}-1`, '5', '1');
      await waitFor(() => delivered.length === 5, { timeoutMs: 10_000, description: "the child's events" });
      await subscription.close();

      expect(await writer.exitCode).toBe(0);
      expect(ids(delivered)).toEqual(writer.lines.map((line) => line.id));
    });

    it("delivers this process's commits interleaved with another writer's in log order, none skipped", async () => {
      // A subscription reads what this process just committed from memory; a commit by another
      // connection in between is a hole in that run and must be read from the file.
      const cat = category('interleaved');
      const other = new SqliteEventStore(file);
      const delivered: RecordedEvent[] = [];
      const subscription = store.subscribe((event) => void delivered.push(event), { after: await store.headPosition(), streamPrefixes: [`${cat}-`] });
      try {
        const writes: Array<Promise<unknown>> = [];
        for (let i = 0; i < 60; i++) {
          const writer = i % 3 === 1 ? other : store;
          writes.push(writer.append(`${cat}-${i % 4}`, [newEvent(), newEvent()]));
          if (i % 7 === 0) await Promise.all(writes);
        }
        await Promise.all(writes);
        await waitFor(() => delivered.length === 120, { timeoutMs: 10_000, description: 'all 120 events' });
        const positions = delivered.map((e) => e.position);
        expect(positions).toEqual([...positions].sort((a, b) => (a < b ? -1 : 1)));
        const fromFile = (await store.readAll({ after: delivered[0].position - 1n, maxCount: 10_000 })).filter((e) => e.streamId.startsWith(`${cat}-`));
        expect(delivered.map((e) => [e.id, e.position, e.revision, e.data])).toEqual(fromFile.map((e) => [e.id, e.position, e.revision, e.data]));
      } finally {
        await subscription.close();
        await other.close();
      }
    });

    it("reads a stream whole when another writer appended to it between this process's appends", async () => {
      // Bounded reads of what this process just committed come from memory; a revision written
      // by another connection is not there, so the read must go to the file.
      const stream = `${category('gapped')}-1`;
      const other = new SqliteEventStore(file);
      try {
        await store.append(stream, [newEvent(), newEvent()]);
        const theirs = newEvent();
        await other.append(stream, [theirs]);
        await store.append(stream, [newEvent()], 2n);
        const read = await store.readStream(stream, { fromRevision: 1n, maxCount: 3 });
        expect(read.map((e) => e.revision)).toEqual([1n, 2n, 3n]);
        expect(read[1].id).toBe(theirs.id);
        expect((await store.readStream(stream, { fromRevision: 3n, maxCount: 1 })).map((e) => e.revision)).toEqual([3n]);
      } finally {
        await other.close();
      }
    });

    it('reads a stream whole when another writer appended to it after this process read it from the file', async () => {
      // A forward read from the file keeps the stream's tail in memory for the next claim; a
      // revision written elsewhere afterwards leaves a gap there, so the read must go to the file.
      const stream = `${category('seeded')}-1`;
      const other = new SqliteEventStore(file);
      try {
        await other.append(stream, [newEvent(), newEvent()]);
        expect((await store.readStream(stream, { fromRevision: 0n, maxCount: 2 })).map((e) => e.revision)).toEqual([0n, 1n]);
        const theirs = newEvent();
        await other.append(stream, [theirs], 1n);
        await store.append(stream, [newEvent()], 2n);
        // Held here: revisions 0, 1 and 3; three from 0 spans the gap.
        const three = await store.readStream(stream, { fromRevision: 0n, maxCount: 3 });
        expect(three.map((e) => e.revision)).toEqual([0n, 1n, 2n]);
        expect(three[2].id).toBe(theirs.id);
        const read = await store.readStream(stream, { fromRevision: 0n, maxCount: 4 });
        expect(read.map((e) => e.revision)).toEqual([0n, 1n, 2n, 3n]);
        expect(read[2].id).toBe(theirs.id);
        // Past what this process holds (a later append by the other writer): from the file too.
        await other.append(stream, [newEvent()], 3n);
        expect((await store.readStream(stream, { fromRevision: 2n, maxCount: 3 })).map((e) => e.revision)).toEqual([2n, 3n, 4n]);
      } finally {
        await other.close();
      }
    });

    it("wakes a subscription here as soon as another process commits (the WAL's watch), not at the next poll", async () => {
      const cat = category('walwatch');
      const { watching, delivered, subscription } = await watchedSubscription(file, cat);
      try {
        const writer = startChild(file, 'append', `${cat}-1`, '3', '1');
        expect(await writer.exitCode).toBe(0);
        await waitFor(() => delivered.length === 3, { timeoutMs: 10_000, description: "the child's events, woken by the WAL's change" });
        expect(ids(delivered)).toEqual(writer.lines.map((line) => line.id));
      } finally {
        await subscription.close();
        await watching.close();
      }
    });

    it('wakes no subscription for another connection\'s commit that adds no event (a read model\'s), and still for the next event', async () => {
      const cat = category('noevent');
      const { watching, delivered, subscription } = await watchedSubscription(file, cat);
      // The read models' own connection to the same file: its commits change the WAL and data_version too.
      const readModels = new ReadModelDb(file);
      const reads = { n: 0 };
      const readPage = watching.readPage.bind(watching);
      watching.readPage = (after, limit) => (reads.n++, readPage(after, limit));
      // The look that follows a change of the WAL records the new data_version: then it has looked.
      const looked = () => (watching as unknown as { dataVersion: number }).dataVersion;
      try {
        const before = { version: looked(), wakes: watching.commitsSeen, reads: reads.n };
        readModels.saveCheckpoint(`probe-${cat}`, 1n);
        await waitFor(() => looked() !== before.version, { timeoutMs: 10_000, description: "the watch to look after the read model's commit" });
        expect(watching.commitsSeen).toBe(before.wakes);
        expect(reads.n).toBe(before.reads);
        await store.append(`${cat}-1`, [newEvent()]);
        await waitFor(() => delivered.length === 1, { timeoutMs: 10_000, description: "another connection's event, woken by the WAL's change" });
        expect(watching.commitsSeen).toBeGreaterThan(before.wakes);
      } finally {
        await subscription.close();
        readModels.close();
        await watching.close();
      }
    });

    it("delivers events appended here to another process's subscription", async () => {
      const cat = category('fromparent');
      const reader = startChild(file, 'subscribe', `${cat}-`, String((await store.headPosition()) ?? 'start'), '5');
      await waitFor(() => reader.lines.some((line) => line.ready), { timeoutMs: 10_000, description: 'the child to subscribe' });

      const appended: string[] = [];
      const acknowledgedAt: number[] = [];
      for (let i = 0; i < 5; i++) {
        const event = newEvent();
        await store.append(`${cat}-1`, [event]);
        acknowledgedAt.push(Date.now());
        appended.push(event.id);
      }

      expect(await reader.exitCode).toBe(0);
      const received = reader.lines.filter((line) => line.id);
      expect(received.map((line) => line.id)).toEqual(appended);
      // The child polls the file; each event reaches it within a few poll intervals.
      received.forEach((line, i) => expect(line.at! - acknowledgedAt[i]).toBeLessThan(2_000));
    });
  });

  it('keeps every acknowledged append when the writing process is killed mid-stream', async () => {
    const streamId = `${category('crash')}-1`;
    const writer = startChild(file, 'append', streamId, '1000000', '8');
    await waitFor(() => writer.lines.length >= 500, { timeoutMs: 30_000, description: '500 acknowledged appends' });

    writer.process.kill('SIGKILL');
    expect(await writer.exitCode).toBeNull();
    const acknowledged = writer.lines.map((line) => line.id!);

    const reopened = new SqliteEventStore(file);
    try {
      const stored = await reopened.readStream(streamId);
      const storedIds = new Set(ids(stored));
      expect(acknowledged.filter((id) => !storedIds.has(id))).toEqual([]);
      expect(stored.map((e) => e.revision)).toEqual(stored.map((_, i) => BigInt(i)));
      expect(stored.length).toBeLessThan(1_000_000);
    } finally {
      await reopened.close();
    }
  });

  it('opens a new file while another process holds its lock (two instances starting at once), waiting instead of failing', async () => {
    // The other process is writing the new file (a write lock, BEGIN IMMEDIATE) for 500 ms.
    // Switching to WAL needs the write lock too, and SQLite answers SQLITE_BUSY at once rather
    // than wait in its busy handler (a reader asking to write while another writer waits could
    // deadlock): opening the store used to fail with "database is locked", as one of two
    // instances started together on a new file did now and then.
    const fresh = join(dir, `starting-${randomUUID()}.db`);
    const holder = startChild(fresh, 'hold', '500');
    await waitFor(() => holder.lines.some((line) => line.ready), { timeoutMs: 10_000, description: 'the other process to hold the lock' });

    const opened = new SqliteEventStore(fresh);
    try {
      expect(await holder.exitCode).toBe(0);
      const streamId = `${category('starting')}-1`;
      await opened.append(streamId, [newEvent()], 'no_stream');
      expect(await opened.readStream(streamId)).toHaveLength(1);
    } finally {
      await opened.close();
    }
  });

  describe('bulk reads for a restart', () => {
    it('replays whole streams up to a position, each in revision order, with the data and metadata a stream read gives', async () => {
      const cat = category('replay');
      const [a, b, other] = [`${cat}-a`, `${cat}-b`, `${cat}-other`];
      await store.append(a, [newEvent(), newEvent()], 'no_stream');
      await store.append(b, [newEvent()], 'no_stream');
      await store.append(other, [newEvent()], 'no_stream');
      const upTo = (await store.append(a, [newEvent()], 1n)).position;
      await store.append(b, [{ ...newEvent(), metadata: { actor: 'after the position' } }], 0n);

      const replayed: RecordedEvent[] = [];
      store.replayStreams([b, a, `${cat}-unknown`], upTo, (event) => void replayed.push(event));

      const expected = [...(await store.readStream(a)), ...(await store.readStream(b))].filter((e) => e.position <= upTo);
      const shape = (e: RecordedEvent) => ({ id: e.id, type: e.type, streamId: e.streamId, revision: e.revision, position: e.position, data: e.data, metadata: e.metadata, recordedAt: e.recordedAt });
      // One stream after the other, each in revision order; which stream first is not promised.
      const byStream = (events: RecordedEvent[]) => [...events].sort((x, y) => x.streamId.localeCompare(y.streamId) || Number(x.revision - y.revision));
      expect(replayed).toHaveLength(4);
      expect(byStream(replayed).map(shape)).toEqual(byStream(expected).map(shape));
      for (const stream of [a, b]) {
        const revisions = replayed.filter((e) => e.streamId === stream).map((e) => e.revision);
        expect(revisions).toEqual([...revisions].sort((x, y) => Number(x - y)));
      }
      // Each stream's events come together.
      const runs = replayed.map((e) => e.streamId).filter((id, i, all) => i === 0 || all[i - 1] !== id);
      expect(runs.sort()).toEqual([a, b].sort());

      const none: RecordedEvent[] = [];
      store.replayStreams([a], -1n, (event) => void none.push(event));
      store.replayStreams([], upTo, (event) => void none.push(event));
      expect(none).toEqual([]);
    });

    it("gives a subscription reading from the file the same data and metadata as a stream read", async () => {
      const streamId = `${category('filepage')}-1`;
      const from = await store.headPosition();
      await store.append(streamId, [{ ...newEvent(), data: { nested: { list: [1, 'two', null] } }, metadata: { actor: 'someone', correlationId: 'c-1' } }], 'no_stream');
      // Another store on the file holds none of these commits in memory: it reads them from the file.
      const reader = new SqliteEventStore(file, { watchWal: false });
      const delivered: RecordedEvent[] = [];
      const subscription = reader.subscribe((event) => void delivered.push(event), { after: from, streamPrefixes: [streamId] });
      try {
        await waitFor(() => delivered.length === 1, { description: 'the event, read from the file' });
        const [stored] = await store.readStream(streamId);
        const [got] = delivered;
        expect({ id: got.id, type: got.type, revision: got.revision, position: got.position, data: got.data, metadata: got.metadata, recordedAt: got.recordedAt }).toEqual({
          id: stored.id,
          type: stored.type,
          revision: stored.revision,
          position: stored.position,
          data: { nested: { list: [1, 'two', null] } },
          metadata: stored.metadata,
          recordedAt: stored.recordedAt,
        });
        expect(got.metadata).toMatchObject({ actor: 'someone', correlationId: 'c-1' });
      } finally {
        await subscription.close();
        await reader.close();
      }
    });
  });

  describe('group commit', () => {
    it('gives each of 50 concurrent appenders its own result', async () => {
      const streams = Array.from({ length: 50 }, () => `${category('group')}-1`);
      const events = streams.map(() => newEvent());

      const results = await Promise.all(streams.map((streamId, i) => store.append(streamId, [events[i]], 'no_stream')));

      expect(new Set(results.map((r) => r.position)).size).toBe(50);
      for (const [i, streamId] of streams.entries()) {
        const stored = await store.readStream(streamId);
        expect(ids(stored)).toEqual([events[i].id]);
        expect(results[i]).toEqual({ nextExpectedRevision: 0n, position: stored[0].position });
      }
    });

    it('confines a conflict inside one batch to the caller that lost', async () => {
      const contested = `${category('contested')}-1`;
      await store.append(contested, [newEvent()], 'no_stream');
      const others = Array.from({ length: 48 }, () => `${category('bystander')}-1`);
      const appendOther = (streamId: string) => store.append(streamId, [newEvent()], 'no_stream');

      // Queued in one tick, so they share one commit.
      const outcomes = await Promise.allSettled([
        ...others.slice(0, 24).map(appendOther),
        store.append(contested, [newEvent()], 0n),
        store.append(contested, [newEvent()], 0n),
        ...others.slice(24).map(appendOther),
      ]);

      const rejected = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason] : []));
      expect(rejected).toHaveLength(1);
      expect(rejected[0]).toBeInstanceOf(WrongExpectedRevisionError);
      expect(rejected[0]).toMatchObject({ streamId: contested, expected: 0n, actual: 1n });
      expect(await store.readStream(contested)).toHaveLength(2);
      for (const streamId of others) expect(await store.readStream(streamId)).toHaveLength(1);
    });
  });
});

interface ChildLine {
  id?: string;
  at?: number;
  ready?: boolean;
}

function startChild(...args: string[]) {
  const proc = spawn(process.execPath, [child, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: ChildLine[] = [];
  createInterface({ input: proc.stdout }).on('line', (line) => lines.push(JSON.parse(line) as ChildLine));
  // 'close' comes after stdout is drained, so `lines` is complete once this settles.
  const exitCode = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
  return { process: proc, lines, exitCode };
}

/**
 * A store on `file` that polls once in ten minutes (only the watch of the WAL file can wake it
 * within a test's deadline), with a subscription to `cat`'s streams that has caught up.
 */
async function watchedSubscription(file: string, cat: string) {
  const watching = new SqliteEventStore(file, { pollIntervalMs: 600_000 });
  const delivered: RecordedEvent[] = [];
  let caughtUp = false;
  const subscription = watching.subscribe((event) => void delivered.push(event), {
    after: await watching.headPosition(),
    streamPrefixes: [`${cat}-`],
    onCaughtUp: () => (caughtUp = true),
  });
  await waitFor(() => caughtUp, { description: 'the subscription to be caught up' });
  return { watching, delivered, subscription };
}

describe('readCategory', () => {
  it('answers the events of one category in log order, from its streams alone', async () => {
    const file = join(dir, 'category.db');
    const store = new SqliteEventStore(file);
    try {
      const appended: string[] = [];
      for (let i = 0; i < 3; i++) {
        await store.append(`workflow-${randomUUID()}`, [newEvent(), newEvent()], 'no_stream');
        const token = newEvent();
        await store.append(`apitoken-${randomUUID()}`, [token], 'no_stream');
        appended.push(token.id);
      }
      // A stream whose id merely starts like the category, and one just past its range.
      await store.append('apitokens-x', [newEvent()], 'no_stream');
      await store.append('apitoken.', [newEvent()], 'no_stream');
      const read = await store.readCategory('apitoken-');
      expect(read.map((e) => e.id)).toEqual(appended);
      expect(read.map((e) => e.position)).toEqual([...read.map((e) => e.position)].sort((a, b) => (a < b ? -1 : 1)));
    } finally {
      await store.close();
    }
    // Read through the stream index (a range of it), not the whole log, whatever the log holds.
    const db = new Database(file, { readonly: true });
    try {
      const plan = db.prepare(`EXPLAIN QUERY PLAN ${CATEGORY_SQL}`).all('apitoken-', 'apitoken.') as Array<{ detail: string }>;
      expect(plan.map((p) => p.detail).join('\n')).toMatch(/^SEARCH events USING INDEX \S+ \(stream_id>\? AND stream_id<\?\)/);
      expect(plan.some((p) => /^SCAN events/.test(p.detail))).toBe(false);
    } finally {
      db.close();
    }
  });
});

function category(label: string): string {
  return `${label}${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

function newEvent(): NewEvent {
  return { id: randomUUID(), type: 'Embedded', data: { at: Date.now() } };
}

function ids(events: Array<{ id: string }>): string[] {
  return events.map((e) => e.id);
}
