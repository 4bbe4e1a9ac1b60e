/**
 * Two Baton processes on one SQLite store, one `*\/1 * * * * * *` schedule: every occurrence is
 * claimed by exactly one of them (the append with an expected revision) and dispatched exactly
 * once. Also prints how long after its occurrence time each task was dispatched.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { freshStoreUrl, Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Schedules, percentile, readStore, unique } from './schedule-helpers.js';

const OCCURRENCES = 10;

describe('two service processes on one store', () => {
  const services: Service[] = [];
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
  });

  it(`fire each of ${OCCURRENCES}+ occurrences exactly once, with no duplicate dispatch`, async () => {
    const storeUrl = freshStoreUrl();
    const a = await startService({ storeUrl });
    services.push(a);
    const b = await startService({ storeUrl });
    services.push(b);
    // B reads A's bootstrap token from the shared log (and prints none of its own).
    const apiA = new Schedules(a, 'race', 'demo', a.token);
    const apiB = new Schedules(b, 'race', 'demo', b.token || a.token);

    const name = unique('Race');
    const id = await apiA.scheduleTask({ cron: '*/1 * * * * * *', name, input: '["tick"]' });
    // B knows it too (through the shared log), so both race for every occurrence.
    await waitFor(async () => (await apiB.schedule(id)) !== null, { timeoutMs: 5_000, intervalMs: 20, description: 'the schedule on instance B' });

    await waitFor(async () => ((await apiB.schedule(id))?.firedCount ?? 0) >= OCCURRENCES, {
      timeoutMs: OCCURRENCES * 1000 + 10_000,
      intervalMs: 250,
      description: `${OCCURRENCES} fired occurrences`,
    });
    await apiA.act('delete', id);
    await Promise.all([a.stop(), b.stop()]);

    const events = await readStore(storeUrl);
    const scheduleEvents = events.filter((e) => e.streamId === `schedule-${id}`);
    const fired = scheduleEvents.filter((e) => e.type === 'ScheduleFired').map((e) => e.data as { occurrence: string; dispatchId: string; firedAt: string });
    const skipped = scheduleEvents.filter((e) => e.type === 'ScheduleOccurrenceSkipped');
    const dispatched = events.filter((e) => e.type === 'TaskDispatched' && e.data.scheduleId === id);

    // Every occurrence recorded once, consecutive seconds, none skipped on a healthy machine.
    const occurrences = fired.map((f) => Date.parse(f.occurrence));
    expect(occurrences.length).toBeGreaterThanOrEqual(OCCURRENCES);
    expect(new Set(occurrences).size).toBe(occurrences.length);
    expect(skipped).toEqual([]);
    for (let i = 1; i < occurrences.length; i++) expect(occurrences[i] - occurrences[i - 1]).toBe(1000);

    // Every fired occurrence dispatched exactly once, under its own id; nothing else dispatched.
    const perTask = new Map<string, number>();
    for (const d of dispatched) perTask.set(d.data.taskId, (perTask.get(d.data.taskId) ?? 0) + 1);
    expect(dispatched).toHaveLength(fired.length);
    for (const f of fired) expect({ occurrence: f.occurrence, dispatches: perTask.get(f.dispatchId) ?? 0 }).toEqual({ occurrence: f.occurrence, dispatches: 1 });

    // Firing delay: dispatch recorded minus occurrence time.
    const recordedAt = new Map(dispatched.map((d) => [d.data.taskId as string, d.recordedAt.getTime()]));
    const delays = fired.map((f) => recordedAt.get(f.dispatchId)! - Date.parse(f.occurrence)).sort((x, y) => x - y);
    // Of which: how late the winning instance's timer rang (firedAt is its clock at the claim).
    const claims = fired.map((f) => Date.parse(f.firedAt) - Date.parse(f.occurrence)).sort((x, y) => x - y);
    process.stdout.write(
      `\n[schedules] 2 instances, ${fired.length} occurrences of */1 * * * * * *: dispatch recorded after the occurrence time ` +
        `median ${percentile(delays, 50)} ms, p99 ${percentile(delays, 99)} ms, max ${delays[delays.length - 1]} ms ` +
        `(timer lateness at the claim: median ${percentile(claims, 50)} ms, max ${claims[claims.length - 1]} ms)\n`,
    );
  }, 60_000);
});
