import type { CatchUpFilter, EventStore } from './event-store.port.js';
import { type DurableProjection, type EventRegistry, type StoredEvent, readModelStreams } from './event-registry.js';
import type { ReadModelDb } from './read-model-db.js';

/** The read models' checkpoint in `rm_checkpoints`. */
export const READ_MODELS_CHECKPOINT = 'read-models';

/**
 * Events read and folded in one transaction while catching up (a rebuild): larger batches mean
 * fewer commits, and a read model that coalesces its writes within a batch (a workflow's dozen
 * events → one row written) writes less.
 */
export const CATCH_UP_BATCH = 2000;

/**
 * Folds batches of events into the durable read models (`@ReadModel`): one transaction of the
 * read-model database per batch, which also moves the checkpoint. The checkpoint is re-read in
 * the transaction and events at or below it are skipped, so instances sharing a file never apply
 * an event twice. Used by the ProjectionRunner (live batches and the catch-up at start) and by
 * `baton rebuild`.
 */
export class ReadModelFolder {
  private readonly batching: DurableProjection[];
  /** Folds one batch (rehydrated events; null for unknown types) and moves the checkpoint to `last`. */
  readonly apply: (events: Array<StoredEvent | null>, last: bigint) => void;

  constructor(
    private readonly rm: ReadModelDb,
    private readonly registry: EventRegistry,
    private readonly durable: Map<string, DurableProjection[]>,
  ) {
    this.batching = [...new Set([...durable.values()].flat())].filter((p) => typeof p.endBatch === 'function');
    const fold = rm.db.transaction((events: Array<StoredEvent | null>, last: bigint) => {
      // Re-read in the transaction: another instance on the same file may have moved it.
      const checkpoint = rm.checkpoint(READ_MODELS_CHECKPOINT);
      try {
        for (const event of events) {
          if (!event || event.recorded.position <= checkpoint) continue;
          const projections = durable.get(event.type);
          if (projections) for (const projection of projections) projection.project(event);
        }
        for (const projection of this.batching) projection.endBatch!();
      } catch (error) {
        for (const projection of this.batching) projection.abortBatch?.();
        throw error;
      }
      rm.saveCheckpoint(READ_MODELS_CHECKPOINT, last);
    });
    // BEGIN IMMEDIATE: the write lock is taken first, waiting for it as long as `busy_timeout`
    // allows. A deferred transaction reads the checkpoint, then fails at once with "database is
    // locked" when it comes to write after another instance on the file committed meanwhile (a
    // read snapshot cannot become a writer): the batch died and its subscription restarted after
    // 100 ms or more, which two instances on one file did several times a second.
    this.apply = (events, last) => fold.immediate(events, last);
  }

  /**
   * With a store that reads in bulk (`readCatchUp`): folds the log from the checkpoint up to its
   * head in batches of `CATCH_UP_BATCH`, decoding only the events some read model takes (and those
   * an upcaster may turn into one). Answers how many events of the log it went through, or null
   * when the store cannot read in bulk. `rehydrate` turns a read event into its class (null: an
   * unknown type); `skipped` is told the types passed over; `stopped` is asked between batches.
   */
  async catchUp(
    store: EventStore,
    hooks: { rehydrate: (recorded: Parameters<EventRegistry['rehydrate']>[0]) => StoredEvent | null; skipped?: (type: string) => void; stopped?: () => boolean },
  ): Promise<number | null> {
    if (!store.readCatchUp) return null;
    const wanted = this.catchUpFilter();
    let after = this.rm.checkpoint(READ_MODELS_CHECKPOINT);
    let read = 0;
    // Folding the whole log into empty tables: their secondary indexes are built once at the end
    // (sorted) instead of row by row.
    const deferred = after < 0n ? this.dropIndexes() : [];
    try {
      while (!hooks.stopped?.()) {
        const page = store.readCatchUp(after < 0n ? undefined : after, CATCH_UP_BATCH, wanted);
        if (hooks.skipped) for (const type of page.skippedTypes) hooks.skipped(type);
        if (page.last !== undefined && page.last > after) {
          this.apply(page.events.map(hooks.rehydrate), page.last);
          read += page.read;
          after = page.last;
        }
        if (page.done) break;
        // Lets timers and signals through between batches.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.createIndexes(deferred);
    }
    return read;
  }

  /**
   * The events a catch-up decodes: those of a type some read model takes, from the streams its
   * `@ReadModel` names (every stream when one of them names none), and every event of a type an
   * upcaster rewrites (it may become any type).
   */
  private catchUpFilter(): CatchUpFilter {
    const wanted = new Map<string, readonly string[] | null>();
    for (const [type, projections] of this.durable) {
      const streams = projections.map(readModelStreams);
      wanted.set(type, streams.includes(null) ? null : [...new Set(streams.flatMap((s) => s ?? []))]);
    }
    for (const type of this.registry.upcastTypes()) wanted.set(type, null);
    return wanted;
  }

  /**
   * Drops the non-unique secondary indexes of the read-model tables (`rm_*`), answering the
   * statements that create them again. Only done before folding into empty tables (checkpoint
   * -1): a crash before `createIndexes` loses nothing, as every read model's `migrate()` creates
   * its indexes again at the next start. Unique indexes and primary keys stay (they decide what
   * `INSERT OR IGNORE` ignores).
   */
  private dropIndexes(): string[] {
    const db = this.rm.db;
    return db
      .transaction(() => {
        const indexes = db
          .prepare<[], { name: string; sql: string }>(
            `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name LIKE 'rm\\_%' ESCAPE '\\' AND tbl_name != 'rm_checkpoints'`,
          )
          .all()
          .filter((index) => !/^\s*CREATE\s+UNIQUE\b/i.test(index.sql));
        for (const index of indexes) db.exec(`DROP INDEX IF EXISTS "${index.name}"`);
        return indexes.map((index) => index.sql.replace(/^\s*CREATE\s+INDEX\s+(IF\s+NOT\s+EXISTS\s+)?/i, 'CREATE INDEX IF NOT EXISTS '));
      })
      .immediate();
  }

  private createIndexes(statements: string[]): void {
    if (statements.length === 0) return;
    this.rm.db
      .transaction(() => {
        for (const sql of statements) this.rm.db.exec(sql);
      })
      .immediate();
  }
}
