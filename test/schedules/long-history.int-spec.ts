/**
 * A schedule's stream grows by an event per firing and has no reset point. After a restart, the
 * first action on a schedule that fired thousands of times must not read those firings back:
 * the write path starts from the schedules read model's state and reads only what followed
 * (`baton_stream_events_read_total`, `baton_stream_loads_total{from="snapshot"}` in /metrics),
 * also once the schedule is deleted and no longer held in memory.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freshStoreUrl, ROOT, Service, startService } from '../support/service.js';
import { Schedules, unique } from './schedule-helpers.js';

const FIRINGS = 5_000;

/** A sample of one series in Prometheus' text format (0 when absent). */
async function sample(service: Service, series: string): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  expect({ series, present: line !== undefined }).toEqual({ series, present: true });
  return Number(line!.slice(series.length + 1));
}

describe('a schedule with a long history', () => {
  let service: Service | undefined;
  afterAll(() => service?.stop());

  it('is paused and resumed after a restart without reading its firings back', async () => {
    const storeUrl = freshStoreUrl();
    service = await startService({ storeUrl });
    const token = service.token;
    let api = new Schedules(service, 'long-history', 'demo', token);
    const id = await api.scheduleTask({ cron: '0 0 1 1 *', name: unique('Yearly') });
    await service.stop();

    // Thousands of firings, written to the stopped service's store as the scheduler records them.
    const { SqliteEventStore } = await import(pathToFileURL(join(ROOT, 'dist/src/event-store/sqlite/sqlite-event-store.js')).href);
    const store = new SqliteEventStore(storeUrl.slice('sqlite:'.length));
    const first = Date.now() - (FIRINGS + 10) * 60_000;
    let revision = 0n;
    for (let i = 0; i < FIRINGS; i += 1_000) {
      const batch = Array.from({ length: Math.min(1_000, FIRINGS - i) }, (_, j) => {
        const occurrence = new Date(first + (i + j) * 60_000).toISOString();
        return {
          id: randomUUID(),
          type: 'ScheduleFired',
          data: { occurrence, dispatchId: randomUUID(), firedAt: occurrence },
          metadata: { actor: `schedule:${id}`, appId: 'demo', environment: 'long-history', correlationId: randomUUID(), at: occurrence },
        };
      });
      revision = (await store.append(`schedule-${id}`, batch, revision)).nextExpectedRevision;
    }
    await store.close();

    service = await startService({ storeUrl });
    api = new Schedules(service, 'long-history', 'demo', token);
    const readBefore = await sample(service, 'baton_stream_events_read_total');
    const paused = await api.act('pause', id);
    expect(paused).toMatchObject({ state: 'PAUSED', firedCount: FIRINGS });
    const resumed = await api.act('resume', id);
    expect(resumed).toMatchObject({ state: 'ACTIVE', firedCount: FIRINGS });
    // The cold load started from the read model's state; nothing followed it, so nothing was read
    // (the whole stream would be FIRINGS + 1 events).
    expect((await sample(service, 'baton_stream_events_read_total')) - readBefore).toBe(0);
    expect(await sample(service, 'baton_stream_loads_total{from="snapshot"}')).toBe(1);
    const history = await api.history(id);
    expect(history.slice(-2).map((e) => e.type)).toEqual(['SchedulePaused', 'ScheduleResumed']);
    expect(history.at(-2)!.revision).toBe(FIRINGS + 1);

    // Deleted, it leaves the scheduler's memory; after a restart its row in rm_schedules is the
    // snapshot, so acting on it again still reads none of its firings.
    expect(await api.act('delete', id)).toMatchObject({ state: 'DELETED', firedCount: FIRINGS });
    await service.stop();
    service = await startService({ storeUrl });
    api = new Schedules(service, 'long-history', 'demo', token);
    const readBeforeDeleted = await sample(service, 'baton_stream_events_read_total');
    expect(await api.act('delete', id)).toMatchObject({ state: 'DELETED', firedCount: FIRINGS });
    expect((await api.actRaw('resume', id)).body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
    expect((await sample(service, 'baton_stream_events_read_total')) - readBeforeDeleted).toBe(0);
    expect(await sample(service, 'baton_stream_loads_total{from="snapshot"}')).toBe(1);
    expect(await sample(service, 'baton_stream_loads_total{from="stream"}')).toBe(0);
  }, 120_000);
});
