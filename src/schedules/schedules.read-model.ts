import { Inject, Injectable } from '@nestjs/common';
import type { IEventHandler } from '@nestjs/cqrs';
import { RecordedEvent } from '../event-store/event-store.port.js';
import { DurableProjection, Projection, ReadModel, StoredEvent } from '../event-store/event-registry.js';
import { READ_MODEL_DB, ReadModelDb } from '../event-store/read-model-db.js';
import { ExistingSchedule, SCHEDULE_EVENT_TYPES, ScheduleEvent, ScheduleEventData, ScheduleStatus, nextFireAt, scheduleDecider } from './domain/schedule.decider.js';

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
] as const;

const scope = (appId: string, environment: string) => `${appId}\u0000${environment}`;

/**
 * Every schedule of the log, folded with the decider's own `evolve`, plus what the scheduler
 * needs besides: which fired occurrences still wait for their dispatch (to redo it after a crash)
 * and which workflow each schedule dispatched last (to wake BUFFER_ONE when it ends). Plain
 * class: the Nest projection below feeds it, and so do the scheduler's specs.
 */
@Injectable()
export class SchedulesReadModel {
  private readonly byId = new Map<string, ScheduleView>();
  private readonly byScope = new Map<string, ScheduleView[]>();
  private readonly awaitingDispatch = new Map<string, AwaitingDispatch>();
  private readonly lastDispatchOf = new Map<string, string>();
  private readonly nextCache = new Map<string, { cursor: number; status: ScheduleStatus; at: number | null }>();
  private readonly listeners: Array<(change: ScheduleChange) => void> = [];

  onChange(listener: (change: ScheduleChange) => void): void {
    this.listeners.push(listener);
  }

  get(appId: string, environment: string, id: string): ScheduleView | undefined {
    const view = this.byId.get(id);
    return view && view.state.spec.appId === appId && view.state.spec.environment === environment ? view : undefined;
  }

  getById(id: string): ScheduleView | undefined {
    return this.byId.get(id);
  }

  all(): IterableIterator<ScheduleView> {
    return this.byId.values();
  }

  /** Schedules of an app and environment, in creation order. */
  list(filter: ScheduleFilter): ScheduleView[] {
    return (this.byScope.get(scope(filter.appId, filter.environment)) ?? []).filter(
      (v) => (filter.name == null || v.state.spec.name === filter.name) && (filter.status == null || v.state.status === filter.status),
    );
  }

  awaiting(): IterableIterator<AwaitingDispatch> {
    return this.awaitingDispatch.values();
  }

  awaitingFor(dispatchId: string): AwaitingDispatch | undefined {
    return this.awaitingDispatch.get(dispatchId);
  }

  /** Next cron occurrence of an active schedule (cached until its cursor or status moves). */
  nextFireAt(view: ScheduleView): number | null {
    const { cursor, status } = view.state;
    const cached = this.nextCache.get(view.id);
    if (cached && cached.cursor === cursor && cached.status === status) return cached.at;
    const at = nextFireAt(view.state);
    this.nextCache.set(view.id, { cursor, status, at });
    return at;
  }

  get size(): number {
    return this.byId.size;
  }

  apply(recorded: RecordedEvent): void {
    const { streamId, type } = recorded;
    if (streamId.startsWith('schedule-')) return this.applySchedule(streamId.slice('schedule-'.length), recorded);
    switch (type) {
      case 'TaskDispatched':
      case 'WorkflowDispatched': {
        const data = recorded.data as { scheduleId?: string | null };
        if (!data.scheduleId) return;
        const id = streamId.slice(streamId.indexOf('-') + 1);
        if (this.awaitingDispatch.delete(id)) this.emit({ kind: 'awaiting', dispatchId: id });
        return;
      }
      case 'WorkflowCompleted':
      case 'WorkflowFailed':
      case 'WorkflowTerminated': {
        if (!streamId.startsWith('workflow-')) return;
        const id = streamId.slice('workflow-'.length);
        const scheduleId = this.lastDispatchOf.get(id);
        if (scheduleId === undefined) return;
        this.lastDispatchOf.delete(id);
        this.emit({ kind: 'finished', scheduleId });
        return;
      }
    }
  }

  /** Puts back a schedule as `rm_schedules` kept it (at start, instead of a replay). */
  restore(view: ScheduleView, awaiting: AwaitingDispatch | null, running: string | null): void {
    this.byId.set(view.id, view);
    const key = scope(view.state.spec.appId, view.state.spec.environment);
    const list = this.byScope.get(key);
    if (list) list.push(view);
    else this.byScope.set(key, [view]);
    if (awaiting) this.awaitingDispatch.set(awaiting.dispatchId, awaiting);
    if (running) this.lastDispatchOf.set(running, view.id);
  }

  private applySchedule(id: string, recorded: RecordedEvent): void {
    const event = { type: recorded.type, data: recorded.data } as ScheduleEvent;
    let view = this.byId.get(id);
    if (view && recorded.revision <= view.revision) return;
    if (!view) {
      if (event.type !== 'ScheduleCreated') return;
      const state = scheduleDecider.evolve(scheduleDecider.initialState(), event) as ExistingSchedule;
      view = { id, state, revision: recorded.revision, createdAt: recorded.recordedAt, updatedAt: recorded.recordedAt };
      this.byId.set(id, view);
      const key = scope(state.spec.appId, state.spec.environment);
      const list = this.byScope.get(key);
      if (list) list.push(view);
      else this.byScope.set(key, [view]);
    } else {
      const before = view.state;
      view.state = scheduleDecider.evolve(before, event) as ExistingSchedule;
      view.revision = recorded.revision;
      view.updatedAt = recorded.recordedAt;
      if (event.type === 'ScheduleFired' || event.type === 'ScheduleTriggered') {
        const { dispatchId } = event.data as ScheduleEventData['ScheduleFired'];
        const firedAt = Date.parse(event.type === 'ScheduleFired' ? event.data.firedAt : event.data.triggeredAt);
        this.awaitingDispatch.set(dispatchId, { scheduleId: id, dispatchId, firedAt });
        if (before.lastDispatchId !== null) this.lastDispatchOf.delete(before.lastDispatchId);
        if (view.state.spec.kind === 'workflow') this.lastDispatchOf.set(dispatchId, id);
        this.emit({ kind: 'awaiting', dispatchId });
      }
    }
    this.emit({ kind: 'schedule', scheduleId: id });
  }

  private emit(change: ScheduleChange): void {
    for (const listener of this.listeners) listener(change);
  }
}

interface ScheduleRow {
  id: string;
  revision: number;
  state: string;
  created_at: number;
  updated_at: number;
  dispatched: number;
  finished: number;
}

/**
 * Schedules in `rm_schedules`: each row the decider state folded so far (written in the
 * ProjectionRunner's batch transaction). Schedules are few, so the scheduler keeps them in
 * memory as well (`SchedulesReadModel`), loaded from these rows at start.
 */
@ReadModel(SCHEDULE_EVENT_TYPES)
export class SchedulesTable implements DurableProjection {
  private stmt!: ReturnType<SchedulesTable['prepare']>;

  constructor(@Inject(READ_MODEL_DB) private readonly rm: ReadModelDb) {}

  migrate(): void {
    this.rm.db.exec(`
      CREATE TABLE IF NOT EXISTS rm_schedules (
        id         TEXT PRIMARY KEY,
        seq        INTEGER NOT NULL,
        revision   INTEGER NOT NULL,
        state      TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
    `);
    this.stmt = this.prepare();
  }

  private prepare() {
    const db = this.rm.db;
    return {
      get: db.prepare<[string], { revision: number; state: string }>('SELECT revision, state FROM rm_schedules WHERE id = ?'),
      insert: db.prepare<[string, number, number, string, number, number]>(
        'INSERT OR IGNORE INTO rm_schedules (id, seq, revision, state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      update: db.prepare<[number, string, number, string]>('UPDATE rm_schedules SET revision = ?, state = ?, updated_at = ? WHERE id = ?'),
      // Whether the last dispatch is in the log yet, and whether that workflow has ended.
      all: db.prepare<[], ScheduleRow>(`
        SELECT s.id, s.revision, s.state, s.created_at, s.updated_at,
          (w.id IS NOT NULL OR t.id IS NOT NULL) AS dispatched,
          coalesce(w.status IN ('completed', 'failed', 'terminated'), 0) AS finished
        FROM rm_schedules s
        LEFT JOIN rm_workflows w ON w.id = json_extract(s.state, '$.lastDispatchId')
        LEFT JOIN rm_tasks t ON t.id = json_extract(s.state, '$.lastDispatchId')
        ORDER BY s.seq`),
    };
  }

  project(stored: StoredEvent): void {
    const { streamId, revision, position, recordedAt } = stored.recorded;
    if (!streamId.startsWith('schedule-')) return;
    const id = streamId.slice('schedule-'.length);
    const event = { type: stored.type, data: stored.data } as ScheduleEvent;
    const row = this.stmt.get.get(id);
    if (!row) {
      if (event.type !== 'ScheduleCreated') return;
      const state = scheduleDecider.evolve(scheduleDecider.initialState(), event);
      this.stmt.insert.run(id, Number(position), Number(revision), JSON.stringify(state), recordedAt.getTime(), recordedAt.getTime());
      return;
    }
    if (Number(revision) <= row.revision) return;
    const state = scheduleDecider.evolve(JSON.parse(row.state) as ExistingSchedule, event);
    this.stmt.update.run(Number(revision), JSON.stringify(state), recordedAt.getTime(), id);
  }

  /** Every schedule, with its last dispatch still awaited (not in the log) or still running. */
  rows(): Array<{ view: ScheduleView; awaiting: AwaitingDispatch | null; running: string | null }> {
    return this.stmt.all.all().map((row) => {
      const state = JSON.parse(row.state) as ExistingSchedule;
      const view: ScheduleView = { id: row.id, state, revision: BigInt(row.revision), createdAt: new Date(row.created_at), updatedAt: new Date(row.updated_at) };
      const last = state.lastDispatchId;
      return {
        view,
        awaiting: last !== null && !row.dispatched ? { scheduleId: row.id, dispatchId: last, firedAt: state.lastFiredAt ?? state.updatedAt } : null,
        running: last !== null && state.spec.kind === 'workflow' && !row.finished ? last : null,
      };
    });
  }
}

@Projection(SCHEDULES_PROJECTION_EVENT_TYPES)
export class SchedulesProjection implements IEventHandler<StoredEvent> {
  constructor(
    private readonly model: SchedulesReadModel,
    private readonly table: SchedulesTable,
  ) {}

  /** At start: the schedules as `rm_schedules` holds them at the checkpoint. */
  load(): void {
    for (const { view, awaiting, running } of this.table.rows()) this.model.restore(view, awaiting, running);
  }

  handle(stored: StoredEvent): void {
    this.model.apply(stored.recorded);
  }
}
