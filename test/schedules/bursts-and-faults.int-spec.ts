/**
 * Schedules where they meet concurrency, quotas and a store refusing writes: a burst against
 * MAX_SCHEDULES_PER_APP on one instance, pause and resume through two instances while a schedule
 * fires, and firings or dispatches the store refuses (BATON_FAULTS).
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
    for (let round = 0; round < 3; round++) {
      const [pauser, resumer] = round % 2 === 0 ? [apiA, apiB] : [apiB, apiA];
      // It fires (again) before each pause.
      const firedBefore = (await pauser.schedule(id))?.firedCount ?? 0;
      await waitFor(async () => ((await pauser.schedule(id))?.firedCount ?? 0) > firedBefore, { timeoutMs: 5_000, intervalMs: 20, description: 'a firing before the pause' });
      await pauser.act('pause', id);
      // An occurrence falls inside the pause: the next whole second after it, and time for the
      // scheduler to have fired it had it not been paused (the cron's own clock, not a test delay).
      const missedOccurrence = Math.ceil((Date.now() + 1) / 1000) * 1000;
      await waitFor(() => Date.now() >= missedOccurrence + 300, { timeoutMs: 5_000, intervalMs: 10, description: 'an occurrence inside the pause' });
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
    expect(intervals).toHaveLength(3);
    const inPause = occurrences.filter((t) => intervals.some(([p, r]) => t > p && t <= r)).map((t) => new Date(t).toISOString());
    expect(inPause).toEqual([]);
    const skipped = stream.filter((e) => e.type === 'ScheduleOccurrenceSkipped');
    expect(skipped).toEqual([]);
    const dispatched = events.filter((e) => e.type === 'TaskDispatched' && e.data.scheduleId === id).map((e) => e.data.taskId as string);
    expect([...dispatched].sort()).toEqual(fired.map((f) => f.dispatchId).sort());
  }, 90_000);
});

describe('a store that refuses the first firings of a schedule (BATON_FAULTS append-unavailable:ScheduleFired:3)', () => {
  let service: Service | undefined;
  afterAll(() => service?.stop());

  it('the occurrences missed while it refused are recorded as one missed skip, the latest fired once; every firing dispatched once', async () => {
    service = await startService({ env: { BATON_FAULTS: 'append-unavailable:ScheduleFired:3' } });
    const api = new Schedules(service, 'outage', 'demo');
    const name = unique('Outage');
    const id = await api.scheduleTask({ cron: '*/1 * * * * * *', name, catchUpWindowMs: 30_000 });
    const history = await waitFor(
      async () => {
        const events = await api.history(id);
        return events.filter((e) => e.type === 'ScheduleFired').length >= 3 ? events : null;
      },
      { timeoutMs: 20_000, intervalMs: 100, description: 'three firings after the refusals' },
    );
    await api.act('delete', id);
    const handled = history.filter((e) => e.type === 'ScheduleFired' || e.type === 'ScheduleOccurrenceSkipped');
    // Nothing before the first firing but, at most, one skip of the occurrences the refusals made late.
    const firstFired = handled.findIndex((e) => e.type === 'ScheduleFired');
    const before = handled.slice(0, firstFired);
    expect(before.length).toBeLessThanOrEqual(1);
    if (before.length === 1) {
      expect(before[0].data.reason).toBe('missed');
      expect(Date.parse(handled[firstFired].data.occurrence)).toBe(Date.parse(before[0].data.occurrence) + 1000);
    }
    // Every occurrence from the first handled one on is handled exactly once, in order.
    const occurrences: number[] = [];
    for (const e of handled) {
      if (e.type === 'ScheduleFired') occurrences.push(Date.parse(e.data.occurrence));
      else for (let i = 0; i < e.data.count; i++) occurrences.push(Date.parse(e.data.firstOccurrence) + i * 1000);
    }
    for (let i = 1; i < occurrences.length; i++) expect(occurrences[i] - occurrences[i - 1]).toBe(1000);
    const fired = history.filter((e) => e.type === 'ScheduleFired').map((e) => e.data.dispatchId as string);
    const tasks = await waitFor(async () => {
      const t = await api.tasks(name);
      return t.length >= fired.length ? t : null;
    }, { timeoutMs: 10_000, intervalMs: 100, description: 'the fired tasks' });
    expect(tasks.map((t) => t.id).sort()).toEqual([...fired].sort());
  }, 40_000);
});

describe('a store that refuses the first dispatches of a schedule (BATON_FAULTS append-unavailable:TaskDispatched:2)', () => {
  let service: Service | undefined;
  afterAll(() => service?.stop());

  it('the firings whose dispatch failed are dispatched later, once, under their own ids', async () => {
    service = await startService({ env: { BATON_FAULTS: 'append-unavailable:TaskDispatched:2' } });
    const api = new Schedules(service, 'lost-dispatch', 'demo');
    const name = unique('LostDispatch');
    const id = await api.scheduleTask({ cron: '*/1 * * * * * *', name });
    await waitFor(async () => ((await api.schedule(id))?.firedCount ?? 0) >= 3, { timeoutMs: 10_000, intervalMs: 100, description: 'three firings' });
    await api.act('delete', id);
    const fired = (await api.history(id)).filter((e) => e.type === 'ScheduleFired').map((e) => e.data.dispatchId as string);
    const tasks = await waitFor(
      async () => {
        const t = await api.tasks(name);
        return t.length >= fired.length ? t : null;
      },
      { timeoutMs: 25_000, intervalMs: 200, description: 'every fired occurrence dispatched (the failed ones by recovery)' },
    );
    expect(tasks.map((t) => t.id).sort()).toEqual([...fired].sort());
    expect(tasks.every((t) => t.scheduleId === id)).toBe(true);
  }, 50_000);
});
