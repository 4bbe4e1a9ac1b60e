import { type SqliteDatabase, createOwnerOnly, openWalDatabase, openingStatements, restrictToOwner } from './better-sqlite3.js';
import { type FSWatcher, watch } from 'node:fs';
import {
  AppendResult,
  CatchUpFilter,
  CatchUpPage,
  CommitInfo,
  EventHandler,
  type EventMetadata,
  type EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StoreUnavailableError,
  SubscribeOptions,
  Subscription,
  WrongExpectedRevisionError,
} from '../event-store.port.js';

interface EventRow {
  position: number;
  stream_id: string;
  revision: number;
  event_id: string;
  type: string;
  data: string;
  metadata: string;
  recorded_at: number;
}

type CatchUpRow = [position: number, type: string, streamId: string, revision: number, id: string, data: string, metadata: string, recordedAt: number];

interface PendingAppend {
  streamId: string;
  events: NewEvent[];
  expected: ExpectedRevision;
  resolve: (result: AppendResult) => void;
  reject: (error: unknown) => void;
}

export interface SqliteEventStoreOptions {
  /**
   * How often a caught-up subscription looks for events written by other processes, when no
   * change of the file's WAL woke it before (see `watchWal`).
   */
  pollIntervalMs?: number;
  /**
   * Watch the WAL file (inotify on Linux) and wake the subscriptions as soon as another connection
   * commits, instead of at the next poll. Default true for a file; the poll stays as the fallback.
   */
  watchWal?: boolean;
  /** Largest number of appends committed in one transaction. */
  maxBatch?: number;
}

/** The events of a category's streams (`readCategory`): a range of the (stream_id, revision) index, sorted by position. */
export const CATEGORY_SQL = 'SELECT * FROM events WHERE stream_id >= ? AND stream_id < ? ORDER BY position';

const PAGE = 512;
/** Quiet looks for another connection's commit after a change of the WAL file (`lookForOtherCommits`). */
const WAL_QUIET_LOOKS = 6;
/** Events this process committed last, kept for its own subscriptions (at most this many, and bytes). */
const RECENT_EVENTS = 4096;
const RECENT_BYTES = 16 * 1024 * 1024;
/** Per-stream tails kept for bounded forward reads (`StreamTails`): bytes in all, events a stream. */
const STREAM_TAILS_BYTES = 16 * 1024 * 1024;
const STREAM_TAIL_EVENTS = 256;

/**
 * What this process committed last, in position order: its subscriptions read a page from here
 * instead of the file when the page starts right after their checkpoint (`after + 1` is here).
 * Positions are unique, so a run of consecutive positions held here is exactly what the file
 * holds there; a commit by another process in between leaves a hole in the run, and the page
 * past the hole is read from the file.
 */
class RecentCommits {
  private events: RecordedEvent[] = [];
  private sizes: number[] = [];
  private start = 0;
  private bytes = 0;

  add(event: RecordedEvent, size: number): void {
    this.events.push(event);
    this.sizes.push(size);
    this.bytes += size;
    while (this.events.length - this.start > RECENT_EVENTS || (this.bytes > RECENT_BYTES && this.events.length - this.start > 1)) {
      this.bytes -= this.sizes[this.start];
      this.start++;
    }
    if (this.start > RECENT_EVENTS) {
      this.events = this.events.slice(this.start);
      this.sizes = this.sizes.slice(this.start);
      this.start = 0;
    }
  }

  /**
   * The events at positions after+1, after+2, ... held here (up to `limit`), and whether the run
   * stopped at a hole (events of another process follow it in the file).
   */
  after(after: bigint, limit: number): { events: RecordedEvent[]; hole: boolean } | null {
    const want = after + 1n;
    let lo = this.start;
    let hi = this.events.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const p = this.events[mid].position;
      if (p === want) {
        const run: RecordedEvent[] = [];
        let i = mid;
        let next = want;
        while (i < this.events.length && run.length < limit && this.events[i].position === next) {
          run.push(this.events[i]);
          i++;
          next++;
        }
        return { events: run, hole: i < this.events.length && run.length < limit };
      }
      if (p < want) lo = mid + 1;
      else hi = mid - 1;
    }
    return null;
  }
}

interface StreamTail {
  events: RecordedEvent[];
  sizes: number[];
  bytes: number;
}

/**
 * The latest events of the streams this process wrote or read last, per stream, for bounded
 * forward reads (a decision claim reads the run it hands a worker: a workflow's whole run while
 * it is small, else the events since the previous decision). Streams are evicted whole, least
 * recently touched first, past a byte budget; each keeps at most its newest
 * `STREAM_TAIL_EVENTS`. Revisions are immutable once written, so a run of consecutive revisions
 * held here is what the file holds; another process's appends to the stream leave a gap (or
 * revisions past the tail), and such a read goes to the file.
 */
class StreamTails {
  private readonly streams = new Map<string, StreamTail>();
  private bytes = 0;

  /** Records an event this process committed. */
  add(event: RecordedEvent, size: number): void {
    const tail = this.touch(event.streamId);
    tail.events.push(event);
    tail.sizes.push(size);
    tail.bytes += size;
    this.bytes += size;
    this.trim(tail);
  }

  /** Seeds a stream not held from a forward read of the file (`events` in revision order). */
  seed(streamId: string, events: RecordedEvent[], sizes: number[]): void {
    if (events.length === 0 || this.streams.has(streamId)) return;
    const tail: StreamTail = { events, sizes, bytes: sizes.reduce((n, s) => n + s, 0) };
    this.streams.set(streamId, tail);
    this.bytes += tail.bytes;
    this.trim(tail);
  }

  /** A deleted stream is read from the file from now on. */
  forget(streamId: string): void {
    const tail = this.streams.get(streamId);
    if (!tail) return;
    this.bytes -= tail.bytes;
    this.streams.delete(streamId);
  }

  /** Revisions from..from+count-1 of a stream when every one of them is held here, else null. */
  range(streamId: string, from: bigint, count: number): RecordedEvent[] | null {
    const list = this.streams.get(streamId)?.events;
    if (!list || count <= 0 || list.length === 0) return null;
    // Most often the list is contiguous: index straight in, and check the run below.
    let first = Number(from - list[0].revision);
    if (first < 0) return null;
    if (first >= list.length || list[first].revision !== from) first = list.findIndex((e) => e.revision === from);
    if (first < 0 || first + count > list.length) return null;
    const run = list.slice(first, first + count);
    for (let i = 1; i < run.length; i++) if (run[i].revision !== run[i - 1].revision + 1n) return null;
    this.touch(streamId);
    return run;
  }

  private touch(streamId: string): StreamTail {
    let tail = this.streams.get(streamId);
    if (tail) this.streams.delete(streamId);
    else tail = { events: [], sizes: [], bytes: 0 };
    this.streams.set(streamId, tail);
    return tail;
  }

  private trim(tail: StreamTail): void {
    const excess = tail.events.length - STREAM_TAIL_EVENTS;
    if (excess > 0) {
      const dropped = tail.sizes.splice(0, excess).reduce((n, s) => n + s, 0);
      tail.events.splice(0, excess);
      tail.bytes -= dropped;
      this.bytes -= dropped;
    }
    if (this.bytes <= STREAM_TAILS_BYTES) return;
    for (const [streamId, oldest] of this.streams) {
      if (this.bytes <= STREAM_TAILS_BYTES || oldest === tail) break;
      this.bytes -= oldest.bytes;
      this.streams.delete(streamId);
    }
  }
}

/**
 * The embedded event store: one SQLite file in WAL mode with `synchronous=FULL`, so an
 * acknowledged append survives a power cut. Appends that arrive while a commit is being
 * prepared share one transaction (group commit); each caller still gets its own result or
 * conflict. Several processes may open the same file: positions come from one
 * AUTOINCREMENT key assigned under SQLite's single writer lock, so commit order is position
 * order, and caught-up subscriptions learn of positions written elsewhere from a watch of the
 * WAL file (`watchWal`), or by polling.
 */
export class SqliteEventStore implements EventStore {
  readonly kind = 'sqlite';
  private readonly db: SqliteDatabase;
  private readonly pollIntervalMs: number;
  private readonly maxBatch: number;
  private queue: PendingAppend[] = [];
  private flushScheduled = false;
  private closed = false;
  private readonly wakers = new Set<() => void>();
  private readonly subscriptions = new Set<SqliteSubscription>();
  private readonly stmt: ReturnType<SqliteEventStore['prepare']>;
  private readonly commitListeners: Array<(commit: CommitInfo) => void> = [];
  private readonly recent = new RecentCommits();
  private readonly tails = new StreamTails();
  /** Rows written by the transaction being committed (kept in memory once it has). */
  private written: EventRow[] = [];
  /** The WAL file's watcher (null: not watched, undefined: not started yet). */
  private walWatcher: FSWatcher | null | undefined;
  /** `lookForOtherCommits`: a look scheduled for this turn, the next one after a backoff, and how many looks in a row found nothing. */
  private walLookSoon = false;
  private walLookLater: ReturnType<typeof setTimeout> | undefined;
  private walQuietLooks = 0;
  private wakes = 0;
  /** `PRAGMA data_version` when last looked at: it changes when another connection commits. */
  private dataVersion = 0;
  /**
   * The newest event position the subscriptions were woken for: this process's last commit, or
   * the head found by a look after another connection's commit. A commit that added no event
   * (this process's read models, in the same file) wakes nobody.
   */
  private wokenHead = 0;

  constructor(readonly file: string, options: SqliteEventStoreOptions = {}) {
    createOwnerOnly(file);
    this.db = openWalDatabase(file, 'FULL');
    restrictToOwner(file);
    openingStatements(() => this.db.exec(`
      CREATE TABLE IF NOT EXISTS events (
        position    INTEGER PRIMARY KEY AUTOINCREMENT,
        stream_id   TEXT    NOT NULL,
        revision    INTEGER NOT NULL,
        event_id    TEXT    NOT NULL UNIQUE,
        type        TEXT    NOT NULL,
        data        TEXT    NOT NULL,
        metadata    TEXT    NOT NULL,
        recorded_at INTEGER NOT NULL,
        UNIQUE (stream_id, revision)
      );
      CREATE TABLE IF NOT EXISTS deleted_streams (stream_id TEXT PRIMARY KEY) WITHOUT ROWID;
      -- Deleted streams remembered only while their owner's stream is stored (deleteStream's \`owner\`).
      CREATE TABLE IF NOT EXISTS deleted_owned_streams (stream_id TEXT PRIMARY KEY, owner TEXT NOT NULL) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS deleted_owned_streams_owner ON deleted_owned_streams (owner);
    `));
    this.pollIntervalMs = options.pollIntervalMs ?? 50;
    this.maxBatch = options.maxBatch ?? 1000;
    this.stmt = this.prepare();
    this.dataVersion = this.stmt.dataVersion.get()!;
    this.wokenHead = this.stmt.maxPosition.get()?.position ?? 0;
    if (file === ':memory:' || options.watchWal === false) this.walWatcher = null;
    else this.watchWal();
  }

  /**
   * Wakes the caught-up subscriptions when another connection (another instance on this file, or
   * this process's read models) commits events: the WAL file changes, `data_version` tells another
   * connection's commit from this one's own, and the log's head whether it added events. Without
   * a watcher (no WAL file yet, a filesystem that does not report changes) the subscriptions poll
   * every `pollIntervalMs`.
   */
  private watchWal(): void {
    if (this.walWatcher !== undefined || this.closed) return;
    try {
      this.walWatcher = watch(`${this.file}-wal`, { persistent: false }, () => this.walChanged());
      this.walWatcher.on('error', () => {
        this.walWatcher?.close();
        this.walWatcher = null;
      });
    } catch {
      // No WAL file yet: tried again after this process's next commit creates it.
      this.walWatcher = undefined;
    }
  }

  private walChanged(): void {
    // Writes are landing: look at once (the backoff starts over), once per turn of the event loop.
    this.walQuietLooks = 0;
    if (this.walLookSoon || this.closed) return;
    this.walLookSoon = true;
    clearTimeout(this.walLookLater);
    setImmediate(() => {
      this.walLookSoon = false;
      this.lookForOtherCommits();
    });
  }

  /**
   * A writer's frames reach the WAL before its commit is visible (the WAL's fsync, then the index
   * in shared memory, which reports no change), so one look is not enough: after a change of the
   * WAL it looks again after 1, 2, 4… ms, starting over at each new change or newly visible
   * commit, until about 120 ms pass quietly; a commit slower than that to become visible is left
   * to the poll.
   */
  private lookForOtherCommits(): void {
    if (this.closed) return;
    const version = this.stmt.dataVersion.get()!;
    if (version !== this.dataVersion) {
      this.dataVersion = version;
      this.walQuietLooks = 0;
      // Most such commits are this process's own read models: their subscriptions would each
      // read a page of the log for nothing. One look at the head tells.
      const head = this.stmt.maxPosition.get()?.position ?? 0;
      if (head > this.wokenHead) {
        this.wokenHead = head;
        this.wake();
      }
    } else if (++this.walQuietLooks > WAL_QUIET_LOOKS) {
      return;
    }
    clearTimeout(this.walLookLater);
    this.walLookLater = setTimeout(() => this.lookForOtherCommits(), 2 ** this.walQuietLooks).unref();
  }

  private prepare() {
    return {
      head: this.db.prepare<[string], { revision: number | null }>(
        'SELECT max(revision) AS revision FROM events WHERE stream_id = ?',
      ),
      byEventId: this.db.prepare<[string], { stream_id: string; revision: number; position: number }>(
        'SELECT stream_id, revision, position FROM events WHERE event_id = ?',
      ),
      insert: this.db.prepare(
        `INSERT INTO events (stream_id, revision, event_id, type, data, metadata, recorded_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      forwards: this.db.prepare<[string, number, number], EventRow>(
        'SELECT * FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision ASC LIMIT ?',
      ),
      backwards: this.db.prepare<[string, number, number], EventRow>(
        'SELECT * FROM events WHERE stream_id = ? AND revision <= ? ORDER BY revision DESC LIMIT ?',
      ),
      all: this.db.prepare<[number, number], EventRow>(
        'SELECT * FROM events WHERE position > ? ORDER BY position ASC LIMIT ?',
      ),
      maxPosition: this.db.prepare<[], { position: number | null }>(
        'SELECT max(position) AS position FROM events',
      ),
      deleteStream: this.db.prepare<[string]>('DELETE FROM events WHERE stream_id = ?'),
      rememberDeleted: this.db.prepare<[string]>('INSERT OR IGNORE INTO deleted_streams (stream_id) VALUES (?)'),
      // Only while the owner still has events: deleted before, it can no longer ask (its rows went with it).
      rememberOwned: this.db.prepare<[string, string, string]>(
        'INSERT OR IGNORE INTO deleted_owned_streams (stream_id, owner) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM events WHERE stream_id = ?)',
      ),
      forgetOwnedBy: this.db.prepare<[string]>('DELETE FROM deleted_owned_streams WHERE owner = ?'),
      wasDeleted: this.db
        .prepare<[string, string], number>(
          'SELECT 1 FROM deleted_streams WHERE stream_id = ? UNION ALL SELECT 1 FROM deleted_owned_streams WHERE stream_id = ? LIMIT 1',
        )
        .pluck(),
      deleteStreamAt: this.db.prepare<[string, string, number]>(
        'DELETE FROM events WHERE stream_id = ? AND (SELECT max(revision) FROM events WHERE stream_id = ?) = ?',
      ),
      category: this.db.prepare<[string, string], EventRow>(CATEGORY_SQL),
      dataVersion: this.db.prepare<[], number>('PRAGMA data_version').pluck(),
      // One index search per stream (the list's ids are looked up in index order, so no sort).
      replayStreams: this.db
        .prepare<[string, number], CatchUpRow>(
          'SELECT position, type, stream_id, revision, event_id, data, metadata, recorded_at FROM events WHERE stream_id IN (SELECT value FROM json_each(?)) AND position <= ? ORDER BY stream_id, revision',
        )
        .raw(),
      catchUp: this.db
        .prepare<[number, number], CatchUpRow>(
          'SELECT position, type, stream_id, revision, event_id, data, metadata, recorded_at FROM events WHERE position > ? ORDER BY position ASC LIMIT ?',
        )
        .raw(),
    };
  }

  readCatchUp(after: bigint | undefined, maxCount: number, wanted: CatchUpFilter): CatchUpPage {
    this.assertOpen();
    const rows = this.stmt.catchUp.all(after === undefined ? 0 : Number(after), maxCount);
    const events: RecordedEvent[] = [];
    const skippedTypes = new Set<string>();
    for (const row of rows) {
      const [, type, streamId] = row;
      // Only the events some read model takes are decoded.
      const streams = wanted.get(type);
      if (streams === undefined) {
        skippedTypes.add(type);
        continue;
      }
      if (streams !== null && !startsWithAny(streamId, streams)) continue;
      events.push(new CatchUpEvent(...row));
    }
    return {
      events,
      read: rows.length,
      last: rows.length > 0 ? BigInt(rows[rows.length - 1][0]) : after,
      done: rows.length < maxCount,
      skippedTypes,
    };
  }

  replayStreams(streamIds: readonly string[], upTo: bigint, visit: (event: RecordedEvent) => void): void {
    this.assertOpen();
    if (streamIds.length === 0 || upTo < 0n) return;
    const rows = this.stmt.replayStreams.iterate(JSON.stringify(streamIds), Number(upTo));
    for (const row of rows) visit(new CatchUpEvent(...row));
  }

  append(streamId: string, events: NewEvent[], expected: ExpectedRevision = 'any'): Promise<AppendResult> {
    if (this.closed) return Promise.reject(new StoreUnavailableError('event store is closed'));
    if (events.length === 0) return Promise.reject(new Error('append needs at least one event'));
    return new Promise<AppendResult>((resolve, reject) => {
      this.queue.push({ streamId, events, expected, resolve, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  onCommit(listener: (commit: CommitInfo) => void): void {
    this.commitListeners.push(listener);
  }

  private flush(): void {
    this.flushScheduled = false;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      const started = process.hrtime.bigint();
      const outcomes: Array<{ ok: true; value: AppendResult } | { ok: false; error: unknown }> = [];
      const appendOne = this.db.transaction((pending: PendingAppend) => this.write(pending));
      const commit = this.db.transaction(() => {
        outcomes.length = 0;
        for (const pending of batch) {
          try {
            outcomes.push({ ok: true, value: appendOne(pending) });
          } catch (error) {
            if (!(error instanceof Recheck)) {
              // A fault (disk full, I/O error) may roll the whole transaction back, not only this
              // caller's savepoint: the appends after it would then each commit on their own,
              // outside the group, while the commit failing tells every caller otherwise. The
              // whole group fails instead (STORE_UNAVAILABLE, nothing written).
              if (!this.db.inTransaction) throw error;
              outcomes.push({ ok: false, error: isStoreFault(error) ? new StoreUnavailableError(`sqlite append failed: ${(error as Error).message}`, { cause: error }) : error });
              continue;
            }
            // This caller's rows are undone (its savepoint): a retry, or a conflict, read as such.
            try {
              outcomes.push({ ok: true, value: this.recheck(pending, error.cause) });
            } catch (failure) {
              outcomes.push({ ok: false, error: failure });
            }
          }
        }
      });
      this.written = [];
      try {
        commit.immediate();
      } catch (error) {
        this.written = [];
        const failure = new StoreUnavailableError(`sqlite commit failed: ${(error as Error).message}`, { cause: error });
        for (const pending of batch) pending.reject(failure);
        continue;
      }
      // Kept for this process's readers as their JSON, parsed when first read: most are never
      // read from here (a subscription page that reads them, the next claim of their run).
      if (this.written.length > 0) this.wokenHead = this.written[this.written.length - 1].position;
      for (const row of this.written) {
        const event = new CatchUpEvent(row.position, row.type, row.stream_id, row.revision, row.event_id, row.data, row.metadata, row.recorded_at);
        const size = row.data.length + row.metadata.length;
        this.recent.add(event, size);
        this.tails.add(event, size);
      }
      this.written = [];
      batch.forEach((pending, i) => {
        const outcome = outcomes[i];
        if (outcome.ok) pending.resolve(outcome.value);
        else pending.reject(outcome.error);
      });
      if (this.commitListeners.length > 0) {
        const commit: CommitInfo = {
          appends: batch.length,
          events: batch.reduce((n, p, i) => n + (outcomes[i].ok ? p.events.length : 0), 0),
          failed: outcomes.filter((o) => !o.ok).length,
          seconds: Number(process.hrtime.bigint() - started) / 1e9,
        };
        for (const listener of this.commitListeners) listener(commit);
      }
    }
    if (this.walWatcher === undefined) this.watchWal();
    this.wake();
  }

  /**
   * Runs inside a savepoint: a throw undoes only this caller's append. The common case costs one
   * index read (the stream's head; none for `no_stream`, which inserts revision 0 and lets the
   * stream's unique key say whether the stream exists) and the inserts: an append whose events were
   * stored before (a retry) or whose expected revision does not hold is told apart afterwards, by
   * `recheck`, outside the savepoint.
   */
  private write({ streamId, events, expected }: PendingAppend): AppendResult {
    let head: number | null = null;
    if (expected !== 'no_stream') {
      head = this.stmt.head.get(streamId)?.revision ?? null;
      if (!satisfies(expected, head)) throw new Recheck(null);
    }
    const now = Date.now();
    let revision = head === null ? -1 : head;
    let position = 0n;
    const written: EventRow[] = [];
    for (const event of events) {
      revision += 1;
      const data = JSON.stringify(event.data ?? null);
      const metadata = JSON.stringify(event.metadata ?? {});
      let info;
      try {
        info = this.stmt.insert.run(streamId, revision, event.id, event.type, data, metadata, now);
      } catch (error) {
        if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new Recheck(error);
        throw error;
      }
      position = BigInt(info.lastInsertRowid);
      written.push({ position: Number(position), stream_id: streamId, revision, event_id: event.id, type: event.type, data, metadata, recorded_at: now });
    }
    // Kept only now: a throw above undoes this caller's rows, and they must not be kept either.
    this.written.push(...written);
    return { nextExpectedRevision: BigInt(revision), position };
  }

  /**
   * An append that hit a unique key or whose expected revision did not hold, its own rows undone:
   * the same events stored before answer as their first append did; else a wrong expected revision
   * is a conflict, and any other clash (an event id stored before, not first) is this caller's error.
   */
  private recheck({ streamId, events, expected }: PendingAppend, cause: unknown): AppendResult {
    const existing = this.stmt.byEventId.get(events[0].id);
    if (existing) return this.replayedAppend(streamId, events, existing);
    const head = this.stmt.head.get(streamId)?.revision ?? null;
    if (cause === null || !satisfies(expected, head)) throw new WrongExpectedRevisionError(streamId, expected, head === null ? 'no_stream' : BigInt(head));
    throw cause;
  }

  /** The same events appended again (a retry after a timeout): answer as the first append did. */
  private replayedAppend(
    streamId: string,
    events: NewEvent[],
    first: { stream_id: string; revision: number; position: number },
  ): AppendResult {
    let last = first;
    for (const event of events.slice(1)) {
      const row = this.stmt.byEventId.get(event.id);
      if (!row) throw new WrongExpectedRevisionError(streamId, 'any', BigInt(last.revision));
      last = row;
    }
    if (first.stream_id !== streamId) {
      throw new Error(`event ${events[0].id} is already stored in another stream`);
    }
    return { nextExpectedRevision: BigInt(last.revision), position: BigInt(last.position) };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const limit = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    // A bounded forward read of what this process just committed (a decision's new events).
    const bounded = options.direction !== 'backwards' && options.maxCount !== undefined && options.maxCount <= STREAM_TAIL_EVENTS;
    if (bounded) {
      const held = this.tails.range(streamId, options.fromRevision ?? 0n, options.maxCount!);
      if (held) {
        // Another process may have deleted the stream (retention) since: one look at its head
        // (an index seek, no row read) tells, before its `WorkflowsExpired` reaches this process.
        const head = this.stmt.head.get(streamId)?.revision ?? null;
        if (head !== null && BigInt(head) >= held[held.length - 1].revision) return held;
        this.tails.forget(streamId);
      }
    }
    const rows =
      options.direction === 'backwards'
        ? this.stmt.backwards.all(streamId, options.fromRevision === undefined ? Number.MAX_SAFE_INTEGER : Number(options.fromRevision), limit)
        : this.stmt.forwards.all(streamId, options.fromRevision === undefined ? 0 : Number(options.fromRevision), limit);
    const events = rows.map(toRecorded);
    // The next claim of this run reads it again, with what this process appends meanwhile.
    if (bounded) this.tails.seed(streamId, events.slice(), rows.map((r) => r.data.length + r.metadata.length));
    return events;
  }

  async streamLength(streamId: string): Promise<number> {
    this.assertOpen();
    const revision = this.stmt.head.get(streamId)?.revision ?? null;
    return revision === null ? 0 : revision + 1;
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.stmt.all.all(options.after === undefined ? 0 : Number(options.after), options.maxCount ?? PAGE).map(toRecorded);
  }

  /**
   * Synchronous page read from the file, used by subscriptions. Data and metadata are parsed when
   * first read: the effects reactor reacts to a few types and passes over the rest, and after a
   * restart it walks the log from its own checkpoint.
   */
  readPage(after: bigint | undefined, limit: number): RecordedEvent[] {
    return this.stmt.catchUp.all(after === undefined ? 0 : Number(after), limit).map((row) => new CatchUpEvent(...row));
  }

  /**
   * A subscription's next page: from what this process just committed when the page starts
   * there (no read, no parse), else from the file. A run from memory that ends at a hole goes
   * on from the file; one that ends at the newest local commit is as far as this process knows
   * (other processes' later commits are found by the poll, as after any read).
   */
  nextPage(after: bigint | undefined, limit: number): RecordedEvent[] {
    const held = after === undefined ? null : this.recent.after(after, limit);
    if (!held) return this.readPage(after, limit);
    if (!held.hole) return held.events;
    return held.events.concat(this.readPage(held.events[held.events.length - 1].position, limit - held.events.length));
  }

  subscribe(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    this.assertOpen();
    const subscription = new SqliteSubscription(this, handler, options, this.pollIntervalMs);
    this.subscriptions.add(subscription);
    void subscription.run().finally(() => this.subscriptions.delete(subscription));
    return subscription;
  }

  /** Registers a one-shot waker called after the next commit seen here (this process's, or another connection's through the WAL's watch). */
  onNextCommit(waker: () => void): () => void {
    this.wakers.add(waker);
    return () => this.wakers.delete(waker);
  }

  /**
   * Counts the wakes: a subscription that notes it before reading a page and finds it moved when
   * it is about to wait has missed a wake while it was busy, and reads again instead.
   */
  get commitsSeen(): number {
    return this.wakes;
  }

  private wake(): void {
    this.wakes++;
    const wakers = [...this.wakers];
    this.wakers.clear();
    for (const waker of wakers) waker();
  }

  async readCategory(prefix: string): Promise<RecordedEvent[]> {
    this.assertOpen();
    if (prefix === '') throw new Error('readCategory needs a prefix');
    // The ids from `prefix` up to, not including, the prefix with its last character moved on one.
    const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
    return this.stmt.category.all(prefix, end).map(toRecorded);
  }

  /**
   * Deletes the stream's rows (retention), and with `remember` keeps its id (`wasDeleted`) in the
   * same transaction: with `owner`, only while the owner's stream has events, and until the owner
   * is deleted (what any stream deleted here owned is forgotten with it: one index probe).
   * AUTOINCREMENT never reuses their positions.
   */
  async deleteStream(streamId: string, options: { expectedRevision?: bigint; remember?: boolean; owner?: string } = {}): Promise<number> {
    this.assertOpen();
    this.tails.forget(streamId);
    return this.db.transaction(() => {
      const removed =
        options.expectedRevision !== undefined
          ? this.stmt.deleteStreamAt.run(streamId, streamId, Number(options.expectedRevision)).changes
          : this.stmt.deleteStream.run(streamId).changes;
      if (removed > 0) {
        if (options.remember && options.owner !== undefined) this.stmt.rememberOwned.run(streamId, options.owner, options.owner);
        else if (options.remember) this.stmt.rememberDeleted.run(streamId);
        this.stmt.forgetOwnedBy.run(streamId);
      }
      return removed;
    })();
  }

  async wasDeleted(streamId: string): Promise<boolean> {
    this.assertOpen();
    return this.stmt.wasDeleted.get(streamId, streamId) === 1;
  }

  forgetStream(streamId: string): void {
    this.tails.forget(streamId);
  }

  async headPosition(): Promise<bigint | undefined> {
    this.assertOpen();
    const position = this.stmt.maxPosition.get()?.position ?? null;
    return position === null ? undefined : BigInt(position);
  }

  async ping(): Promise<void> {
    try {
      this.assertOpen();
      this.db.prepare('SELECT 1').get();
    } catch (error) {
      throw new StoreUnavailableError(`sqlite store unavailable: ${(error as Error).message}`, { cause: error });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.queue.length > 0) this.flush();
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    this.closed = true;
    this.walWatcher?.close();
    clearTimeout(this.walLookLater);
    this.wake();
    this.db.close();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreUnavailableError('event store is closed');
  }
}

class SqliteSubscription implements Subscription {
  checkpoint: bigint | undefined;
  private stopped = false;
  private wakeNow: (() => void) | undefined;
  private done: Promise<void> | undefined;

  constructor(
    private readonly store: SqliteEventStore,
    private readonly handler: EventHandler,
    private readonly options: SubscribeOptions,
    private readonly pollIntervalMs: number,
  ) {
    this.checkpoint = options.after;
  }

  run(): Promise<void> {
    this.done = this.loop();
    return this.done;
  }

  private async loop(): Promise<void> {
    let caughtUp = false;
    const prefixes = this.options.streamPrefixes;
    try {
      while (!this.stopped && !this.store.isClosed) {
        const seen = this.store.commitsSeen;
        const page = this.store.nextPage(this.checkpoint, PAGE);
        for (const event of page) {
          if (this.stopped) return;
          if (!prefixes || prefixes.some((p) => event.streamId.startsWith(p))) await this.handler(event);
          this.checkpoint = event.position;
        }
        if (page.length === PAGE) {
          // Catching up: let timers and I/O through between pages (a handler that never waits on
          // I/O would otherwise hold the event loop until the whole log was read).
          await new Promise<void>((resolve) => setImmediate(resolve));
          continue;
        }
        if (!caughtUp) {
          caughtUp = true;
          this.options.onCaughtUp?.();
        }
        // A commit while the page's handlers ran woke nobody: read again at once.
        if (this.store.commitsSeen === seen) await this.idle();
      }
    } catch (error) {
      if (!this.stopped && !this.store.isClosed) this.options.onError?.(error as Error);
    }
  }

  /** Waits for the next commit seen here, or for the poll interval (commits by other processes when the WAL is not watched). */
  private idle(): Promise<void> {
    return new Promise<void>((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        cancel();
        this.wakeNow = undefined;
        resolve();
      };
      const timer = setTimeout(finish, this.pollIntervalMs);
      const cancel = this.store.onNextCommit(finish);
      this.wakeNow = finish;
    });
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.wakeNow?.();
    await this.done;
  }
}

function recorded(...[position, type, streamId, revision, id, data, metadata, recordedAt]: CatchUpRow): RecordedEvent {
  return {
    id,
    type,
    streamId,
    revision: BigInt(revision),
    position: BigInt(position),
    data: JSON.parse(data),
    metadata: JSON.parse(metadata),
    recordedAt: new Date(recordedAt),
  };
}

/**
 * An event read from the file in bulk (a catch-up page, a subscription's page, a replay of
 * streams): its data and metadata are parsed when first read. Of the read models only the audit
 * log reads metadata, for a few types, and it is the larger half of most events' JSON; a read
 * model that takes a type but passes over most of its events (the tasks read model and a
 * workflow's task events) never reads their data, and the effects reactor reads only the data of
 * the few types it reacts to.
 */
class CatchUpEvent implements RecordedEvent {
  readonly revision: bigint;
  readonly position: bigint;
  readonly recordedAt: Date;
  #dataText: string;
  #data: unknown;
  #parsed = false;
  #metadataText: string;
  #metadata: EventMetadata | undefined;

  constructor(position: number, readonly type: string, readonly streamId: string, revision: number, readonly id: string, data: string, metadata: string, recordedAt: number) {
    this.revision = BigInt(revision);
    this.position = BigInt(position);
    this.recordedAt = new Date(recordedAt);
    this.#dataText = data;
    this.#metadataText = metadata;
  }

  get data(): unknown {
    if (!this.#parsed) {
      this.#data = JSON.parse(this.#dataText);
      this.#parsed = true;
    }
    return this.#data;
  }

  get metadata(): EventMetadata {
    return (this.#metadata ??= JSON.parse(this.#metadataText) as EventMetadata);
  }
}

function startsWithAny(text: string, prefixes: readonly string[]): boolean {
  for (const prefix of prefixes) if (text.startsWith(prefix)) return true;
  return false;
}

function toRecorded(row: EventRow): RecordedEvent {
  return recorded(row.position, row.type, row.stream_id, row.revision, row.event_id, row.data, row.metadata, row.recorded_at);
}

/** Whether a stream whose last revision is `head` (null: no stream) may be appended to as `expected` says. */
function satisfies(expected: ExpectedRevision, head: number | null): boolean {
  return (
    expected === 'any' ||
    (expected === 'no_stream' && head === null) ||
    (expected === 'stream_exists' && head !== null) ||
    (typeof expected === 'bigint' && head !== null && expected === BigInt(head))
  );
}

/** Thrown out of an append's savepoint (undoing its rows) for `SqliteEventStore.recheck`. */
class Recheck extends Error {
  constructor(readonly cause: unknown) {
    super('recheck the append');
  }
}


/** SQLite's answers that say the store failed (disk full, I/O, locked, read-only), not that the append is wrong. */
const STORE_FAULTS = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|NOMEM|READONLY|CANTOPEN|CORRUPT|NOTADB|PROTOCOL|INTERRUPT)(_|$)/;

function isStoreFault(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && STORE_FAULTS.test(code);
}
