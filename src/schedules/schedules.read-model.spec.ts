import { describe, expect, it } from '@jest/globals';
import { RecordedEvent } from '../event-store/event-store.port.js';
import { StoredEvent } from '../event-store/event-registry.js';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { WorkflowsReadModel } from '../workflows/workflows.read-model.js';
import { ScheduleEventData } from './domain/schedule.decider.js';
import { SchedulesProjection, SchedulesReadModel, SchedulesTable } from './schedules.read-model.js';

/**
 * Deleted schedules are history: the scheduler's memory holds the schedules that can still fire
 * (and a deleted one's fired occurrence only until its dispatch is in the log), while the API
 * reads every schedule, deleted ones included, from `rm_schedules`.
 */

const T0 = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

/** A log of events, positions and revisions given as they come. */
class Log {
  readonly events: RecordedEvent[] = [];
  private readonly revisions = new Map<string, bigint>();

  add(streamId: string, type: string, data: unknown, at = T0 + this.events.length): RecordedEvent {
    const revision = this.revisions.get(streamId) ?? 0n;
    this.revisions.set(streamId, revision + 1n);
    const event: RecordedEvent = {
      id: `e${this.events.length}`,
      type,
      streamId,
      revision,
      position: BigInt(this.events.length),
      data,
      metadata: { actor: 'test', appId: 'demo', environment: 'prod', correlationId: 'c', causationId: null, at: iso(at) } as never,
      recordedAt: new Date(at),
    };
    this.events.push(event);
    return event;
  }

  created(id: string, fields: { name?: string; kind?: 'task' | 'workflow'; environment?: string } = {}): void {
    const data: ScheduleEventData['ScheduleCreated'] = {
      scheduleId: id,
      appId: 'demo',
      environment: fields.environment ?? 'prod',
      kind: fields.kind ?? 'task',
      name: fields.name ?? 'Report',
      input: ['weekly'],
      tag: null,
      cron: '0 0 1 1 *',
      sixFields: 'year',
      timezone: 'UTC',
      overlapPolicy: 'allow',
      catchUpWindowMs: 60_000,
      createdAt: iso(T0),
    };
    this.add(`schedule-${id}`, 'ScheduleCreated', data);
  }

  fired(id: string, dispatchId: string): void {
    this.add(`schedule-${id}`, 'ScheduleFired', { occurrence: iso(T0 + 60_000), dispatchId, firedAt: iso(T0 + 60_000) });
  }

  deleted(id: string): void {
    this.add(`schedule-${id}`, 'ScheduleDeleted', { deletedAt: iso(T0 + 120_000) });
  }

  paused(id: string): void {
    this.add(`schedule-${id}`, 'SchedulePaused', { pausedAt: iso(T0 + 90_000) });
  }

  taskDispatched(taskId: string, scheduleId: string): void {
    this.add(`task-${taskId}`, 'TaskDispatched', { taskId, appId: 'demo', environment: 'prod', name: 'Report', args: [], scheduleId });
  }
}

/** The service's read path: rows in one transaction per batch, then memory. */
function fold(rm: ReadModelDb, table: SchedulesTable, model: SchedulesReadModel, events: RecordedEvent[]): void {
  rm.db.transaction(() => {
    for (const event of events) table.project(new StoredEvent(event));
  })();
  for (const event of events) model.apply(event);
}

function openTables(): { rm: ReadModelDb; table: SchedulesTable } {
  const rm = new ReadModelDb(':memory:');
  new WorkflowsReadModel(rm).migrate();
  const table = new SchedulesTable(rm);
  table.migrate();
  return { rm, table };
}

/** A restart: a new model loaded from the rows. */
function restarted(rm: ReadModelDb, table: SchedulesTable): SchedulesReadModel {
  const model = new SchedulesReadModel();
  rm.db.transaction(() => new SchedulesProjection(model, table).load())();
  return model;
}

describe('SchedulesReadModel (memory)', () => {
  it('forgets a deleted schedule: no view, no next-firing cache, no running instance', () => {
    const log = new Log();
    log.created('keep');
    log.created('gone', { kind: 'workflow' });
    log.fired('gone', 'w-gone');
    log.add('workflow-w-gone', 'WorkflowDispatched', { workflowId: 'w-gone', scheduleId: 'gone' });
    const model = new SchedulesReadModel();
    for (const event of log.events) model.apply(event);
    const gone = model.getById('gone')!;
    expect(model.nextFireAt(gone)).toBe(Date.parse('2027-01-01T00:00:00Z'));
    expect(model.held).toEqual({ schedules: 2, awaiting: 0, running: 1, nextFireAt: 1 });

    log.deleted('gone');
    model.apply(log.events.at(-1)!);
    expect(model.getById('gone')).toBeUndefined();
    expect(model.get('demo', 'prod', 'gone')).toBeUndefined();
    expect([...model.all()].map((v) => v.id)).toEqual(['keep']);
    expect(model.size).toBe(1);
    expect(model.held).toEqual({ schedules: 1, awaiting: 0, running: 0, nextFireAt: 0 });
  });

  it('keeps the fired occurrence of a deleted schedule, with what to dispatch, until its dispatch is in the log', () => {
    const log = new Log();
    log.created('s');
    log.fired('s', 't1');
    log.deleted('s');
    const model = new SchedulesReadModel();
    for (const event of log.events) model.apply(event);
    expect(model.getById('s')).toBeUndefined();
    expect([...model.awaiting()]).toEqual([{ scheduleId: 's', dispatchId: 't1', firedAt: T0 + 60_000, spec: expect.objectContaining({ scheduleId: 's', name: 'Report' }) }]);

    log.taskDispatched('t1', 's');
    model.apply(log.events.at(-1)!);
    expect(model.held).toEqual({ schedules: 0, awaiting: 0, running: 0, nextFireAt: 0 });
  });

  it('folding the log again changes nothing (events at or below a revision are ignored, a replayed creation is forgotten again at its deletion)', () => {
    const log = new Log();
    for (let i = 0; i < 5; i++) log.created(`s${i}`);
    log.paused('s1');
    log.fired('s2', 't2');
    log.deleted('s3');
    log.deleted('s4');
    const model = new SchedulesReadModel();
    for (const event of log.events) model.apply(event);
    const once = { held: model.held, views: structuredClone([...model.all()]) };
    for (const event of log.events) model.apply(event);
    expect({ held: model.held, views: [...model.all()] }).toEqual(once);
    expect(once.views.map((v) => [v.id, v.state.status, v.revision])).toEqual([
      ['s0', 'active', 0n],
      ['s1', 'paused', 1n],
      ['s2', 'active', 1n],
    ]);
  });

  it('memory does not grow with deleted schedules', () => {
    const log = new Log();
    for (let i = 0; i < 1_000; i++) {
      log.created(`d${i}`);
      log.deleted(`d${i}`);
    }
    log.created('live');
    const model = new SchedulesReadModel();
    for (const event of log.events) model.apply(event);
    expect(model.held).toEqual({ schedules: 1, awaiting: 0, running: 0, nextFireAt: 0 });
  });
});

describe('SchedulesTable (rm_schedules)', () => {
  it('lists deleted schedules from SQL, filtered by state and name, in creation order, with pages', () => {
    const { rm, table } = openTables();
    const model = new SchedulesReadModel();
    const log = new Log();
    for (let i = 0; i < 6; i++) log.created(`s${i}`, { name: i % 2 === 0 ? 'Even' : 'Odd' });
    log.created('other-env', { environment: 'staging' });
    log.deleted('s1');
    log.deleted('s2');
    log.deleted('s4');
    log.paused('s5');
    fold(rm, table, model, log.events);

    const ids = (page: { nodes: Array<{ id: string }> }) => page.nodes.map((v) => v.id);
    const scope = { appId: 'demo', environment: 'prod' };
    expect(ids(table.page(scope, 50))).toEqual(['s0', 's1', 's2', 's3', 's4', 's5']);
    expect(ids(table.page({ ...scope, status: 'deleted' }, 50))).toEqual(['s1', 's2', 's4']);
    expect(ids(table.page({ ...scope, status: 'deleted', name: 'Even' }, 50))).toEqual(['s2', 's4']);
    expect(ids(table.page({ ...scope, status: 'active' }, 50))).toEqual(['s0', 's3']);
    expect(ids(table.page({ ...scope, status: 'paused' }, 50))).toEqual(['s5']);
    const first = table.page({ ...scope, status: 'deleted' }, 2);
    expect(first).toMatchObject({ totalCount: 3, totalCountCapped: false, pageInfo: { hasNextPage: true } });
    expect(first.pageInfo.endCursor).toMatch(/^\d+:s2$/);
    expect(ids(table.page({ ...scope, status: 'deleted' }, 2, first.pageInfo.endCursor))).toEqual(['s4']);
    expect(table.get('demo', 'prod', 's1')?.state).toMatchObject({ status: 'deleted', spec: { name: 'Odd' } });
    expect(table.get('demo', 'staging', 's1')).toBeUndefined();
    expect(table.getById('s1')?.revision).toBe(1n);
    // Memory holds only what can fire.
    expect([...model.all()].map((v) => v.id).sort()).toEqual(['other-env', 's0', 's3', 's5']);
  });

  it('a restart loads the schedules that can fire, and a deleted one only while its last dispatch is not in the log', () => {
    const { rm, table } = openTables();
    const log = new Log();
    log.created('active');
    log.created('paused');
    log.paused('paused');
    log.created('deleted');
    log.deleted('deleted');
    log.created('fired-then-deleted');
    log.fired('fired-then-deleted', 't1');
    log.deleted('fired-then-deleted');
    log.created('dispatched-then-deleted');
    log.fired('dispatched-then-deleted', 't2');
    log.taskDispatched('t2', 'dispatched-then-deleted');
    log.deleted('dispatched-then-deleted');
    log.created('awaiting');
    log.fired('awaiting', 't3');
    fold(rm, table, new SchedulesReadModel(), log.events);

    const model = restarted(rm, table);
    expect([...model.all()].map((v) => [v.id, v.state.status])).toEqual([
      ['active', 'active'],
      ['paused', 'paused'],
      ['awaiting', 'active'],
    ]);
    expect([...model.awaiting()].map((a) => [a.scheduleId, a.dispatchId, a.spec.scheduleId])).toEqual([
      ['fired-then-deleted', 't1', 'fired-then-deleted'],
      ['awaiting', 't3', 'awaiting'],
    ]);
    // The start-up read goes through the partial index, which holds no other deleted schedule.
    const indexed = rm.db.prepare<[], { seq: number }>("SELECT seq FROM rm_schedules INDEXED BY rm_schedules_kept WHERE status != 'deleted' OR pending_dispatch IS NOT NULL").all();
    expect(indexed).toHaveLength(4);

    const more = new Log();
    more.events.push(...log.events);
    more.taskDispatched('t1', 'fired-then-deleted');
    fold(rm, table, model, more.events.slice(log.events.length));
    expect(restarted(rm, table).held).toEqual({ schedules: 3, awaiting: 1, running: 0, nextFireAt: 0 });
    expect(model.held).toEqual({ schedules: 3, awaiting: 1, running: 0, nextFireAt: 0 });
  });

  it('a running workflow dispatched last is restored for a schedule that can fire, not for a deleted one', () => {
    const { rm, table } = openTables();
    const workflows = new WorkflowsReadModel(rm);
    workflows.migrate();
    const log = new Log();
    for (const id of ['live', 'gone']) {
      log.created(id, { kind: 'workflow' });
      log.fired(id, `w-${id}`);
      log.add(`workflow-w-${id}`, 'WorkflowDispatched', {
        workflowId: `w-${id}`, appId: 'demo', environment: 'prod', name: 'Report', tag: null, input: [], parent: null, scheduleId: id, dispatchedAt: iso(T0),
      });
    }
    log.deleted('gone');
    rm.db.transaction(() => {
      for (const event of log.events) {
        workflows.project(new StoredEvent(event));
        table.project(new StoredEvent(event));
      }
      workflows.endBatch();
    })();
    expect(restarted(rm, table).held).toEqual({ schedules: 1, awaiting: 0, running: 1, nextFireAt: 0 });
  });

  it('folding an event again changes no row (idempotent by revision)', () => {
    const { rm, table } = openTables();
    const log = new Log();
    log.created('s');
    log.fired('s', 't1');
    log.deleted('s');
    fold(rm, table, new SchedulesReadModel(), log.events);
    const rows = () => rm.db.prepare('SELECT * FROM rm_schedules').all();
    const before = rows();
    fold(rm, table, new SchedulesReadModel(), log.events);
    expect(rows()).toEqual(before);
    expect(before).toMatchObject([{ id: 's', status: 'deleted', revision: 2, pending_dispatch: 't1', name: 'Report', app_id: 'demo', environment: 'prod' }]);
  });

  it('fills in the new columns of a table written by an older version, once', () => {
    const rm = new ReadModelDb(':memory:');
    new WorkflowsReadModel(rm).migrate();
    rm.db.exec(`CREATE TABLE rm_schedules (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, revision INTEGER NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`);
    const state = (status: string, lastDispatchId: string | null) =>
      JSON.stringify({ status, spec: { scheduleId: 'x', appId: 'demo', environment: 'prod', kind: 'task', name: 'Old', cron: '0 0 1 1 *', timezone: 'UTC' }, lastDispatchId });
    const insert = rm.db.prepare('INSERT INTO rm_schedules VALUES (?, ?, 1, ?, 0, 0)');
    insert.run('a', 1, state('active', null));
    insert.run('b', 2, state('deleted', 'lost'));
    insert.run('c', 3, state('deleted', 'done'));
    rm.db.exec(`INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, created_at, updated_at) VALUES ('done', 9, 'demo', 'prod', 'W', 'W', 'completed', '[]', 0, 0)`);
    const table = new SchedulesTable(rm);
    table.migrate();
    table.migrate();
    expect(rm.db.prepare('SELECT id, app_id, environment, name, status, pending_dispatch FROM rm_schedules ORDER BY seq').all()).toEqual([
      { id: 'a', app_id: 'demo', environment: 'prod', name: 'Old', status: 'active', pending_dispatch: null },
      { id: 'b', app_id: 'demo', environment: 'prod', name: 'Old', status: 'deleted', pending_dispatch: 'lost' },
      { id: 'c', app_id: 'demo', environment: 'prod', name: 'Old', status: 'deleted', pending_dispatch: null },
    ]);
    expect(table.page({ appId: 'demo', environment: 'prod', status: 'deleted' }, 10).nodes.map((v) => v.id)).toEqual(['b', 'c']);
  });
});
