/**
 * The effects reactor: what a decision causes outside its workflow (children, standalone tasks,
 * signals to other workflows). Creating streams runs side by side; a signal waits for every effect
 * before it, so a child dispatched and then signalled by the same decision gets the signal. A
 * service killed while effects run resumes them from its checkpoint, each carried out once.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { expectData, gql } from '../api/api-helpers.js';
import { Service, startService } from '../support/service.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';
import { APP, Engine, unique } from './engine-helpers.js';

const TASKS = `query($filter: TaskFilterInput!) { tasks(filter: $filter, first: 1) { totalCount } }`;

async function taskCount(service: Service, environment: string, state?: string, token = service.token): Promise<number> {
  const filter = { appId: APP, environment, name: 'echo', ...(state ? { state } : {}) };
  return (expectData(await gql(service, TASKS, { filter }, token)).tasks as { totalCount: number }).totalCount;
}

describe('effects of one decision: 3,000 tasks and 20 children dispatched, then each child signalled by id', () => {
  let service: Service | undefined;
  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  it('every task and child is dispatched once and every child gets its signal', async () => {
    service = await startService();
    const environment = unique('effects');
    await startWorker({ url: service.url, token: service.token, environment });
    const engine = new Engine(service, environment);
    const id = await engine.dispatch('FanOutDispatch', [3_000, 20]);
    const children = (await engine.waitForState(id, 'COMPLETED', 30_000)).result as string[];
    expect(children).toHaveLength(20);
    // Each child completes only if it existed when its `done` was applied.
    for (const child of children) expect((await engine.waitForState(child, 'COMPLETED', 30_000)).state).toBe('COMPLETED');
    // The signals waited for every effect before them, so every task exists by now: once each.
    expect(await taskCount(service, environment)).toBe(3_000);
  }, 120_000);

  it('after a kill while the effects run, the restarted service carries out the rest, each once', async () => {
    // The first test's service and worker are done with.
    await killAllWorkers();
    await service?.stop();
    service = await startService();
    const { storeUrl, token } = service;
    const environment = unique('effects-kill');
    const engine = new Engine(service, environment);
    // No worker yet: the decision is made once one starts, and the kill lands among its effects.
    const id = await engine.dispatch('FanOutDispatch', [6_000, 20]);
    const worker = await startWorker({ url: service.url, token, environment });
    await waitFor(async () => (await taskCount(service!, environment)) > 0, { timeoutMs: 30_000, intervalMs: 5, description: 'the first tasks dispatched' });
    await service.kill();
    await worker.stop();

    service = await startService({ storeUrl });
    await startWorker({ url: service.url, token, environment });
    const restarted = new Engine(service, environment, token);
    const children = (await restarted.waitForState(id, 'COMPLETED', 60_000)).result as string[];
    for (const child of children) expect((await restarted.waitForState(child, 'COMPLETED', 60_000)).state).toBe('COMPLETED');
    // As above: every task exists once the signals were applied, each once across the kill.
    expect(await taskCount(service, environment, undefined, token)).toBe(6_000);
  }, 240_000);
});
