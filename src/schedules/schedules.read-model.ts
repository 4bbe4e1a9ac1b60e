import { Inject, Injectable } from '@nestjs/common';
import type { IEventHandler } from '@nestjs/cqrs';
import { RecordedEvent } from '../event-store/event-store.port.js';
import { DurableProjection, Projection, ReadModel, StoredEvent } from '../event-store/event-registry.js';
import { type Candidate, type ListPlan, pagePlanned, prepareIndexed } from '../event-store/list-query.js';
import { READ_MODEL_DB, ReadModelDb } from '../event-store/read-model-db.js';
import type { Page } from '../graphql/common.types.js';
import { ExistingSchedule, SCHEDULE_EVENT_TYPES, ScheduleEvent, ScheduleEventData, ScheduleSpec, ScheduleStatus, nextFireAt, scheduleDecider } from './domain/schedule.decider.js';

export interface ScheduleView {
  id: string;
  state: ExistingSchedule;
  /** Revision of the last event folded in (events at or below it are ignored: idempotent). */
  revision: bigint;
  createdAt: Date;
  updatedAt: Date;
}

export interface ScheduleFilter {
  appId: string;
  environment: string;
  name?: string | null;
  status?: ScheduleStatus | null;
}

/** A fired occurrence or trigger whose task or workflow is not in the log yet. */
export interface AwaitingDispatch {
  scheduleId: string;
  dispatchId: string;
  firedAt: number;
  /** What to dispatch: kept here, as the schedule may be deleted (and forgotten by memory) before its dispatch is in the log. */
  spec: ScheduleSpec;
}

export type ScheduleChange =
  | { kind: 'schedule'; scheduleId: string }
  | { kind: 'awaiting'; dispatchId: string }
  /** The instance a schedule dispatched last reached a final state (BUFFER_ONE may fire now). */
  | { kind: 'finished'; scheduleId: string };

export const SCHEDULES_PROJECTION_EVENT_TYPES = [
  ...SCHEDULE_EVENT_TYPES,
  'TaskDispatched',
  'WorkflowDispatched',
  'WorkflowCompleted',
  'WorkflowFailed',
  'WorkflowTerminated',
  'WorkflowsExpired',
] as const;

/** The dispatch id of a `TaskDispatched` / `WorkflowDispatched` a schedule caused (null: not a schedule's). */
function scheduledDispatch(recorded: RecordedEvent): { scheduleId: string; dispatchId: string } | null {
  const data = recorded.data as { scheduleId?: string | null };
  if (!data.scheduleId) return null;
  return { scheduleId: data.scheduleId, dispatchId: recorded.streamId.slice(recorded.streamId.indexOf('-') + 1) };
}

/**
 * What the scheduler needs of the schedules, in memory: the schedules that can still fire
 * (active or paused), folded with the decider's own `evolve`, which fired occurrences still
 * wait for their dispatch (to redo it after a crash, deleted schedules' too) and which workflow
 * each schedule dispatched last (to wake BUFFER_ONE when it ends). A deleted schedule leaves
 * memory with its `ScheduleDeleted`: it never fires again, and the API reads it from
 * `rm_schedules` (`SchedulesTable`), so memory grows with the schedules that can fire, not with
 * every schedule ever created. Plain class: the Nest projection below feeds it, and so do the
 * scheduler's specs.
 */
@Injectable()
export class SchedulesReadModel {
  private readonly byId = new Map<string, ScheduleView>();
  private readonly awaitingDispatch = new Map<string, AwaitingDispatch>();
  private readonly lastDispatchOf = new Map<string, string>();
  private readonly nextCache = new Map<string, { cursor: number; status: ScheduleStatus; at: number | null }>();
  private readonly listeners: Array<(change: ScheduleChange) => void> = [];
  /** How many of `byId` each app holds (MAX_SCHEDULES_PER_APP). */
  private readonly perApp = new Map<string, number>();

  onChange(listener: (change: ScheduleChange) => void): void {
    this.listeners.push(listener);
  }

  /** A schedule that can still fire (active or paused) of that app and environment. */
  get(appId: string, environment: string, id: string): ScheduleView | undefined {
    const view = this.byId.get(id);
    return view && view.state.spec.appId === appId && view.state.spec.environment === environment ? view : undefined;
  }

  /** A schedule that can still fire (active or paused); deleted ones are in `SchedulesTable` only. */
  getById(id: string): ScheduleView | undefined {
    return this.byId.get(id);
  }

  /** The schedules that can still fire (active or paused). */
  all(): IterableIterator<ScheduleView> {
    return this.byId.values();
  }

  awaiting(): IterableIterator<AwaitingDispatch> {
    return this.awaitingDispatch.values();
  }

  awaitingFor(dispatchId: string): AwaitingDispatch | undefined {
    return this.awaitingDispatch.get(dispatchId);
  }

  /**
   * Next cron occurrence of an active schedule (null when paused or deleted). Cached until its
   * cursor or status moves, for the schedules held here only: a view read from `rm_schedules`
   * (a list, a deleted schedule) leaves nothing behind.
   */
  nextFireAt(view: ScheduleView): number | null {
    const { cursor, status } = view.state;
    if (status !== 'active') return null;
    if (!this.byId.has(view.id)) return nextFireAt(view.state);
    const cached = this.nextCache.get(view.id);
    if (cached && cached.cursor === cursor && cached.status === status) return cached.at;
    const at = nextFireAt(view.state);
    this.nextCache.set(view.id, { cursor, status, at });
    return at;
  }

  get size(): number {
    return this.byId.size;
  }

  /** How many schedules that can still fire (active or paused) `appId` has, over its environments. */
  countOf(appId: string): number {
    return this.perApp.get(appId) ?? 0;
  }

  private hold(view: ScheduleView): void {
    if (!this.byId.has(view.id)) {
      const app = view.state.spec.appId;
      this.perApp.set(app, (this.perApp.get(app) ?? 0) + 1);
    }
    this.byId.set(view.id, view);
  }

  /** How many entries each of its maps holds (memory diagnostics and specs). */
  get held(): { schedules: number; awaiting: number; running: number; nextFireAt: number } {
    return { schedules: this.byId.size, awaiting: this.awaitingDispatch.size, running: this.lastDispatchOf.size, nextFireAt: this.nextCache.size };
  }

  apply(recorded: RecordedEvent): void {
    const { streamId, type } = recorded;
    if (streamId.startsWith('schedule-')) return this.applySchedule(streamId.slice('schedule-'.length), recorded);
    switch (type) {
      case 'TaskDispatched':
      case 'WorkflowDispatched': {
        const dispatched = scheduledDispatch(recorded);
        if (dispatched && this.awaitingDispatch.delete(dispatched.dispatchId)) this.emit({ kind: 'awaiting', dispatchId: dispatched.dispatchId });
        return;
      }
      case 'WorkflowsExpired': {
        // Retention deleted these workflows, their WorkflowDispatched with them: a fold of the log
        // as it is now (read models starting empty on EventStoreDB) must not leave their
        // occurrences awaiting a dispatch that is long done (the scheduler redoes those at start).
        for (const id of (recorded.data as { workflowIds?: string[] }).workflowIds ?? []) {
          if (this.awaitingDispatch.delete(id)) this.emit({ kind: 'awaiting', dispatchId: id });
        }
        return;
      }
      case 'WorkflowCompleted':
      case 'WorkflowFailed':
      case 'WorkflowTerminated': {
        if (!streamId.startsWith('workflow-')) return;
        const id = streamId.slice('workflow-'.length);
        const scheduleId = this.lastDispatchOf.get(id);
        if (scheduleId === undefined) return;
        // A failed workflow may be retried (retryWorkflows): it stays the schedule's last dispatch,
        // so that the end of its retried run wakes BUFFER_ONE again (the next firing replaces it).
        if (type !== 'WorkflowFailed') this.lastDispatchOf.delete(id);
        this.emit({ kind: 'finished', scheduleId });
        return;
      }
    }
  }

  /**
   * Puts back what `rm_schedules` kept of a schedule (at start, instead of a replay): the schedule
   * itself unless it is deleted, and its last dispatch when it is still awaited, still running or failed (a retry may run it again).
   */
  restore(view: ScheduleView, awaiting: readonly AwaitingDispatch[], running: string | null): void {
    for (const entry of awaiting) this.awaitingDispatch.set(entry.dispatchId, entry);
    if (view.state.status === 'deleted') return;
    this.hold(view);
    if (running) this.lastDispatchOf.set(running, view.id);
  }

  private applySchedule(id: string, recorded: RecordedEvent): void {
    const event = { type: recorded.type, data: recorded.data } as ScheduleEvent;
    let view = this.byId.get(id);
    if (view && recorded.revision <= view.revision) return;
    if (!view) {
      // A schedule not held is new, or deleted (then nothing but its creation, replayed, can come:
      // the replay goes on to its deletion, which forgets it again).
      if (event.type !== 'ScheduleCreated') return;
      const state = scheduleDecider.evolve(scheduleDecider.initialState(), event) as ExistingSchedule;
      view = { id, state, revision: recorded.revision, createdAt: recorded.recordedAt, updatedAt: recorded.recordedAt };
      this.hold(view);
    } else {
      const before = view.state;
      view.state = scheduleDecider.evolve(before, event) as ExistingSchedule;
      view.revision = recorded.revision;
      view.updatedAt = recorded.recordedAt;
      if (event.type === 'ScheduleFired' || event.type === 'ScheduleTriggered') {
        const { dispatchId } = event.data as ScheduleEventData['ScheduleFired'];
        const firedAt = Date.parse(event.type === 'ScheduleFired' ? event.data.firedAt : event.data.triggeredAt);
        this.awaitingDispatch.set(dispatchId, { scheduleId: id, dispatchId, firedAt, spec: view.state.spec });
        if (before.lastDispatchId !== null) this.lastDispatchOf.delete(before.lastDispatchId);
        if (view.state.spec.kind === 'workflow') this.lastDispatchOf.set(dispatchId, id);
        this.emit({ kind: 'awaiting', dispatchId });
      }
      if (view.state.status === 'deleted') this.forget(view);
    }
    this.emit({ kind: 'schedule', scheduleId: id });
  }

  /** A deleted schedule leaves memory; a fired occurrence of it still awaiting its dispatch stays (`awaitingDispatch`). */
  private forget(view: ScheduleView): void {
    if (this.byId.delete(view.id)) {
      const app = view.state.spec.appId;
      const left = (this.perApp.get(app) ?? 1) - 1;
      if (left > 0) this.perApp.set(app, left);
      else this.perApp.delete(app);
    }
    this.nextCache.delete(view.id);
    const last = view.state.lastDispatchId;
    if (last !== null && this.lastDispatchOf.get(last) === view.id) this.lastDispatchOf.delete(last);
  }

  private emit(change: ScheduleChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

interface ScheduleRow {
  id: string;
  seq: number;
  revision: number;
  state: string;
  created_at: number;
  updated_at: number;
}

/**
 * `pending_dispatch` holds the dispatches fired and not yet in the log: one id as it is (the usual
 * case, and how rows were written before), several as a JSON array. Several: an earlier firing
 * whose dispatch is late (its instance died, or the dispatch failed) when a later firing or a
 * trigger of the same schedule was dispatched; keeping only the last one lost the earlier firing
 * at a restart. At most MAX_PENDING are kept (the newest), so that a row stays small even when
 * dispatches keep failing.
 */
const MAX_PENDING = 1000;
const pendingIds = (value: string | null): string[] => (value === null ? [] : value.startsWith('[') ? (JSON.parse(value) as string[]) : [value]);
const pendingValue = (ids: string[]): string | null => (ids.length === 0 ? null : ids.length === 1 ? ids[0] : JSON.stringify(ids.slice(-MAX_PENDING)));

/** What start-up loads: a row, whether its last dispatch is still awaited, and whether that workflow has ended. */
type KeptRow = ScheduleRow & { pending_dispatch: string | null; finished: number };

const toView = (row: ScheduleRow): ScheduleView => ({
  id: row.id,
  state: JSON.parse(row.state) as ExistingSchedule,
  revision: BigInt(row.revision),
  createdAt: new Date(row.created_at),
  updatedAt: new Date(row.updated_at),
});


/**
 * Schedules in `rm_schedules`: each row the decider state folded so far (written in the
 * ProjectionRunner's batch transaction), with the columns its lists filter on (app, environment,
 * name, status; indexes ending in `seq`, creation order) and `pending_dispatch`, the
 * dispatches firings or triggers decided whose `TaskDispatched`/`WorkflowDispatched` is not in
 * the log yet (see `pendingIds`). The API reads schedules here, deleted ones included; the scheduler keeps in memory
 * only those that can fire (`SchedulesReadModel`), loaded from these rows at start through a
 * partial index that holds no deleted schedule once its dispatches are in the log.
 */
@ReadModel([...SCHEDULE_EVENT_TYPES, 'TaskDispatched', 'WorkflowDispatched', 'WorkflowsExpired'])
export class SchedulesTable implements DurableProjection {
  private stmt!: ReturnType<SchedulesTable['prepare']>;

  constructor(@Inject(READ_MODEL_DB) private readonly rm: ReadModelDb) {}

  migrate(): void {
    const db = this.rm.db;
    db.exec(`
      CREATE TABLE IF NOT EXISTS rm_schedules (
        id               TEXT PRIMARY KEY,
        seq              INTEGER NOT NULL,
        revision         INTEGER NOT NULL,
        state            TEXT NOT NULL,
        created_at       INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL,
        app_id           TEXT NOT NULL DEFAULT '',
        environment      TEXT NOT NULL DEFAULT '',
        name             TEXT NOT NULL DEFAULT '',
        status           TEXT NOT NULL DEFAULT '',
        pending_dispatch TEXT
      );
    `);
    // Tables written before the columns: filled in once from each row's state (a pass over the
    // schedules, never over the log), in one write transaction so that instances starting together
    // on one file do it once.
    const migrated = () => db.prepare<[], { name: string }>('PRAGMA table_info(rm_schedules)').all().some((c) => c.name === 'pending_dispatch');
    if (!migrated()) db.transaction(() => {
      if (migrated()) return;
      for (const column of ['app_id', 'environment', 'name', 'status']) db.exec(`ALTER TABLE rm_schedules ADD COLUMN ${column} TEXT NOT NULL DEFAULT ''`);
      db.exec('ALTER TABLE rm_schedules ADD COLUMN pending_dispatch TEXT');
      db.exec(`
        UPDATE rm_schedules SET
          app_id = json_extract(state, '$.spec.appId'),
          environment = json_extract(state, '$.spec.environment'),
          name = json_extract(state, '$.spec.name'),
          status = json_extract(state, '$.status')`);
      // Before, start-up judged a last dispatch done when its workflow or task had a row.
      const has = (table: string) => db.prepare('SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?').get('table', table) !== undefined;
      const done = ['rm_workflows', 'rm_tasks'].filter(has).map((table) => `SELECT 1 FROM ${table} WHERE id = json_extract(rm_schedules.state, '$.lastDispatchId')`);
      db.exec(`
        UPDATE rm_schedules SET pending_dispatch = json_extract(state, '$.lastDispatchId')
        WHERE json_extract(state, '$.lastDispatchId') IS NOT NULL${done.map((q) => ` AND NOT EXISTS (${q})`).join('')}`);
    }).immediate();
    db.exec(`
      CREATE INDEX IF NOT EXISTS rm_schedules_scope ON rm_schedules (app_id, environment, seq);
      CREATE INDEX IF NOT EXISTS rm_schedules_name ON rm_schedules (app_id, environment, name, seq);
      CREATE INDEX IF NOT EXISTS rm_schedules_state ON rm_schedules (app_id, environment, status, seq);
      -- What start-up loads (kept()): the schedules that can fire, and deleted ones whose last dispatch is not in the log.
      CREATE INDEX IF NOT EXISTS rm_schedules_kept ON rm_schedules (seq) WHERE status != 'deleted' OR pending_dispatch IS NOT NULL;
    `);
    this.stmt = this.prepare();
  }

  private prepare() {
    const db = this.rm.db;
    return {
      get: db.prepare<[string], ScheduleRow & { status: string; pending_dispatch: string | null }>(
        'SELECT id, seq, revision, state, created_at, updated_at, status, pending_dispatch FROM rm_schedules WHERE id = ?',
      ),
      insert: db.prepare<[string, number, number, string, number, number, string, string, string, string]>(
        `INSERT OR IGNORE INTO rm_schedules (id, seq, revision, state, created_at, updated_at, app_id, environment, name, status)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      update: db.prepare<[number, string, number, string | null, string]>(
        'UPDATE rm_schedules SET revision = ?, state = ?, updated_at = ?, pending_dispatch = ? WHERE id = ?',
      ),
      // Apart, so that a firing leaves the states' index alone.
      setStatus: db.prepare<[string, string]>('UPDATE rm_schedules SET status = ? WHERE id = ?'),
      pending: db.prepare<[string], { pending_dispatch: string | null }>('SELECT pending_dispatch FROM rm_schedules WHERE id = ?'),
      dispatched: db.prepare<[string | null, string]>('UPDATE rm_schedules SET pending_dispatch = ? WHERE id = ?'),
      // Few rows: the dispatches decided whose task or workflow is not in the log yet.
      pendingRows: db.prepare<[], { id: string; pending_dispatch: string }>('SELECT id, pending_dispatch FROM rm_schedules WHERE pending_dispatch IS NOT NULL'),
    };
  }

  project(stored: StoredEvent): void {
    const { streamId, revision, position, recordedAt } = stored.recorded;
    if (stored.type === 'WorkflowsExpired') {
      // Retention deleted these workflows' streams, their WorkflowDispatched with them: a fold of
      // the log as it is now (`baton rebuild`, a new read-model file) never sees those dispatches,
      // and without this a schedule's fired occurrence stayed pending, to be dispatched again
      // (run anew) at the next start. Live, their dispatches were folded long before.
      const expired = new Set((stored.data as { workflowIds?: string[] }).workflowIds ?? []);
      for (const row of this.stmt.pendingRows.all()) {
        const ids = pendingIds(row.pending_dispatch);
        const left = ids.filter((id) => !expired.has(id));
        if (left.length !== ids.length) this.stmt.dispatched.run(pendingValue(left), row.id);
      }
      return;
    }
    if (!streamId.startsWith('schedule-')) {
      const dispatched = scheduledDispatch(stored.recorded);
      if (!dispatched) return;
      const ids = pendingIds(this.stmt.pending.get(dispatched.scheduleId)?.pending_dispatch ?? null);
      if (ids.includes(dispatched.dispatchId)) this.stmt.dispatched.run(pendingValue(ids.filter((id) => id !== dispatched.dispatchId)), dispatched.scheduleId);
      return;
    }
    const id = streamId.slice('schedule-'.length);
    const event = { type: stored.type, data: stored.data } as ScheduleEvent;
    const row = this.stmt.get.get(id);
    if (!row) {
      if (event.type !== 'ScheduleCreated') return;
      const state = scheduleDecider.evolve(scheduleDecider.initialState(), event) as ExistingSchedule;
      const { spec } = state;
      this.stmt.insert.run(id, Number(position), Number(revision), JSON.stringify(state), recordedAt.getTime(), recordedAt.getTime(), spec.appId, spec.environment, spec.name, state.status);
      return;
    }
    if (Number(revision) <= row.revision) return;
    const state = scheduleDecider.evolve(JSON.parse(row.state) as ExistingSchedule, event) as ExistingSchedule;
    const pending =
      event.type === 'ScheduleFired' || event.type === 'ScheduleTriggered'
        ? pendingValue([...pendingIds(row.pending_dispatch).filter((id) => id !== event.data.dispatchId), event.data.dispatchId])
        : row.pending_dispatch;
    this.stmt.update.run(Number(revision), JSON.stringify(state), recordedAt.getTime(), pending, id);
    if (state.status !== row.status) this.stmt.setStatus.run(state.status, id);
  }

  /** Any schedule by id, deleted ones included. */
  getById(id: string): ScheduleView | undefined {
    const row = this.stmt.get.get(id);
    return row ? toView(row) : undefined;
  }

  /** A schedule of that app and environment, deleted ones included. */
  get(appId: string, environment: string, id: string): ScheduleView | undefined {
    const view = this.getById(id);
    return view && view.state.spec.appId === appId && view.state.spec.environment === environment ? view : undefined;
  }

  /** One page of the schedules matching `filter`, in creation order, after the schedule `after`. */
  page(filter: ScheduleFilter, first: number, after?: string | null): Page<ScheduleView> {
    return pagePlanned<ScheduleRow, ScheduleView>(this.rm, planOf(filter), first, after, toView);
  }

  /**
   * What start-up keeps in memory: every schedule that can fire, and each deleted one whose last
   * dispatch is not in the log yet (for that dispatch alone), with that last dispatch when it is
   * still awaited or (a workflow) still running, or failed (a retry may run it again). Read through `rm_schedules_kept`, which holds no
   * other deleted schedule: the cost follows the schedules that can fire, not all there were.
   */
  kept(): Array<{ view: ScheduleView; awaiting: AwaitingDispatch[]; running: string | null }> {
    const rows = prepareIndexed(
      this.rm,
      `SELECT s.id, s.seq, s.revision, s.state, s.created_at, s.updated_at, s.pending_dispatch,
         coalesce(w.status IN ('completed', 'terminated'), 0) AS finished
       FROM rm_schedules s INDEXED BY rm_schedules_kept
       LEFT JOIN rm_workflows w ON w.id = json_extract(s.state, '$.lastDispatchId') AND s.status != 'deleted'
       WHERE (s.status != 'deleted' OR s.pending_dispatch IS NOT NULL)
       ORDER BY s.seq`,
    ).all() as KeptRow[];
    return rows.map((row) => {
      const view = toView(row);
      const { state } = view;
      const last = state.lastDispatchId;
      return {
        view,
        // Every firing whose dispatch is not in the log (start-up dispatches them at once).
        awaiting: pendingIds(row.pending_dispatch).map((dispatchId) => ({ scheduleId: row.id, dispatchId, firedAt: state.lastFiredAt ?? state.updatedAt, spec: state.spec })),
        running: last !== null && state.status !== 'deleted' && state.spec.kind === 'workflow' && !row.finished ? last : null,
      };
    });
  }
}

/**
 * How a schedule filter is read (see list-query.ts): a name and a state each have an index ending
 * in `seq`; with both, the one with fewer entries is read and the other checked on its rows.
 */
function planOf(filter: ScheduleFilter): ListPlan {
  const scope = 'app_id = @appId AND environment = @environment';
  const params: Record<string, unknown> = { appId: filter.appId, environment: filter.environment };
  const candidates: Candidate[] = [];
  if (filter.name != null) {
    params.name = filter.name;
    candidates.push({ scans: [{ index: 'rm_schedules_name', clause: `${scope} AND name = @name` }], condition: 'name = @name', ordered: true });
  }
  if (filter.status != null) {
    params.status = filter.status;
    candidates.push({ scans: [{ index: 'rm_schedules_state', clause: `${scope} AND status = @status` }], condition: 'status = @status', ordered: true });
  }
  return { table: 'rm_schedules', params, candidates, residual: [], scope: { index: 'rm_schedules_scope', clause: scope } };
}

@Projection(SCHEDULES_PROJECTION_EVENT_TYPES)
export class SchedulesProjection implements IEventHandler<StoredEvent> {
  constructor(
    private readonly model: SchedulesReadModel,
    private readonly table: SchedulesTable,
  ) {}

  /** At start: the schedules that can fire, and the dispatches still awaited, as `rm_schedules` holds them at the checkpoint. */
  load(): void {
    for (const { view, awaiting, running } of this.table.kept()) this.model.restore(view, awaiting, running);
  }

  handle(stored: StoredEvent): void {
    this.model.apply(stored.recorded);
  }
}
