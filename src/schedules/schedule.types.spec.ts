import { describe, expect, it } from '@jest/globals';
import { RecordedEvent } from '../event-store/event-store.port.js';
import { ScheduleEventData } from './domain/schedule.decider.js';
import { toScheduleType } from './schedule.types.js';
import { SchedulesReadModel } from './schedules.read-model.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** A schedule held by the read model whose input counts how often it is turned into JSON. */
function heldSchedule(): { model: SchedulesReadModel; stringified: () => number } {
  let count = 0;
  const input: unknown[] = ['weekly', { rows: 3 }];
  Object.defineProperty(input, 'toJSON', {
    enumerable: false,
    value: () => {
      count++;
      return ['weekly', { rows: 3 }];
    },
  });
  const data: ScheduleEventData['ScheduleCreated'] = {
    scheduleId: 's1',
    appId: 'demo',
    environment: 'prod',
    kind: 'task',
    name: 'Report',
    input: input as never,
    tag: null,
    cron: '0 0 1 1 *',
    sixFields: 'year',
    timezone: 'UTC',
    overlapPolicy: 'allow',
    catchUpWindowMs: 60_000,
    createdAt: new Date(T0).toISOString(),
  };
  const recorded: RecordedEvent = {
    id: 'e0',
    type: 'ScheduleCreated',
    streamId: 'schedule-s1',
    revision: 0n,
    position: 0n,
    data,
    metadata: { actor: 'test', appId: 'demo', environment: 'prod', correlationId: 'c', causationId: null, at: new Date(T0).toISOString() } as never,
    recordedAt: new Date(T0),
  };
  const model = new SchedulesReadModel();
  model.apply(recorded);
  return { model, stringified: () => count };
}

describe('toScheduleType', () => {
  it('computes input only when read, and once however often it is read (the answer budget reads it, then GraphQL)', () => {
    const { model, stringified } = heldSchedule();
    const schedule = toScheduleType(model.getById('s1')!, model);
    expect(stringified()).toBe(0);
    expect(schedule.input).toBe('["weekly",{"rows":3}]');
    expect(schedule.input).toBe('["weekly",{"rows":3}]');
    expect({ ...schedule }.input).toBe('["weekly",{"rows":3}]');
    expect(JSON.parse(JSON.stringify(schedule)).cronDescription).toBe(schedule.cronDescription);
    expect(stringified()).toBe(1);
  });
});
