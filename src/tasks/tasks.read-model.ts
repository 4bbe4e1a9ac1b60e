import { Inject } from '@nestjs/common';
import { Json } from '../event-store/event-store.port.js';
import { DurableProjection, ReadModel, StoredEvent } from '../event-store/event-registry.js';
import { PendingRow, READ_MODEL_DB, ReadModelDb, RowBatch, RowWriter, fromJson, updateRow, toJson } from '../event-store/read-model-db.js';
import { Page } from '../graphql/common.types.js';
import { type Candidate, pagePlanned } from '../event-store/list-query.js';
import { type FailureRow, failureGroupsOf } from '../workflows/workflows.read-model.js';
import { TaskDispatchedData } from './domain/task.decider.js';
import { AttemptEventData, TaskError } from './domain/task-attempts.js';

export type TaskStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface TaskView {
  id: string;
  appId: string;
  environment: string;
  name: string;
  status: TaskStatus;
  attempts: number;
  input: Json[];
  tag: string | null;
  output: Json | undefined;
  error: TaskError | null;
  scheduleId: string | null;
  parentId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

interface Row {
  id: string;
  seq: number;
  app_id: string;
  environment: string;
  name: string;
  tag: string | null;
  status: TaskStatus;
  attempts: number;
  input: string;
  output: string | null;
  error: string | null;
  schedule_id: string | null;
  parent_id: string | null;
  created_at: number;
  updated_at: number;
}

const COLUMNS = [
  'id', 'seq', 'app_id', 'environment', 'name', 'tag', 'status', 'attempts', 'input', 'output', 'error', 'schedule_id', 'parent_id', 'created_at', 'updated_at',
] as const satisfies ReadonlyArray<keyof Row>;

const toView = (r: Row): TaskView => ({
  id: r.id,
  appId: r.app_id,
  environment: r.environment,
  name: r.name,
  status: r.status,
  attempts: r.attempts,
  input: JSON.parse(r.input) as Json[],
  tag: r.tag ?? null,
  output: fromJson<Json>(r.output),
  error: r.error === null ? null : (JSON.parse(r.error) as TaskError),
  scheduleId: r.schedule_id,
  parentId: r.parent_id,
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
});

/** Standalone tasks (`task-<id>` streams) as rows of `rm_tasks`, by id and by app+environment in dispatch order. */
@ReadModel(['TaskDispatched', 'TaskRetried', 'TaskStarted', 'TaskCompleted', 'TaskAttemptFailed', 'TaskFailed'], { streams: ['task-'] })
export class TasksReadModel implements DurableProjection {
  private stmt!: ReturnType<TasksReadModel['prepare']>;
  /** The rows a batch touched, written once in `endBatch` (as in the workflows read model). */
  private batch!: RowBatch<Row>;

  constructor(@Inject(READ_MODEL_DB) private readonly rm: ReadModelDb) {}

  migrate(): void {
    this.rm.db.exec(`
      CREATE TABLE IF NOT EXISTS rm_tasks (
        id          TEXT PRIMARY KEY,
        seq         INTEGER NOT NULL,
        app_id      TEXT NOT NULL,
        environment TEXT NOT NULL,
        name        TEXT NOT NULL,
        tag         TEXT,
        status      TEXT NOT NULL,
        attempts    INTEGER NOT NULL,
        input       TEXT NOT NULL,
        output      TEXT,
        error       TEXT,
        schedule_id TEXT,
        parent_id   TEXT,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL
      );
      CREATE INDEX IF NOT EXISTS rm_tasks_scope ON rm_tasks (app_id, environment, seq);
      CREATE INDEX IF NOT EXISTS rm_tasks_name ON rm_tasks (app_id, environment, name, seq);
      CREATE INDEX IF NOT EXISTS rm_tasks_in_flight ON rm_tasks (status) WHERE status IN ('pending', 'running');
      CREATE INDEX IF NOT EXISTS rm_tasks_failed ON rm_tasks (app_id, environment, updated_at) WHERE status = 'failed';
    `);
    this.stmt = this.prepare();
    this.batch = new RowBatch((id) => this.stmt.get.get(id), this.stmt.rows);
  }

  private prepare() {
    const db = this.rm.db;
    return {
      get: db.prepare<[string], Row>('SELECT * FROM rm_tasks WHERE id = ?'),
      failures: failureGroupsOf(this.rm, 'rm_tasks', 'name'),
      rows: new RowWriter<Row>(db, 'rm_tasks', 'id', COLUMNS),
      inFlight: db.prepare<[], { id: string }>(`SELECT id FROM rm_tasks WHERE status IN ('pending', 'running')`),
    };
  }

  get(appId: string, environment: string, id: string): TaskView | undefined {
    const row = this.stmt.get.get(id);
    return row && row.app_id === appId && row.environment === environment ? toView(row) : undefined;
  }

  /** One page of the tasks matching `filter`, in dispatch order. */
  page(filter: { appId: string; environment: string; name?: string | null; tag?: string | null; status?: TaskStatus | null }, first: number, after?: string | null): Page<TaskView> {
    // Read through the name's index when there is a name, else the scope's; tag and state are
    // checked on the rows, within a bounded window (list-query.ts).
    const scope = 'app_id = @appId AND environment = @environment';
    const params: Record<string, unknown> = { appId: filter.appId, environment: filter.environment };
    const candidates: Candidate[] = [];
    const residual: string[] = [];
    if (filter.name != null) {
      params.name = filter.name;
      candidates.push({ scans: [{ index: 'rm_tasks_name', clause: `${scope} AND name = @name` }], condition: 'name = @name', ordered: true });
    }
    if (filter.tag != null) {
      params.tag = filter.tag;
      residual.push('tag = @tag');
    }
    if (filter.status != null) {
      params.status = filter.status;
      residual.push('status = @status');
    }
    return pagePlanned(this.rm, { table: 'rm_tasks', params, candidates, residual, scope: { index: 'rm_tasks_scope', clause: scope } }, first, after, toView);
  }

  /** Failed tasks grouped by name and error message, last changed at or after `since`. */
  failureGroups(appId: string, environment: string, since: number): FailureRow[] {
    return this.stmt.failures(appId, environment, since);
  }

  /** Each pending and running task's stream (whole: a task's is short). */
  inFlightStreams(visit: (streamId: string, fromRevision: number) => void): void {
    for (const r of this.stmt.inFlight.iterate()) visit(`task-${r.id}`, 0);
  }

  /** Folds one event into the batch's copy of its row; the comments give the SQL each case stands for. */
  project(stored: StoredEvent): void {
    const { streamId, recordedAt, position } = stored.recorded;
    if (!streamId.startsWith('task-')) return;
    const id = streamId.slice('task-'.length);
    const at = recordedAt.getTime();
    switch (stored.type) {
      case 'TaskDispatched': {
        // INSERT OR IGNORE
        const entry = this.entry(id);
        if (entry.row) return;
        const d = stored.data as TaskDispatchedData;
        entry.row = {
          id,
          seq: Number(position),
          app_id: d.appId,
          environment: d.environment,
          name: d.name,
          tag: d.tag ?? null,
          status: 'pending',
          attempts: 0,
          input: JSON.stringify(d.args),
          output: null,
          error: null,
          schedule_id: d.scheduleId,
          parent_id: d.parent?.workflowId ?? null,
          created_at: at,
          updated_at: at,
        };
        entry.dirty = true;
        return;
      }
      case 'TaskRetried':
        return this.update(id, at, (row) => {
          row.status = 'pending';
          row.attempts = 0;
        });
      case 'TaskStarted': {
        const { attempt } = stored.data as AttemptEventData['TaskStarted'];
        return this.update(id, at, (row) => {
          row.status = 'running';
          row.attempts = attempt;
        });
      }
      case 'TaskCompleted': {
        const output = toJson((stored.data as AttemptEventData['TaskCompleted']).result);
        return this.update(id, at, (row) => {
          row.status = 'completed';
          row.output = output;
        });
      }
      case 'TaskAttemptFailed': {
        // status = CASE WHEN retrying THEN 'pending' ELSE status END
        const data = stored.data as AttemptEventData['TaskAttemptFailed'];
        const error = JSON.stringify(data.error);
        return this.update(id, at, (row) => {
          row.error = error;
          if (data.retryAt !== null) row.status = 'pending';
        });
      }
      case 'TaskFailed': {
        const error = JSON.stringify((stored.data as AttemptEventData['TaskFailed']).error);
        return this.update(id, at, (row) => {
          row.status = 'failed';
          row.error = error;
        });
      }
    }
  }

  /** Writes the rows the batch changed (inside the batch transaction). */
  endBatch(): void {
    this.batch.flush();
  }

  abortBatch(): void {
    this.batch.discard();
  }

  private entry(id: string): PendingRow<Row> {
    return this.batch.entry(id);
  }

  private update(id: string, at: number, change: (row: Row) => void): void {
    updateRow(this.batch, id, at, change);
  }
}
