/**
 * A fired occurrence whose dispatch is not in the log must survive a restart
 * (README, Exactly once: "At start, and on any instance a while after a firing, firings whose
 * dispatch is not in the log are dispatched again under the same id"). `rm_schedules` keeps one
 * `pending_dispatch` per schedule, the LAST firing's: when a later firing (the next occurrence of
 * a seconds-level cron, or a trigger) is dispatched before the earlier one is (its instance was
 * killed between ScheduleFired and the dispatch, or the dispatch failed and waits for recovery),
 * the column is cleared and a restart forgets the earlier firing for good: a fired occurrence that
 * is never dispatched.
 */
import { describe, expect, it } from '@jest/globals';
import { RecordedEvent } from '../event-store/event-store.port.js';
import { StoredEvent } from '../event-store/event-registry.js';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { WorkflowsReadModel } from '../workflows/workflows.read-model.js';
import { ScheduleEventData } from './domain/schedule.decider.js';
import { SchedulesProjection, SchedulesReadModel, SchedulesTable } from './schedules.read-model.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

const events: RecordedEvent[] = [];
const revisions = new Map<string, bigint>();
function add(streamId: string, type: string, data: unknown, at: number): void {
  const revision = revisions.get(streamId) ?? 0n;
  revisions.set(streamId, revision + 1n);
  events.push({
    id: `e${events.length}`,
    type,
    streamId,
    revision,
    position: BigInt(events.length),
    data,
    metadata: { actor: 'test', appId: 'demo', environment: 'prod', correlationId: 'c', causationId: null, at: iso(at) } as never,
    recordedAt: new Date(at),
  });
}

describe('a fired occurrence not dispatched yet, across a restart', () => {
  it('is still awaited after a restart when a later firing of the same schedule was dispatched first', () => {
    const rm = new ReadModelDb(':memory:');
    new WorkflowsReadModel(rm).migrate();
    const table = new SchedulesTable(rm);
    table.migrate();
    const live = new SchedulesReadModel();

    const created: ScheduleEventData['ScheduleCreated'] = {
      scheduleId: 's1', appId: 'demo', environment: 'prod', kind: 'task', name: 'Report', input: [], tag: null,
      cron: '* * * * * * *', sixFields: 'year', timezone: 'UTC', overlapPolicy: 'allow', catchUpWindowMs: 60_000, createdAt: iso(T0),
    };
    add('schedule-s1', 'ScheduleCreated', created, T0);
    // Occurrence 1 fired by an instance killed before it dispatched; occurrence 2 fired and dispatched by another.
    add('schedule-s1', 'ScheduleFired', { occurrence: iso(T0 + 1000), dispatchId: 'd1', firedAt: iso(T0 + 1000) }, T0 + 1000);
    add('schedule-s1', 'ScheduleFired', { occurrence: iso(T0 + 2000), dispatchId: 'd2', firedAt: iso(T0 + 2000) }, T0 + 2000);
    add('task-d2', 'TaskDispatched', { taskId: 'd2', appId: 'demo', environment: 'prod', name: 'Report', args: [], scheduleId: 's1' }, T0 + 2000);

    rm.db.transaction(() => {
      for (const event of events) table.project(new StoredEvent(event));
    })();
    for (const event of events) live.apply(event);
    // The live instance knows d1 still waits for its dispatch...
    expect([...live.awaiting()].map((a) => a.dispatchId)).toEqual(['d1']);

    // ...and so must an instance started now on the same rows.
    const restarted = new SchedulesReadModel();
    rm.db.transaction(() => new SchedulesProjection(restarted, table).load())();
    expect([...restarted.awaiting()].map((a) => a.dispatchId)).toEqual(['d1']);

    // Once d1's dispatch is in the log, nothing is awaited any more, before or after a restart.
    const before = events.length;
    add('task-d1', 'TaskDispatched', { taskId: 'd1', appId: 'demo', environment: 'prod', name: 'Report', args: [], scheduleId: 's1' }, T0 + 3000);
    rm.db.transaction(() => table.project(new StoredEvent(events[before])))();
    live.apply(events[before]);
    expect([...live.awaiting()]).toEqual([]);
    const again = new SchedulesReadModel();
    rm.db.transaction(() => new SchedulesProjection(again, table).load())();
    expect([...again.awaiting()]).toEqual([]);
    expect(rm.db.prepare('SELECT pending_dispatch FROM rm_schedules WHERE id = ?').get('s1')).toEqual({ pending_dispatch: null });
  });
});
