import { describe, expect, it } from '@jest/globals';
import type { RecordedEvent } from '../event-store/event-store.port.js';
import { SchedulesReadModel } from './schedules.read-model.js';

/**
 * The scheduler's memory folded from the whole log as it is after retention deleted a workflow a
 * schedule dispatched (an instance whose read models start empty on EventStoreDB: every event
 * goes through the in-memory projection): the deleted workflow's WorkflowDispatched is gone, and
 * the occurrence must not be left awaiting its dispatch (the scheduler dispatches those at start).
 */
describe('SchedulesReadModel folded after retention', () => {
  const T0 = Date.parse('2026-01-01T00:00:00Z');
  let position = 0n;
  const revisions = new Map<string, bigint>();
  const event = (streamId: string, type: string, data: unknown): RecordedEvent => {
    const revision = revisions.get(streamId) ?? 0n;
    revisions.set(streamId, revision + 1n);
    return { id: `e${position}`, type, streamId, revision, position: position++, data, metadata: {} as never, recordedAt: new Date(T0) };
  };

  it('a dispatch retention deleted is not awaited', () => {
    const model = new SchedulesReadModel();
    const log = [
      event('schedule-s', 'ScheduleCreated', {
        scheduleId: 's', appId: 'demo', environment: 'prod', kind: 'workflow', name: 'Report', input: [], tag: null, cron: '0 0 1 1 *',
        sixFields: 'year', timezone: 'UTC', overlapPolicy: 'allow', catchUpWindowMs: 60_000, createdAt: new Date(T0).toISOString(),
      }),
      event('schedule-s', 'ScheduleTriggered', { dispatchId: 'w1', triggeredAt: new Date(T0 + 1000).toISOString() }),
      // workflow-w1's WorkflowDispatched … WorkflowTerminated: deleted by retention.
      event('schedule-s', 'ScheduleTriggered', { dispatchId: 'w2', triggeredAt: new Date(T0 + 2000).toISOString() }),
      event('workflow-w2', 'WorkflowDispatched', { workflowId: 'w2', scheduleId: 's' }),
      event('retention-r', 'WorkflowsExpired', { workflowIds: ['w1'], cutoff: new Date(T0 + 3000).toISOString() }),
    ];
    for (const e of log) model.apply(e);
    expect([...model.awaiting()].map((a) => a.dispatchId)).toEqual([]);
  });
});
