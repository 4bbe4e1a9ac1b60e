/**
 * The scheduler's heap of due times holds the schedules that can fire, not every due time it
 * was ever given: a schedule deleted (or paused, or given another cron) before its next
 * occurrence must not stay in memory until that occurrence's time.
 */
import { describe, expect, it } from '@jest/globals';
import type { RecordedEvent } from '../event-store/event-store.port.js';
import { ManualClock } from '../shared/clock.js';
import { uuidv7 } from '../shared/ids.js';
import { scheduleDecider } from './domain/schedule.decider.js';
import { Scheduler } from './scheduler.js';
import { SchedulesReadModel } from './schedules.read-model.js';

const T0 = Date.parse('2026-01-01T00:00:00.300Z');

/** The scheduler's heap, as many entries as it holds (live and stale). */
const heapSize = (scheduler: Scheduler): number => (scheduler as unknown as { heap: { size: number } }).heap.size;

describe('Scheduler: the heap of due times', () => {
  it('holds nothing of 5,000 yearly schedules created and deleted while a daily one lives', async () => {
    const clock = new ManualClock(T0);
    const model = new SchedulesReadModel();
    const scheduler = new Scheduler({
      clock,
      decide: () => Promise.reject(new Error('not used')),
      model,
      dispatch: () => Promise.reject(new Error('not used')),
      isRunning: () => false,
      caughtUp: () => Promise.resolve(),
    });
    scheduler.start();
    let position = 0n;
    const apply = (scheduleId: string, revision: number, type: string, data: unknown) =>
      model.apply({
        id: uuidv7(),
        type,
        streamId: `schedule-${scheduleId}`,
        revision: BigInt(revision),
        position: position++,
        data,
        metadata: { actor: 'test', appId: 'demo', environment: 'prod', correlationId: 'c' },
        recordedAt: new Date(clock.now()),
      } as RecordedEvent);
    for (let n = 0; n <= 5_000; n++) {
      const scheduleId = uuidv7(clock.now());
      // The first one stays: a daily schedule, due before any of the yearly ones.
      const cron = n === 0 ? '0 0 * * *' : '0 0 1 1 *';
      let state = scheduleDecider.initialState();
      let revision = 0;
      const run = (command: Parameters<typeof scheduleDecider.decide>[0]) => {
        for (const event of scheduleDecider.decide(command, state)) {
          state = scheduleDecider.evolve(state, event);
          apply(scheduleId, revision++, event.type, event.data);
        }
      };
      run({
        type: 'CreateSchedule', scheduleId, appId: 'demo', environment: 'prod', kind: 'task', name: 'Report', input: [], tag: null,
        cron, timezone: 'UTC', overlapPolicy: 'allow', catchUpWindowMs: 60_000, now: clock.now(),
      } as Parameters<typeof scheduleDecider.decide>[0]);
      // The scheduler refreshes what changed after a microtask.
      await Promise.resolve();
      if (n === 0) continue;
      run({ type: 'DeleteSchedule', scheduleId, appId: 'demo', environment: 'prod', now: clock.now() } as Parameters<typeof scheduleDecider.decide>[0]);
      await Promise.resolve();
    }
    await scheduler.whenIdle();
    expect([...model.all()]).toHaveLength(1);
    expect(heapSize(scheduler)).toBeLessThan(2_000);
    scheduler.stop();
  });
});
