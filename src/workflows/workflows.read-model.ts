import { Inject } from '@nestjs/common';
import type BetterSqlite3 from 'better-sqlite3';
import { Json } from '../event-store/event-store.port.js';
import { DurableProjection, ReadModel, StoredEvent } from '../event-store/event-registry.js';
import { type Candidate, type ListPlan, countByPlanned, countPlanned, pagePlanned, prepareIndexed } from '../event-store/list-query.js';
import { PendingRow, QUERY_COUNT_CAP, READ_MODEL_DB, ReadModelDb, RowBatch, RowWriter, fromJson, updateRow, toJson } from '../event-store/read-model-db.js';
import { Page } from '../graphql/common.types.js';
import { TaskError } from '../tasks/domain/task-attempts.js';
import { WorkflowEvent, WorkflowStatus, baseName } from './domain/workflow.decider.js';

/**
 * How long `rm_workflow_activity` keeps a minute: longer than the chart reaches back
 * (`workflowActivity(minutes ≤ 1440)`).
 */
const ACTIVITY_KEPT_MS = 2 * 24 * 3_600_000;

/** One minute of one app and environment in `rm_workflow_activity`. */
interface ActivityRow {
  appId?: string;
  environment?: string;
  minute: number;
  started: number;
  completed: number;
  failed: number;
}

/** A view's payloads as stored (JSON text), for an answer that gives them as JSON anyway (`toWorkflowType`). */
export const RAW = Symbol('raw');

export interface WorkflowView {
  /** The stored JSON of its payloads, when the view was read from a row. */
  [RAW]?: { input: string; output: string | null; queries: string | null };
  id: string;
  appId: string;
  environment: string;
  name: string;
  version: string | null;
  tag: string | null;
  status: WorkflowStatus;
  input: Json[];
  output: Json | undefined;
  error: TaskError | null;
  parentId: string | null;
  /** The parent's sequence number for this child (with `parentId`). */
  parentSeq: number | null;
  scheduleId: string | null;
  /** The answers of its query handlers as of its last decision (`ctx.onQuery`), if it has any. */
  queries: Record<string, Json> | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface WorkflowFilter {
  appId: string;
  environment: string;
  name?: string | null;
  tag?: string | null;
  status?: WorkflowStatus | null;
  parentId?: string | null;
  scheduleId?: string | null;
  createdAfter?: Date | null;
  createdBefore?: Date | null;
}

/** Failed workflows or tasks of one name and error message (the dashboard's Failures page). */
export interface FailureRow {
  name: string;
  message: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
  /** Newest first, at most 500. */
  ids: string[];
  /** More than `QUERY_COUNT_CAP` failures since the date: only the most recent ones were grouped. */
  capped: boolean;
}

interface Row {
  id: string;
  seq: number;
  app_id: string;
  environment: string;
  name: string;
  version: string | null;
  tag: string | null;
  status: WorkflowStatus;
  input: string;
  output: string | null;
  error: string | null;
  parent_id: string | null;
  parent_seq: number | null;
  schedule_id: string | null;
  queries: string | null;
  created_at: number;
  updated_at: number;
  /** The revision its current run starts at (its last `WorkflowContinuedAsNew`); null: 0. */
  run_from: number | null;
}

/** A row as stored (with the base name the selectors match on). */
type StoredRow = Row & { base_name: string };


const COLUMNS = [
  'id', 'seq', 'app_id', 'environment', 'name', 'base_name', 'version', 'tag', 'status', 'input', 'output', 'error',
  'parent_id', 'parent_seq', 'schedule_id', 'queries', 'created_at', 'updated_at', 'run_from',
] as const satisfies ReadonlyArray<keyof StoredRow>;

const ACTIVE = `status IN ('running', 'paused')`;

/** A workflow a selector picks: its id, and its sequence (its dispatch's log position), the page's key. */
export interface ActiveRow {
  id: string;
  seq: number;
}

interface ActivePageArgs {
  appId: string;
  environment: string;
  name: string;
  after: number;
  upTo: number;
  limit: number;
}
const FINAL = `('completed', 'failed', 'terminated')`;

/**
 * A row as a view. Its payloads (input, output, error, queries) are parsed when first read: a
 * page of workflows asked for its ids used to parse every one of them (and the answer stringified
 * them again), so a read-only token listing ids over big inputs cost seconds of CPU per request.
 */
const toView = (r: Row): WorkflowView => {
  let input: Json[] | undefined;
  let output: { value: Json | undefined } | undefined;
  let error: { value: TaskError | null } | undefined;
  let queries: { value: Record<string, Json> | null } | undefined;
  return {
    id: r.id,
    appId: r.app_id,
    environment: r.environment,
    name: r.name,
    version: r.version,
    tag: r.tag,
    status: r.status,
    get input() {
      return (input ??= JSON.parse(r.input) as Json[]);
    },
    get output() {
      return (output ??= { value: fromJson<Json>(r.output) }).value;
    },
    get error() {
      return (error ??= { value: r.error === null ? null : (JSON.parse(r.error) as TaskError) }).value;
    },
    parentId: r.parent_id,
    parentSeq: r.parent_seq,
    scheduleId: r.schedule_id,
    get queries() {
      return (queries ??= { value: r.queries === null || r.queries === undefined ? null : (JSON.parse(r.queries) as Record<string, Json>) }).value;
    },
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
    [RAW]: { input: r.input, output: r.output, queries: r.queries ?? null },
  } as WorkflowView;
};

/**
 * Every workflow of the log as a row of `rm_workflows` (payloads on disk, not in memory), with
 * indexes for the selectors (not-final workflows by name, base name and tag) and for lists
 * (by app and environment in dispatch order). Written in the ProjectionRunner's batch
 * transaction; read with prepared statements.
 */
@ReadModel(['WorkflowDispatched', 'DecisionStarted', 'DecisionCompleted', 'WorkflowContinuedAsNew', 'WorkflowRetried', 'WorkflowsExpired', 'WorkflowPaused', 'WorkflowResumed', 'WorkflowTerminated', 'WorkflowCompleted', 'WorkflowFailed'])
export class WorkflowsReadModel implements DurableProjection {
  private stmt!: ReturnType<WorkflowsReadModel['prepare']>;
  private finishedBeforeStmt: BetterSqlite3.Statement<[number, number, number, number, number, number], Row & { rid: number }> | undefined;
  /** The rowid of each view `finishedBefore` answered: where the next batch of a sweep starts. */
  private readonly sweepCursors = new WeakMap<WorkflowView, number>();
  /**
   * The rows a batch touched, folded in memory and written once in `endBatch` (a workflow's
   * dozen events in one batch cost one row write, not one per event): `row` null when the
   * workflow does not exist (never dispatched, or forgotten), `before` the row as the table held
   * it when the batch first read it (null: none).
   */
  private batch!: RowBatch<StoredRow>;
  /** The batch's additions to `rm_workflow_activity`, by app, environment and minute (written once at its end). */
  private activityDelta = new Map<string, ActivityRow>();
  /** The entry of `activityDelta` last added to. */
  private lastActivity: ActivityRow | undefined;
  /** The hour (of the log's time) when `rm_workflow_activity` was last pruned. */
  private prunedHour = 0;

  constructor(@Inject(READ_MODEL_DB) private readonly rm: ReadModelDb) {}

  migrate(): void {
    this.rm.db.exec(`
      CREATE TABLE IF NOT EXISTS rm_workflows (
        id          TEXT PRIMARY KEY,
        seq         INTEGER NOT NULL,
        app_id      TEXT NOT NULL,
        environment TEXT NOT NULL,
        name        TEXT NOT NULL,
        base_name   TEXT NOT NULL,
        version     TEXT,
        tag         TEXT,
        status      TEXT NOT NULL,
        input       TEXT NOT NULL,
        output      TEXT,
        error       TEXT,
        parent_id   TEXT,
        parent_seq  INTEGER,
        schedule_id TEXT,
        queries     TEXT,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL,
        run_from    INTEGER
      );
      CREATE INDEX IF NOT EXISTS rm_workflows_scope ON rm_workflows (app_id, environment, seq);
      CREATE INDEX IF NOT EXISTS rm_workflows_name ON rm_workflows (app_id, environment, name, seq);
      CREATE INDEX IF NOT EXISTS rm_workflows_base_name ON rm_workflows (app_id, environment, base_name, seq);
      CREATE INDEX IF NOT EXISTS rm_workflows_tag ON rm_workflows (app_id, environment, tag, seq) WHERE tag IS NOT NULL;
      -- The running and paused workflows: a start's in-flight list, and \`{ name }\` selectors,
      -- which read them a page at a time in dispatch order (seq). It replaced
      -- rm_workflows_active (status only), then rm_workflows_active_base_name (…, status), whose
      -- selection had to be read whole and sorted, so the rows in flight keep one such index.
      DROP INDEX IF EXISTS rm_workflows_active;
      DROP INDEX IF EXISTS rm_workflows_active_base_name;
      CREATE INDEX IF NOT EXISTS rm_workflows_active_name ON rm_workflows (app_id, environment, base_name, seq) WHERE ${ACTIVE};
      -- The running and paused workflows by exact name: a versioned name's selector (\`Order_v2\`)
      -- reads its own rows here, not the whole base name's range (every running \`Order\`).
      CREATE INDEX IF NOT EXISTS rm_workflows_active_exact ON rm_workflows (app_id, environment, name, seq) WHERE ${ACTIVE};
      CREATE INDEX IF NOT EXISTS rm_workflows_finished ON rm_workflows (updated_at) WHERE status IN ${FINAL};
      CREATE INDEX IF NOT EXISTS rm_workflows_created ON rm_workflows (app_id, environment, created_at);
      -- Lists read through an index whose last column is seq (list-query.ts): by state, by
      -- parent (also retention's check for running children), by schedule. They replaced
      -- rm_workflows_status (…, status, updated_at), whose one other use, the failures page, has
      -- a partial index of its own, and rm_workflows_parent (parent_id).
      DROP INDEX IF EXISTS rm_workflows_status;
      DROP INDEX IF EXISTS rm_workflows_parent;
      CREATE INDEX IF NOT EXISTS rm_workflows_state ON rm_workflows (app_id, environment, status, seq);
      CREATE INDEX IF NOT EXISTS rm_workflows_failed ON rm_workflows (app_id, environment, updated_at) WHERE status = 'failed';
      CREATE INDEX IF NOT EXISTS rm_workflows_children ON rm_workflows (parent_id, seq) WHERE parent_id IS NOT NULL;
      CREATE INDEX IF NOT EXISTS rm_workflows_schedule ON rm_workflows (schedule_id, seq) WHERE schedule_id IS NOT NULL;
    `);
    this.migrateActivity();
    const columns = this.rm.db.prepare<[], { name: string }>('PRAGMA table_info(rm_workflows)').all();
    if (!columns.some((c) => c.name === 'queries')) this.rm.db.exec('ALTER TABLE rm_workflows ADD COLUMN queries TEXT');
    // Rows projected before it have none: a restart reads their whole stream, as it used to.
    if (!columns.some((c) => c.name === 'run_from')) this.rm.db.exec('ALTER TABLE rm_workflows ADD COLUMN run_from INTEGER');
    this.stmt = this.prepare();
    this.batch = new RowBatch((id) => this.stmt.get.get(id), this.stmt.rows, (id) => this.stmt.forget.run(id));
  }

  /**
   * `rm_workflow_activity`: workflows started, completed and failed per app, environment and
   * minute, added to by the projection, so the dashboard's chart reads one row a minute instead
   * of every workflow of the window. Created on a store whose workflows were projected before it
   * existed, it is filled once from their rows (as the chart counted them until then), in one
   * transaction that also creates it: two instances starting together fill it once.
   */
  private migrateActivity(): void {
    const db = this.rm.db;
    db.transaction(() => {
      const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rm_workflow_activity'`).get();
      if (exists) return;
      db.exec(`
        CREATE TABLE rm_workflow_activity (
          app_id      TEXT NOT NULL,
          environment TEXT NOT NULL,
          minute      INTEGER NOT NULL,
          started     INTEGER NOT NULL,
          completed   INTEGER NOT NULL,
          failed      INTEGER NOT NULL,
          PRIMARY KEY (app_id, environment, minute)
        ) WITHOUT ROWID;
        INSERT INTO rm_workflow_activity (app_id, environment, minute, started, completed, failed)
          SELECT app_id, environment, minute, sum(started), sum(completed), sum(failed) FROM (
            SELECT app_id, environment, (created_at / 60000) * 60000 AS minute, 1 AS started, 0 AS completed, 0 AS failed
              FROM rm_workflows WHERE created_at >= ${Date.now() - ACTIVITY_KEPT_MS}
            UNION ALL
            SELECT app_id, environment, (updated_at / 60000) * 60000, 0, status = 'completed', status = 'failed'
              FROM rm_workflows WHERE status IN ('completed', 'failed') AND updated_at >= ${Date.now() - ACTIVITY_KEPT_MS}
          ) GROUP BY app_id, environment, minute;
      `);
    }).immediate();
  }

  private prepare() {
    const db = this.rm.db;
    return {
      get: db.prepare<[string], StoredRow>('SELECT * FROM rm_workflows WHERE id = ?'),
      // The scope of a parent's children and of a schedule's firings (each shares its parent's or its schedule's).
      childScope: db.prepare<[string], Scope>('SELECT app_id, environment FROM rm_workflows WHERE parent_id = ? LIMIT 1'),
      firingScope: db.prepare<[string], Scope>('SELECT app_id, environment FROM rm_workflows WHERE schedule_id = ? LIMIT 1'),
      // A page of what a \`{ name }\` selector picks: rows whose base name is \`N\` (\`N\` itself
      // when it has no version, and its versions), and for a versioned \`N\` the rows named \`N\`
      // (whose base name is another), each range read in seq order from a partial index of running
      // and paused workflows, merged, no further than the page. Read from the base name's range,
      // the rows named \`Order_v2\` cost a search of every running \`Order\`.
      activeByName: db.prepare<[ActivePageArgs & { base: string }], ActiveRow>(
        `SELECT id, seq FROM (
           SELECT id, seq FROM rm_workflows INDEXED BY rm_workflows_active_name
           WHERE app_id = @appId AND environment = @environment AND base_name = @name
             AND ${ACTIVE} AND seq > @after AND seq <= @upTo ORDER BY seq LIMIT @limit)
         UNION ALL
         SELECT id, seq FROM (
           SELECT id, seq FROM rm_workflows INDEXED BY rm_workflows_active_exact
           WHERE @base <> @name AND app_id = @appId AND environment = @environment AND name = @name
             AND ${ACTIVE} AND seq > @after AND seq <= @upTo ORDER BY seq LIMIT @limit)
         ORDER BY seq LIMIT @limit`,
      ),
      // A tag names one order, one customer: its index holds few rows, finished ones included.
      activeByTag: db.prepare<[ActivePageArgs & { tag: string }], ActiveRow>(
        `SELECT id, seq FROM rm_workflows INDEXED BY rm_workflows_tag
         WHERE app_id = @appId AND environment = @environment AND tag = @tag AND (name = @name OR base_name = @name)
           AND ${ACTIVE} AND seq > @after AND seq <= @upTo ORDER BY seq LIMIT @limit`,
      ),
      inFlight: db.prepare<[], { id: string; run_from: number | null }>(`SELECT id, run_from FROM rm_workflows WHERE ${ACTIVE}`),
      count: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM rm_workflows'),
      forget: db.prepare<[string]>('DELETE FROM rm_workflows WHERE id = ?'),
      rows: new RowWriter<StoredRow>(db, 'rm_workflows', 'id', COLUMNS),
      activity: db.prepare<[Record<string, unknown>], ActivityRow>(
        `SELECT minute, started, completed, failed FROM rm_workflow_activity
         WHERE app_id = @appId AND environment = @environment AND minute >= @start AND minute < @end ORDER BY minute`,
      ),
      addActivity: db.prepare<[ActivityRow]>(
        `INSERT INTO rm_workflow_activity (app_id, environment, minute, started, completed, failed)
         VALUES (@appId, @environment, @minute, @started, @completed, @failed)
         ON CONFLICT (app_id, environment, minute) DO UPDATE SET
           started = started + excluded.started, completed = completed + excluded.completed, failed = failed + excluded.failed`,
      ),
      pruneActivity: db.prepare<[number]>('DELETE FROM rm_workflow_activity WHERE minute < ?'),
      failures: failureGroupsOf(this.rm, 'rm_workflows', 'base_name'),
    };
  }

  get(appId: string, environment: string, id: string): WorkflowView | undefined {
    const row = this.stmt.get.get(id);
    return row && row.app_id === appId && row.environment === environment ? toView(row) : undefined;
  }

  /** Any workflow by id, whatever its app. */
  getById(id: string): WorkflowView | undefined {
    const row = this.stmt.get.get(id);
    return row ? toView(row) : undefined;
  }

  /**
   * A page of the running and paused workflows that \`{ name }\` or \`{ name, tag }\` picks: named
   * \`name\` or versions of it, dispatched at log position \`upTo\` or before, after the one of
   * sequence \`after\` (0 to start), in dispatch order, ids only. A selector over a million
   * workflows is read a page at a time, each from an index range that starts at \`after\`.
   */
  activePage(appId: string, environment: string, name: string, tag: string | null | undefined, after: number, upTo: number, limit: number): ActiveRow[] {
    const args: ActivePageArgs = { appId, environment, name, after, upTo, limit };
    return tag == null ? this.stmt.activeByName.all({ ...args, base: baseName(name) }) : this.stmt.activeByTag.all({ ...args, tag });
  }

  /** One page of the workflows matching `filter`, in dispatch order (or newest first), after the workflow `after`. */
  page(filter: WorkflowFilter, first: number, after?: string | null, newestFirst = false): Page<WorkflowView> {
    if (this.ofAnotherScope(filter)) return { nodes: [], totalCount: 0, totalCountCapped: false, pageInfo: { endCursor: null, hasNextPage: false } };
    return pagePlanned(this.rm, planOf(filter), first, after, toView, newestFirst);
  }

  /**
   * Whether the filter's parent or schedule is another app's (or environment's): the children's
   * and the firings' indexes are not scoped, and the bounded window a page or a count reads in
   * them (list-query.ts) ended on that app's rows: past QUERY_COUNT_CAP children, another app
   * filtering by the parent's id was told \`totalCountCapped\`, \`hasNextPage\` and an endCursor
   * holding one of the children's ids. Children share their parent's scope, firings their
   * schedule's: one row tells.
   */
  private ofAnotherScope(filter: WorkflowFilter): boolean {
    const other = (row: Scope | undefined) => row !== undefined && (row.app_id !== filter.appId || row.environment !== filter.environment);
    return (filter.parentId != null && other(this.stmt.childScope.get(filter.parentId))) || (filter.scheduleId != null && other(this.stmt.firingScope.get(filter.scheduleId)));
  }

  /** How many workflows of the filter (its state aside) are in each state. */
  countByStatus(filter: WorkflowFilter, statuses: readonly WorkflowStatus[]): Map<WorkflowStatus, { count: number; capped: boolean }> {
    if (this.ofAnotherScope(filter)) return new Map(statuses.map((status) => [status, { count: 0, capped: false }]));
    const plan = planOf({ ...filter, status: null });
    // Nothing but the scope: each state's count from the states' index, exact up to the cap.
    if (plan.candidates.length === 0 && plan.residual.length === 0) {
      return new Map(statuses.map((status) => [status, countPlanned(this.rm, planOf({ ...filter, status }))]));
    }
    const counted = countByPlanned(this.rm, plan, 'status');
    return new Map(statuses.map((status) => [status, { count: counted.counts.get(status) ?? 0, capped: counted.capped }]));
  }

  /** Workflows started, and completed or failed, per minute from `start` to `end` (epoch ms, whole minutes). */
  activity(appId: string, environment: string, start: number, end: number): Array<{ minute: number; started: number; completed: number; failed: number }> {
    return this.stmt.activity.all({ appId, environment, start, end });
  }

  /** Failed workflows grouped by base name and error message, last changed at or after `since`. */
  failureGroups(appId: string, environment: string, since: number): FailureRow[] {
    return this.stmt.failures(appId, environment, since);
  }

  /** Each running and paused workflow's stream, from its current run's first revision. */
  inFlightStreams(visit: (streamId: string, fromRevision: number) => void): void {
    for (const r of this.stmt.inFlight.iterate()) visit(`workflow-${r.id}`, r.run_from ?? 0);
  }

  /** How many workflows the read model holds. */
  get size(): number {
    return this.stmt.count.get()!.n;
  }

  /**
   * Finished workflows last changed before `cutoff`, oldest first, up to `max`; never one with a
   * child still running (the child's end must still reach its parent's history), nor:
   * - the last workflow a schedule that is not deleted dispatched: its overlap policy (SKIP,
   *   BUFFER_ONE) reads that workflow's state at the next occurrence, and a workflow it cannot
   *   find counts as still running (its dispatch may not be in the log yet), so deleting it
   *   stopped the schedule for good. The next firing makes it an earlier run, deleted as usual;
   * - a workflow whose id was derived (UUID v8: from an idempotency key, or a parent's call)
   *   and dispatched after `derivedSince`: a repeated dispatch into that id (a client's retry
   *   with the key, a replayed effect) must find it, or it starts the workflow again under the
   *   same id (or fails, while a stream cache still holds the deleted workflow).
   */
  finishedBefore(cutoff: Date, max: number, derivedSince: Date, after?: WorkflowView): WorkflowView[] {
    // Prepared on first use: it reads `rm_schedules`, which the schedules read model creates
    // after this one (and which a database without schedules may not have yet at migrate time).
    // `after` (the last row of the batch before) keeps a sweep going forwards: the rows it keeps
    // stay in the index, and a sweep that started from the oldest row each batch walked them all
    // again, once per batch. Ties on updated_at go by rowid, which the index holds after it (by
    // id, each batch sorted every row of a millisecond's group again).
    this.finishedBeforeStmt ??= this.rm.db.prepare<[number, number, number, number, number, number], Row & { rid: number }>(
      `SELECT rowid AS rid, * FROM rm_workflows w WHERE status IN ${FINAL} AND updated_at < ?
         AND updated_at >= ? AND (updated_at > ? OR rowid > ?)
         AND NOT (substr(w.id, 15, 1) = '8' AND w.created_at >= ?)
         AND NOT EXISTS (SELECT 1 FROM rm_workflows c WHERE c.parent_id = w.id AND c.status IN ('running', 'paused'))
         AND NOT EXISTS (SELECT 1 FROM rm_schedules s WHERE s.id = w.schedule_id AND s.status != 'deleted' AND json_extract(s.state, '$.lastDispatchId') = w.id)
       ORDER BY updated_at, rowid LIMIT ?`,
    );
    const from = after ? after.updatedAt.getTime() : -1;
    const rowid = after ? (this.sweepCursors.get(after) ?? Number.MAX_SAFE_INTEGER) : -1;
    return this.finishedBeforeStmt.all(cutoff.getTime(), from, from, rowid, derivedSince.getTime(), max).map((row) => {
      const view = toView(row);
      this.sweepCursors.set(view, row.rid);
      return view;
    });
  }

  /** Drops a workflow deleted by retention. */
  forget(id: string): void {
    this.stmt.forget.run(id);
  }

  /**
   * Folds one event into the batch's copy of its row (see `batch`); the SQL each case stands for
   * is in the comments, and the rows end as those statements would leave them.
   */
  project(stored: StoredEvent): void {
    const { streamId, recordedAt, position } = stored.recorded;
    const id = streamId.slice('workflow-'.length);
    const at = recordedAt.getTime();
    // The stored event itself (its `type` and `data` are accessors): `data` is read only where a
    // case needs it, as a store may parse it when first read (a rebuild's pages); a
    // DecisionStarted needs it only while its workflow has no version.
    const event = stored as unknown as WorkflowEvent;
    switch (event.type) {
      case 'WorkflowDispatched': {
        // INSERT OR IGNORE
        const entry = this.entry(id);
        if (entry.row) return;
        const d = event.data;
        entry.row = {
          id,
          seq: Number(position),
          app_id: d.appId,
          environment: d.environment,
          name: d.name,
          base_name: baseName(d.name),
          version: null,
          tag: d.tag,
          status: 'running',
          input: JSON.stringify(d.input),
          output: null,
          error: null,
          parent_id: d.parent?.workflowId ?? null,
          parent_seq: d.parent?.seq ?? null,
          schedule_id: d.scheduleId,
          queries: null,
          created_at: at,
          updated_at: at,
          run_from: null,
        };
        entry.dirty = true;
        this.countActivity(d.appId, d.environment, at, 'started');
        return;
      }
      case 'DecisionStarted':
        // version = coalesce(version, ?)
        return this.update(id, at, (row) => {
          row.version ??= event.data.version ?? null;
        });
      case 'DecisionCompleted':
        if (event.data.queries) {
          const queries = JSON.stringify(event.data.queries);
          this.update(id, at, (row) => {
            row.queries = queries;
          });
        }
        return;
      case 'WorkflowContinuedAsNew': {
        const input = JSON.stringify(event.data.input);
        const revision = Number(stored.recorded.revision);
        return this.update(id, at, (row) => {
          row.input = input;
          row.queries = null;
          row.run_from = revision;
        });
      }
      case 'WorkflowPaused':
        return this.setStatus(id, 'paused', at);
      case 'WorkflowResumed':
        return this.setStatus(id, 'running', at);
      case 'WorkflowTerminated':
        return this.setStatus(id, 'terminated', at);
      case 'WorkflowCompleted':
        return this.setStatus(id, 'completed', at, toJson(event.data.result));
      case 'WorkflowFailed':
        return this.setStatus(id, 'failed', at, null, JSON.stringify(event.data.error));
      case 'WorkflowRetried':
        // WHERE status = 'failed'
        return this.update(id, at, (row) => {
          if (row.status !== 'failed') return false;
          row.status = 'running';
          row.error = null;
          row.output = null;
        });
      case 'WorkflowsExpired' as WorkflowEvent['type']:
        // Retention deleted these workflows' streams (retention.service.ts): their rows go too.
        for (const expired of (stored.data as { workflowIds: string[] }).workflowIds) {
          const entry = this.entry(expired);
          entry.row = null;
          entry.dirty = true;
        }
        return;
      default:
        this.update(id, at, () => undefined);
    }
  }

  /** Writes the rows the batch changed (inside the batch transaction). */
  endBatch(): void {
    this.batch.flush();
    let newest = 0;
    for (const delta of this.activityDelta.values()) {
      this.stmt.addActivity.run(delta);
      if (delta.minute > newest) newest = delta.minute;
    }
    this.activityDelta.clear();
    this.lastActivity = undefined;
    // Minutes older than the chart can show go, once an hour of the log's time.
    const hour = Math.floor(newest / 3_600_000);
    if (hour > this.prunedHour) {
      this.prunedHour = hour;
      this.stmt.pruneActivity.run(newest - ACTIVITY_KEPT_MS);
    }
  }

  abortBatch(): void {
    this.batch.discard();
    this.activityDelta.clear();
    this.lastActivity = undefined;
  }

  /** Adds one workflow to its minute's count in `rm_workflow_activity` (at the batch's end). */
  private countActivity(appId: string, environment: string, at: number, what: 'started' | 'completed' | 'failed'): void {
    const minute = at - (at % 60_000);
    // Most events of a batch fall in the minute of the one before: no key to build for them.
    let delta = this.lastActivity;
    if (!delta || delta.minute !== minute || delta.appId !== appId || delta.environment !== environment) {
      const key = `${appId}\u0000${environment}\u0000${minute}`;
      delta = this.activityDelta.get(key);
      if (!delta) this.activityDelta.set(key, (delta = { appId, environment, minute, started: 0, completed: 0, failed: 0 }));
      this.lastActivity = delta;
    }
    delta[what] += 1;
  }

  /** The batch's copy of a workflow's row, read from the table the first time the batch needs it. */
  private entry(id: string): PendingRow<StoredRow> {
    return this.batch.entry(id);
  }

  private update(id: string, at: number, change: (row: StoredRow) => boolean | void): void {
    updateRow(this.batch, id, at, change);
  }

  /** status = ?, output = coalesce(?, output), error = coalesce(?, error) WHERE status NOT IN final. */
  private setStatus(id: string, status: WorkflowStatus, at: number, output: string | null = null, error: string | null = null): void {
    this.update(id, at, (row) => {
      if (row.status === 'completed' || row.status === 'failed' || row.status === 'terminated') return false;
      row.status = status;
      if (status === 'completed' || status === 'failed') this.countActivity(row.app_id, row.environment, at, status);
      if (output !== null) row.output = output;
      if (error !== null) row.error = error;
    });
  }
}

/**
 * The failed rows of a read-model table grouped by name and error message (the error column holds
 * the error as JSON), most recent group first, each with up to 500 ids, newest first. Only the
 * `QUERY_COUNT_CAP` most recent failures since `since` are grouped (`capped` when there were
 * more): the cost follows the failures, up to that many, never the table.
 */
export function failureGroupsOf(rm: ReadModelDb, table: string, nameColumn: string): (appId: string, environment: string, since: number) => FailureRow[] {
  // The table's partial index of failed rows (`<table>_failed`), named: SQLite, without statistics, might read the failed rows by another index and sort them.
  const failed = `FROM ${table} INDEXED BY ${table}_failed WHERE app_id = @appId AND environment = @environment AND status = 'failed' AND updated_at >= @since`;
  const grouped = `SELECT name, message, count(*) AS count, min(updated_at) AS firstSeen, max(updated_at) AS lastSeen,
            group_concat(id, ',' ORDER BY updated_at DESC, id DESC) AS ids
     FROM (SELECT ${nameColumn} AS name, coalesce(json_extract(error, '$.message'), '') AS message, updated_at, id
           ${failed} ORDER BY updated_at DESC LIMIT ${QUERY_COUNT_CAP})
     GROUP BY name, message ORDER BY lastSeen DESC`;
  const more = `SELECT 1 AS one ${failed} ORDER BY updated_at DESC LIMIT 1 OFFSET ${QUERY_COUNT_CAP}`;
  return (appId, environment, since) => {
    const params = { appId, environment, since };
    // Prepared at each call (the page is read once a refresh), so that a missing index is told.
    const rows = prepareIndexed(rm, grouped).all(params) as Array<Omit<FailureRow, 'ids' | 'capped'> & { ids: string | null }>;
    // Only a full scan of the cap can have left failures out.
    const capped = rows.reduce((n, r) => n + r.count, 0) === QUERY_COUNT_CAP && prepareIndexed(rm, more).get(params) !== undefined;
    return rows.map((r) => ({ ...r, capped, ids: r.ids === null ? [] : r.ids.split(',').slice(0, 500) }));
  };
}

/**
 * How a workflow filter can be read (see list-query.ts): each of its conditions that has an index
 * of its own is a candidate (a parent's children, a schedule's firings, a tag, a name, a state, a
 * time range); the one with the fewest entries is read and the others are checked on its rows.
 */
/** A row's app and environment. */
interface Scope {
  app_id: string;
  environment: string;
}

function planOf(filter: WorkflowFilter): ListPlan {
  const params: Record<string, unknown> = { appId: filter.appId, environment: filter.environment };
  const scope = 'app_id = @appId AND environment = @environment';
  const candidates: Candidate[] = [];
  const residual: string[] = [];
  if (filter.parentId != null) {
    params.parentId = filter.parentId;
    candidates.push({ scans: [{ index: 'rm_workflows_children', clause: 'parent_id = @parentId' }], condition: 'parent_id = @parentId', ordered: true });
  }
  if (filter.scheduleId != null) {
    params.scheduleId = filter.scheduleId;
    candidates.push({ scans: [{ index: 'rm_workflows_schedule', clause: 'schedule_id = @scheduleId' }], condition: 'schedule_id = @scheduleId', ordered: true });
  }
  // The children's and the firings' indexes are not scoped: the scope is checked on the rows.
  if (candidates.length > 0) residual.push(scope);
  if (filter.tag != null) {
    params.tag = filter.tag;
    candidates.push({ scans: [{ index: 'rm_workflows_tag', clause: `${scope} AND tag = @tag` }], condition: 'tag = @tag', ordered: true });
  }
  if (filter.name != null) {
    params.name = filter.name;
    // A name matches itself and, as a base name, its versions (`Order` → `Order_v2`). A name
    // without a version is its own base name, so `base_name` alone says it; a versioned one is
    // read through both indexes (`name`, and `base_name` for `Order_v2_v3`), which never overlap.
    const versioned = baseName(filter.name) !== filter.name;
    candidates.push({
      scans: versioned
        ? [
            { index: 'rm_workflows_name', clause: `${scope} AND name = @name` },
            { index: 'rm_workflows_base_name', clause: `${scope} AND base_name = @name` },
          ]
        : [{ index: 'rm_workflows_base_name', clause: `${scope} AND base_name = @name` }],
      condition: '(name = @name OR base_name = @name)',
      ordered: true,
    });
  }
  if (filter.status != null) {
    params.status = filter.status;
    candidates.push({ scans: [{ index: 'rm_workflows_state', clause: `${scope} AND status = @status` }], condition: 'status = @status', ordered: true });
  }
  // A time range has an index too, in time order: it serves counts, and pages when it holds at most the cap.
  const range: string[] = [];
  if (filter.createdAfter != null) {
    params.createdAfter = filter.createdAfter.getTime();
    range.push('created_at >= @createdAfter');
  }
  if (filter.createdBefore != null) {
    params.createdBefore = filter.createdBefore.getTime();
    range.push('created_at < @createdBefore');
  }
  if (range.length > 0) {
    const condition = range.join(' AND ');
    candidates.push({ scans: [{ index: 'rm_workflows_created', clause: `${scope} AND ${condition}`, newest: 'created_at DESC' }], condition, ordered: false });
  }
  return { table: 'rm_workflows', params, candidates, residual, scope: { index: 'rm_workflows_scope', clause: scope } };
}
