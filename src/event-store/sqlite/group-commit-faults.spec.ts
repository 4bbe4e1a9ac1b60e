import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StoreUnavailableError } from '../event-store.port.js';
import { SqliteEventStore } from './sqlite-event-store.js';

let stores: SqliteEventStore[] = [];
afterEach(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  stores = [];
});

const id = (n: number) => `0190c4f4-0000-7000-8000-${String(n).padStart(12, '0')}`;
const ev = (n: number, data: unknown = {}) => ({ id: id(n), type: 'T', data });

describe('SqliteEventStore group commit, an append that fills the disk', () => {
  it('leaves no other append of the commit written while its caller is told STORE_UNAVAILABLE', async () => {
    const store = new SqliteEventStore(join(mkdtempSync(join(tmpdir(), 'baton-revstore-')), 's.db'), { watchWal: false });
    stores.push(store);
    await store.append('s-1', [ev(1)], 'no_stream');
    // The disk is full: the file may not grow by more than a page (SQLITE_FULL, as on a full disk).
    const db = (store as unknown as { db: { pragma(sql: string, o?: object): unknown } }).db;
    db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 1}`);
    // Three callers share one commit; the first one's event does not fit, the others' are small.
    const calls = [
      store.append('s-2', [ev(2, { big: 'x'.repeat(64 * 1024) })], 'no_stream'),
      store.append('s-3', [ev(3)], 'no_stream'),
      store.append('s-4', [ev(4)], 'no_stream'),
    ];
    const outcomes = await Promise.allSettled(calls);
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(StoreUnavailableError);
    // Whatever the answer, it must be the truth: an append told it failed wrote nothing, and
    // one acknowledged is stored.
    const stored = new Set((await store.readAll()).map((e) => e.streamId));
    expect(['s-2', 's-3', 's-4'].map((s, i) => [s, outcomes[i].status === 'fulfilled', stored.has(s)])).toEqual([
      ['s-2', stored.has('s-2'), stored.has('s-2')],
      ['s-3', stored.has('s-3'), stored.has('s-3')],
      ['s-4', stored.has('s-4'), stored.has('s-4')],
    ]);
  });
});

describe('SqliteEventStore closed with appends in flight', () => {
  it('commits what was queued before close (and keeps it), and answers later appends STORE_UNAVAILABLE', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'baton-revstore-')), 'c.db');
    const store = new SqliteEventStore(file, { watchWal: false });
    const queued = [store.append('c-1', [ev(21)], 'no_stream'), store.append('c-2', [ev(22)], 'no_stream')];
    const closing = store.close();
    const late = store.append('c-3', [ev(23)], 'no_stream');
    await closing;
    const outcomes = await Promise.allSettled([...queued, late]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect((outcomes[2] as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
    await expect(store.readStream('c-1')).rejects.toBeInstanceOf(StoreUnavailableError);
    const reopened = new SqliteEventStore(file, { watchWal: false });
    stores.push(reopened);
    expect((await reopened.readAll()).map((e) => e.streamId)).toEqual(['c-1', 'c-2']);
  });
});
