/**
 * Deleted schedules are history: the scheduler does not hold them in memory (measured before:
 * 100,000 deleted schedules held ~80 MiB of heap, in memory for good and loaded again at every
 * start), while the API still lists them (`state: DELETED`), reads them by id and shows their
 * history, before and after a restart, from `rm_schedules`.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Database from '../../src/event-store/sqlite/better-sqlite3.js';
import { freshStoreUrl, ROOT, Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Schedules, error, unique } from './schedule-helpers.js';

const YEARLY = '@yearly';
const DELETED = 30;

async function held(service: Service, kind: 'schedule' | 'awaiting_dispatch'): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`baton_schedules_held{kind="${kind}"} `));
  expect({ kind, present: line !== undefined }).toEqual({ kind, present: true });
  return Number(line!.split(' ')[1]);
}

/** `rm_schedules` as stored (every column, deleted schedules included). */
function scheduleRows(storeUrl: string): unknown[] {
  const db = new Database(storeUrl.slice('sqlite:'.length), { readonly: true });
  try {
    return db.prepare('SELECT * FROM rm_schedules ORDER BY seq').all();
  } finally {
    db.close();
  }
}

async function expectHeld(service: Service, schedules: number, awaiting: number): Promise<void> {
  // The metrics follow the projection that mutations already waited for; polled all the same.
  await waitFor(async () => (await held(service, 'schedule')) === schedules && (await held(service, 'awaiting_dispatch')) === awaiting, {
    timeoutMs: 10_000,
    intervalMs: 50,
    description: `the scheduler to hold ${schedules} schedules and ${awaiting} awaited dispatches`,
  });
}

describe('deleted schedules', () => {
  let service: Service | undefined;
  afterAll(() => service?.stop());

  it('leave the scheduler memory and stay listed, readable and in their history, across a restart and a rebuild', async () => {
    const storeUrl = freshStoreUrl();
    service = await startService({ storeUrl });
    const token = service.token;
    let api = new Schedules(service, 'deleted-schedules', 'demo', token);
    const kept = unique('Kept');
    const gone = [unique('GoneA'), unique('GoneB')];

    const live: string[] = [];
    for (let i = 0; i < 3; i++) live.push(await api.scheduleTask({ name: kept, cron: YEARLY }));
    await api.act('pause', live[2]);
    const deleted: string[] = [];
    for (let i = 0; i < DELETED; i++) {
      const id = await api.scheduleTask({ name: gone[i % 2], cron: YEARLY });
      // Some dispatched once before their deletion: their dispatch is in the log, nothing stays awaited.
      if (i % 5 === 0) await api.trigger(id);
      expect(await api.act('delete', id)).toMatchObject({ id, state: 'DELETED', nextFireAt: null });
      deleted.push(id);
    }
    await expectHeld(service, 3, 0);

    const check = async () => {
      const all = await api.list({ state: 'DELETED' }, { first: 20 });
      expect(all).toMatchObject({ totalCount: DELETED, pageInfo: { hasNextPage: true } });
      const rest = await api.list({ state: 'DELETED' }, { first: 20, after: all.pageInfo.endCursor! });
      expect(rest.pageInfo.hasNextPage).toBe(false);
      expect([...all.nodes, ...rest.nodes].map((s) => [s.id, s.state])).toEqual(deleted.map((id) => [id, 'DELETED']));
      expect((await api.list({ name: gone[0], state: 'DELETED' }, { first: 100 })).nodes.map((s) => s.id)).toEqual(deleted.filter((_, i) => i % 2 === 0));
      expect((await api.list({ name: kept })).nodes.map((s) => [s.id, s.state])).toEqual([
        [live[0], 'ACTIVE'],
        [live[1], 'ACTIVE'],
        [live[2], 'PAUSED'],
      ]);
      expect((await api.list({ state: 'ACTIVE' })).nodes.map((s) => s.id)).toEqual(live.slice(0, 2));
      expect((await api.list({}, { first: 100 })).totalCount).toBe(DELETED + live.length);
      expect(await api.schedule(deleted[0])).toMatchObject({ id: deleted[0], name: gone[0], state: 'DELETED', nextFireAt: null, triggeredCount: 1, lastDispatchId: expect.any(String) });
      expect((await api.history(deleted[0])).map((e) => e.type)).toEqual(['ScheduleCreated', 'ScheduleTriggered', 'ScheduleDeleted']);
      // Deleting again changes nothing; the other actions are refused as before.
      expect(await api.act('delete', deleted[1])).toMatchObject({ id: deleted[1], state: 'DELETED' });
      error(await api.actRaw('pause', deleted[1]), 'CONFLICT');
      error(await api.triggerRaw(deleted[1]), 'CONFLICT');
    };
    await check();

    await service.stop();
    service = await startService({ storeUrl });
    api = new Schedules(service, 'deleted-schedules', 'demo', token);
    // The restart loaded the schedules that can fire and nothing else.
    await expectHeld(service, 3, 0);
    await check();
    // The triggers (i = 0, 10, 20 of that name) dispatched once each: the restart dispatched nothing again.
    expect((await api.tasks(gone[0])).length).toBe(3);

    // `baton rebuild` folds the log into the same rows, and a start on them holds the same.
    await service.stop();
    const rows = scheduleRows(storeUrl);
    expect(rows).toHaveLength(DELETED + live.length);
    const rebuild = spawnSync(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), 'rebuild'], {
      cwd: ROOT,
      env: { ...process.env, EVENT_STORE_URL: storeUrl },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ code: rebuild.status, stderr: rebuild.stderr }).toEqual({ code: 0, stderr: '' });
    expect(scheduleRows(storeUrl)).toEqual(rows);
    service = await startService({ storeUrl });
    api = new Schedules(service, 'deleted-schedules', 'demo', token);
    await expectHeld(service, 3, 0);
    await check();
  }, 120_000);
});
