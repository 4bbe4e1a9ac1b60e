/**
 * Two instances on one store under load, one of them SIGKILLed and restarted mid-run, a worker
 * SIGKILLed too: every acknowledged dispatch and control action holds, every workflow ends as its
 * code says, no task attempt is claimed twice and no result recorded twice, and the read models
 * the instances left behind are exactly what `baton rebuild` folds from the log.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Engine, HistoryEntry, describeHistory, portOf, unique } from '../engine/engine-helpers.js';
import { ROOT, Service, freshStoreUrl, startService } from '../support/service.js';
import { readModelRows } from '../support/read-model-rows.js';
import { waitFor } from '../support/wait-for.js';
import { FixtureWorker, startWorker } from '../support/worker.js';

const LEASE = { LEASE_MS: '1000' };

/** The same event type twice for one key is a duplicate (a claim or a result recorded twice). */
function duplicates(history: HistoryEntry[]): string[] {
  const seen = new Map<string, number>();
  for (const e of history) {
    let key: string | null = null;
    if (e.type === 'TaskStarted') key = `TaskStarted seq ${e.data.seq} attempt ${e.data.attempt}`;
    if (e.type === 'TaskCompleted') key = `TaskCompleted seq ${e.data.seq}`;
    if (e.type === 'TimerFired') key = `TimerFired seq ${e.data.seq}`;
    if (key) seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return [...seen].filter(([, n]) => n > 1).map(([key, n]) => `${key} x${n}`);
}

describe('two instances on one store, one SIGKILLed under load', () => {
  const running: Array<Service | FixtureWorker> = [];
  afterAll(async () => {
    for (const r of running.reverse()) await r.kill();
  });

  it('loses nothing acknowledged, claims nothing twice, and leaves read models equal to a rebuild', async () => {
    const storeUrl = freshStoreUrl();
    const services = [await startService({ storeUrl, env: LEASE }), await startService({ storeUrl, env: LEASE })];
    const token = services[0].token;
    const environment = unique('crash');
    const worker = (i: number) => startWorker({ url: services[i].url, token, environment, heartbeatMs: 200 });
    const workers = [await worker(0), await worker(1)];
    running.push(...services, ...workers);
    const engine = (i: number) => new Engine(services[i], environment, token);
    const down = [false, false];
    const up = (i: number) => (down[i] ? 1 - i : i);

    // Acknowledged dispatches, with what each must end as (null: a later action got no answer).
    const expected = new Map<string, { state: string; output?: unknown } | null>();
    let stop = false;
    const lane = async (lane: number) => {
      for (let k = 0; !stop; k++) {
        const a = up((lane + k) % 2);
        const b = up(1 - a);
        let id: string | undefined;
        try {
          switch (k % 4) {
            case 0: {
              id = await engine(a).dispatch('Sequential', [`l${lane}k${k}`]);
              expected.set(id, { state: 'COMPLETED', output: [`l${lane}k${k}`, 3, `l${lane}k${k}-3`] });
              break;
            }
            case 1: {
              id = await engine(a).dispatch('Parallel', [2, 300]);
              expected.set(id, { state: 'COMPLETED', output: ['p0', 'p1'] });
              break;
            }
            case 2: {
              // Pause on one instance, an event and the resume on the other, then stop by tag.
              const tag = `l${lane}k${k}`;
              id = await engine(a).dispatch('Listener', [], tag);
              expected.set(id, { state: 'RUNNING' });
              expect(await engine(b).pause({ id })).toMatchObject({ matched: 1, changed: 1 });
              expect(await engine(a).send({ id }, 'ping', k)).toMatchObject({ matched: 1, changed: 1 });
              expect(await engine(b).resume({ name: 'Listener', tag })).toMatchObject({ matched: 1, changed: 1 });
              expect(await engine(a).send({ name: 'Listener', tag }, 'stop')).toMatchObject({ matched: 1, changed: 1 });
              expected.set(id, { state: 'COMPLETED', output: [[k]] });
              break;
            }
            case 3: {
              id = await engine(a).dispatch('Waiter', ['never', 600_000]);
              expected.set(id, { state: 'RUNNING' });
              expect(await engine(b).terminate({ id })).toMatchObject({ matched: 1, changed: 1 });
              expected.set(id, { state: 'TERMINATED' });
              break;
            }
          }
        } catch (error) {
          // A request to the instance being killed got no answer: nothing was acknowledged.
          if (!/fetch failed|ECONNREFUSED|ECONNRESET|socket|closed/i.test(String((error as Error).message) + String((error as Error).cause ?? ''))) throw error;
          if (id !== undefined) expected.set(id, null);
        }
      }
    };
    let failure: unknown;
    const lanes = [lane(0), lane(1), lane(2)].map((p) =>
      p.catch((error) => {
        failure ??= error;
        stop = true;
      }),
    );
    const port = portOf(services[0]);
    // Once some work is in flight: kill instance A and its worker, restart both; then B's worker.
    await waitFor(() => failure ?? expected.size >= 15, { timeoutMs: 10_000, description: '15 acknowledged dispatches' });
    down[0] = true;
    await services[0].kill();
    await workers[0].kill();
    services[0] = await startService({ storeUrl, env: { ...LEASE, PORT: port } });
    workers[0] = await worker(0);
    running.push(services[0], workers[0]);
    down[0] = false;
    await waitFor(() => failure ?? expected.size >= 30, { timeoutMs: 10_000, description: '30 acknowledged dispatches' });
    await workers[1].kill();
    workers[1] = await worker(1);
    running.push(workers[1]);
    await waitFor(() => failure ?? expected.size >= 40, { timeoutMs: 10_000, description: '40 acknowledged dispatches' });
    stop = true;
    await Promise.all(lanes);
    if (failure) throw failure;

    for (const [id, want] of expected) {
      const check = engine(id.charCodeAt(id.length - 1) % 2);
      if (want) {
        const done = await check.waitForState(id, want.state, 20_000);
        if (want.output !== undefined) expect({ id, output: done.result }).toEqual({ id, output: want.output });
      }
      const history = await check.history(id);
      expect({ id, duplicates: duplicates(history), history: duplicates(history).length ? describeHistory(history) : '' }).toEqual({ id, duplicates: [], history: '' });
    }

    for (const w of workers) await w.stop();
    for (const s of services) await s.stop();
    const live = readModelRows(storeUrl);
    expect(live.rm_workflows.length).toBeGreaterThanOrEqual(expected.size);
    const rebuild = spawnSync(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), 'rebuild'], { cwd: ROOT, env: { ...process.env, EVENT_STORE_URL: storeUrl }, encoding: 'utf8' });
    expect({ code: rebuild.status, stderr: rebuild.stderr }).toEqual({ code: 0, stderr: '' });
    expect(readModelRows(storeUrl)).toEqual(live);
  }, 90_000);
});
