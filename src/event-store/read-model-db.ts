import type BetterSqlite3 from 'better-sqlite3';
import { createOwnerOnly, openWalDatabase, openingStatements, restrictToOwner } from './sqlite/better-sqlite3.js';

/**
 * The SQLite database the durable read models and the effects reactor's checkpoint live in.
 * With the embedded store it is the store's own file (tables `rm_*`, next to `events`), shared
 * by every instance on that file: a batch is applied only past the shared checkpoint, in the
 * same transaction that moves it, so two instances never apply an event twice. Next to
 * EventStoreDB it is a file per instance (`READ_MODEL_PATH`, default
 * `./data/read-models-<host>.db`).
 */
export class ReadModelDb {
  readonly db: BetterSqlite3.Database;
  private readonly getCheckpoint: BetterSqlite3.Statement<[string], { position: number }>;
  private readonly putCheckpoint: BetterSqlite3.Statement<[string, number]>;

  constructor(readonly file: string) {
    // It holds what the store does (every app's inputs and outputs, the tokens' hashes): owner-only too.
    createOwnerOnly(file);
    // The log is the source of truth: a read model lost in a power cut is rebuilt from its
    // checkpoint, so its commits need not wait for the disk.
    this.db = openWalDatabase(file, 'NORMAL');
    restrictToOwner(file);
    openingStatements(() => this.db.exec(`CREATE TABLE IF NOT EXISTS rm_checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL)`));
    this.getCheckpoint = this.db.prepare('SELECT position FROM rm_checkpoints WHERE name = ?');
    this.putCheckpoint = this.db.prepare(
      `INSERT INTO rm_checkpoints (name, position) VALUES (?, ?)
       ON CONFLICT (name) DO UPDATE SET position = max(position, excluded.position)`,
    );
  }

  /** The last position folded into `name` (-1 when nothing was). */
  checkpoint(name: string): bigint {
    const row = this.getCheckpoint.get(name);
    return row ? BigInt(row.position) : -1n;
  }

  /** Moves `name` forward to `position` (never back). */
  saveCheckpoint(name: string, position: bigint): void {
    this.putCheckpoint.run(name, Number(position));
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

export const READ_MODEL_DB = Symbol('READ_MODEL_DB');

/** JSON text column helpers. */
export const toJson = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));
export const fromJson = <T>(text: string | null): T | undefined => (text === null ? undefined : (JSON.parse(text) as T));

/**
 * Counts stop here (`totalCount`, `workflowCounts`): past it, a count would read an index entry
 * for every matching row, and a query's cost would grow with the store.
 */
export const QUERY_COUNT_CAP = 10_000;

/**
 * How many rows of `table` match `clause`, counted up to `QUERY_COUNT_CAP` (one more is read to know
 * whether the count stopped): the cost is bounded by the cap, not by the table.
 */
export function cappedCount(rm: ReadModelDb, table: string, clause: string, params: Record<string, unknown>): { count: number; capped: boolean } {
  const { n } = rm.db.prepare(`SELECT count(*) AS n FROM (SELECT 1 FROM ${table} WHERE ${clause} LIMIT ${QUERY_COUNT_CAP + 1})`).get(params) as { n: number };
  return n > QUERY_COUNT_CAP ? { count: QUERY_COUNT_CAP, capped: true } : { count: n, capped: false };
}

/**
 * The conditions of a read-model query scoped to one app and environment; `add` appends a clause
 * only when its value is given (filters whose fields are optional).
 */
export function scopedFilter(appId: string, environment: string) {
  const where = ['app_id = @appId', 'environment = @environment'];
  const params: Record<string, unknown> = { appId, environment };
  return {
    where,
    params,
    add(clause: string, key: string, value: unknown): void {
      if (value == null) return;
      where.push(clause);
      params[key] = value;
    },
  };
}

/**
 * Writes whole rows of one table for the read models that fold a batch in memory (write-back):
 * an INSERT of every column for a new row, and for a row that was read an UPDATE of the columns
 * whose values changed only (so SQLite maintains only the indexes over those columns, as the
 * per-event statements did), with a statement prepared once per set of columns.
 */
export class RowWriter<Row extends object> {
  private readonly insertStatement: BetterSqlite3.Statement<unknown[]>;
  private readonly updates = new Map<string, BetterSqlite3.Statement<unknown[]>>();

  constructor(
    private readonly db: BetterSqlite3.Database,
    private readonly table: string,
    private readonly key: keyof Row & string,
    private readonly columns: ReadonlyArray<keyof Row & string>,
  ) {
    this.insertStatement = db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`);
  }

  insert(row: Row): void {
    this.insertStatement.run(...this.columns.map((c) => row[c] as unknown));
  }

  /** Writes the columns of `row` that differ from `before` (nothing when none does). */
  update(before: Row, row: Row): void {
    const changed = this.columns.filter((c) => c !== this.key && row[c] !== before[c]);
    if (changed.length === 0) return;
    const signature = changed.join(',');
    let statement = this.updates.get(signature);
    if (!statement) {
      statement = this.db.prepare(`UPDATE ${this.table} SET ${changed.map((c) => `${c} = ?`).join(', ')} WHERE ${this.key} = ?`);
      this.updates.set(signature, statement);
    }
    statement.run(...changed.map((c) => row[c] as unknown), row[this.key] as unknown);
  }
}

/** A row as a batch holds it until the batch ends: `row` null when there is none, `before` the row as the table held it when the batch first read it (null: none). */
export interface PendingRow<Row> {
  row: Row | null;
  before: Row | null;
  dirty: boolean;
}

/**
 * The rows a read model's batch touched, folded in memory and written once when the batch ends
 * (a workflow's dozen events in one batch cost one row write, not one per event).
 */
export class RowBatch<Row extends object> {
  private pending = new Map<string, PendingRow<Row>>();

  constructor(
    private readonly read: (id: string) => Row | undefined,
    private readonly writer: RowWriter<Row>,
    /** Deletes a row the batch set to null (rows are never deleted without it). */
    private readonly remove?: (id: string) => void,
  ) {}

  /** The batch's copy of a row, read from the table the first time the batch needs it. */
  entry(id: string): PendingRow<Row> {
    let entry = this.pending.get(id);
    if (!entry) {
      const before = this.read(id) ?? null;
      entry = { row: before && { ...before }, before, dirty: false };
      this.pending.set(id, entry);
    }
    return entry;
  }

  /** Writes the rows the batch changed (inside the batch transaction). */
  flush(): void {
    const pending = this.pending;
    this.pending = new Map();
    for (const [id, { row, before, dirty }] of pending) {
      if (!dirty) continue;
      if (row === null) {
        if (before && this.remove) this.remove(id);
      } else if (before) this.writer.update(before, row);
      else this.writer.insert(row);
    }
  }

  /** Forgets the batch (its transaction rolled back). */
  discard(): void {
    this.pending = new Map();
  }
}

/**
 * An UPDATE ... WHERE id = ? that also sets `updated_at`, in a batch: a no-op when the row does not
 * exist or `change` answers false.
 */
export function updateRow<Row extends { updated_at: number }>(batch: RowBatch<Row>, id: string, at: number, change: (row: Row) => boolean | void): void {
  const entry = batch.entry(id);
  if (!entry.row || change(entry.row) === false) return;
  entry.row.updated_at = at;
  entry.dirty = true;
}

