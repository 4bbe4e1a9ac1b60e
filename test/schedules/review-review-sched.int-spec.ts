/**
 * Review (schedules and idempotency, second round): edges where schedules meet concurrency,
 * quotas and the idempotency keys.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Schedules, readStore, unique } from './schedule-helpers.js';

describe('MAX_SCHEDULES_PER_APP on one instance under concurrent requests', () => {
  let service: Service;
  beforeAll(async () => {
    service = await startService({ env: { MAX_SCHEDULES_PER_APP: '3' } });
  });
  afterAll(() => service?.stop());

  it('twelve scheduleTask requests sent at once to one instance create at most 3 schedules (the rest RATE_LIMITED)', async () => {
    const api = new Schedules(service, 'burst', 'demo');
    const responses = await Promise.all(Array.from({ length: 12 }, () => api.scheduleTaskRaw({ name: unique('Burst'), cron: '0 9 * * *' })));
    const accepted = responses.filter((r) => !r.body.errors);
    const refused = responses.filter((r) => r.body.errors?.[0]?.extensions?.code === 'RATE_LIMITED');
    const live = (await api.list({ state: 'ACTIVE' }, { first: 100 })).nodes.length;
    expect({ accepted: accepted.length, refused: refused.length, live }).toEqual({ accepted: 3, refused: 9, live: 3 });
  });
});

describe('two instances on one store, a schedule paused and resumed through both while it fires every second', () => {
  const services: Service[] = [];
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
  });

  it('fires nothing inside a paused interval, handles every occurrence at most once, and dispatches every firing exactly once', async () => {
    const storeUrl = freshStoreUrl();
    const a = await startService({ storeUrl });
    services.push(a);
    const b = await startService({ storeUrl });
    services.push(b);
    const apiA = new Schedules(a, 'toggle', 'demo', a.token);
    const apiB = new Schedules(b, 'toggle', 'demo', b.token || a.token);
    const name = unique('Toggle');
    const id = await apiA.scheduleTask({ cron: '*/1 * * * * * *', name });
    await waitFor(async () => (await apiB.schedule(id)) !== null, { timeoutMs: 5_000, intervalMs: 20, description: 'the schedule on B' });
    for (let round = 0; round < 6; round++) {
      const [pauser, resumer] = round % 2 === 0 ? [apiA, apiB] : [apiB, apiA];
      const startedAt = Date.now();
      await waitFor(() => Date.now() >= startedAt + 700 + (round * 137) % 500, { timeoutMs: 5_000, intervalMs: 10, description: 'a moment of firing' });
      await pauser.act('pause', id);
      const pausedAt = Date.now();
      await waitFor(() => Date.now() >= pausedAt + 1_300, { timeoutMs: 5_000, intervalMs: 10, description: 'a paused moment' });
      await resumer.act('resume', id);
    }
    await apiB.act('delete', id);
    await Promise.all([a.stop(), b.stop()]);

    const events = await readStore(storeUrl);
    const stream = events.filter((e) => e.streamId === `schedule-${id}`);
    const fired = stream.filter((e) => e.type === 'ScheduleFired').map((e) => e.data as { occurrence: string; dispatchId: string });
    const occurrences = fired.map((f) => Date.parse(f.occurrence));
    expect(new Set(occurrences).size).toBe(occurrences.length);
    // No occurrence fired that fell while the schedule was paused (between a pause and the next resume).
    const intervals: Array<[number, number]> = [];
    let pausedAt: number | null = null;
    for (const e of stream) {
      if (e.type === 'SchedulePaused') pausedAt = Date.parse(e.data.pausedAt);
      if (e.type === 'ScheduleResumed' && pausedAt !== null) {
        intervals.push([pausedAt, Date.parse(e.data.resumedAt)]);
        pausedAt = null;
      }
    }
    expect(intervals).toHaveLength(6);
    const inPause = occurrences.filter((t) => intervals.some(([p, r]) => t > p && t <= r)).map((t) => new Date(t).toISOString());
    expect(inPause).toEqual([]);
    const skipped = stream.filter((e) => e.type === 'ScheduleOccurrenceSkipped');
    expect(skipped).toEqual([]);
    const dispatched = events.filter((e) => e.type === 'TaskDispatched' && e.data.scheduleId === id).map((e) => e.data.taskId as string);
    expect([...dispatched].sort()).toEqual(fired.map((f) => f.dispatchId).sort());
  }, 90_000);
});
