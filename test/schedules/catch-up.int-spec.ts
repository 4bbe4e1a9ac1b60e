/**
 * A restart across occurrences: the service is stopped while a `*\/1 * * * * * *` schedule runs and
 * started again on the same store. The most recent missed occurrence fires once at start; the
 * older ones are recorded as one ScheduleOccurrenceSkipped (reason `missed`); nothing fires twice.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { freshStoreUrl, Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Schedules, unique } from './schedule-helpers.js';

describe('restart across missed occurrences', () => {
  let service: Service | undefined;
  afterAll(() => service?.stop());

  it('fires the most recent missed occurrence once and records the older ones as skipped', async () => {
    const storeUrl = freshStoreUrl();
    service = await startService({ storeUrl });
    const token = service.token;
    let api = new Schedules(service, 'catch-up', 'demo', token);
    const name = unique('CatchUp');
    const id = await api.scheduleTask({ cron: '*/1 * * * * * *', name, catchUpWindowMs: 30_000 });
    await waitFor(async () => ((await api.schedule(id))?.firedCount ?? 0) >= 2, { timeoutMs: 10_000, intervalMs: 50, description: 'two firings' });

    await service.stop();
    const stoppedAt = Date.now();
    // Down for at least three occurrences.
    await waitFor(() => Date.now() >= stoppedAt + 3_000, { timeoutMs: 5_000, intervalMs: 50, description: 'three occurrences to pass' });
    const restartedAt = Date.now();
    service = await startService({ storeUrl });
    api = new Schedules(service, 'catch-up', 'demo', token);

    const history = await waitFor(
      async () => {
        const events = await api.history(id);
        const skip = events.findIndex((e) => e.type === 'ScheduleOccurrenceSkipped');
        return skip !== -1 && events.slice(skip).filter((e) => e.type === 'ScheduleFired').length >= 2 ? events : null;
      },
      { timeoutMs: 15_000, intervalMs: 50, description: 'the catch-up after the restart' },
    );
    await api.act('delete', id);

    const skipIndex = history.findIndex((e) => e.type === 'ScheduleOccurrenceSkipped');
    const skip = history[skipIndex].data;
    const lastBefore = history.slice(0, skipIndex).filter((e) => e.type === 'ScheduleFired').at(-1)!.data;
    const caughtUp = history[skipIndex + 1];
    expect(caughtUp.type).toBe('ScheduleFired');

    // The skip covers exactly the occurrences between the last one fired before the stop and the one fired at start.
    expect(skip.reason).toBe('missed');
    expect(Date.parse(skip.firstOccurrence)).toBe(Date.parse(lastBefore.occurrence) + 1000);
    expect(Date.parse(caughtUp.data.occurrence)).toBe(Date.parse(skip.occurrence) + 1000);
    expect(skip.count).toBe((Date.parse(skip.occurrence) - Date.parse(skip.firstOccurrence)) / 1000 + 1);
    expect(skip.count).toBeGreaterThanOrEqual(2);
    // The caught-up occurrence passed while the service was down, and was fired by the restarted one.
    expect(Date.parse(caughtUp.data.occurrence)).toBeGreaterThan(stoppedAt);
    expect(Date.parse(caughtUp.data.firedAt)).toBeGreaterThan(restartedAt);
    expect(history.filter((e) => e.type === 'ScheduleOccurrenceSkipped')).toHaveLength(1);

    // Every occurrence handled exactly once, and every fired one dispatched exactly once.
    const handled = history
      .filter((e) => e.type === 'ScheduleFired')
      .map((e) => Date.parse(e.data.occurrence))
      .concat(Array.from({ length: skip.count }, (_, i) => Date.parse(skip.firstOccurrence) + i * 1000))
      .sort((x, y) => x - y);
    for (let i = 1; i < handled.length; i++) expect(handled[i] - handled[i - 1]).toBe(1000);
    const fired = history.filter((e) => e.type === 'ScheduleFired').map((e) => e.data.dispatchId);
    const tasks = await api.tasks(name);
    expect(tasks.map((t) => t.id).sort()).toEqual([...fired].sort());
    process.stdout.write(
      `\n[schedules] restart: ${skip.count} occurrences skipped as missed, ${caughtUp.data.occurrence} fired ${Date.parse(caughtUp.data.firedAt) - Date.parse(caughtUp.data.occurrence)} ms late at start\n`,
    );
  }, 40_000);
});
