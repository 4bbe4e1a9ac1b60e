/**
 * The effects reactor serves apps fairly: app B's backlog of thousands of `ctx.dispatch` effects,
 * recorded before app A's decision, does not hold A's effect until B's backlog is carried out.
 * The tasks are named so that no worker serves them: only the reactor's work follows.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Client } from '../../src/sdk/index.js';
import { expectData, gql } from '../api/api-helpers.js';
import { createTokenViaCli, Service, startService } from '../support/service.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';
import { APP, unique } from './engine-helpers.js';

const APP_B = 'tenant-b';
/** Decisions of B, each of FAN_OUT dispatches (FAIR_B_DECISIONS to measure other backlogs). */
const B_DECISIONS = Number(process.env.FAIR_B_DECISIONS ?? 2);
const FAN_OUT = 8_000;
/** Effects the reactor carries out at once (MAX_IN_FLIGHT): twice that is out of reach of a reactor that serves the log in order. */
const IN_FLIGHT = 256;

const TASKS = `query($filter: TaskFilterInput!) { tasks(filter: $filter, first: 1) { totalCount } }`;

async function taskCount(service: Service, token: string, appId: string, environment: string, name: string): Promise<number> {
  return (expectData(await gql(service, TASKS, { filter: { appId, environment, name } }, token)).tasks as { totalCount: number }).totalCount;
}

/** B's tasks created: each decision's under its own name (a count stops at 10,000, QUERY_COUNT_CAP). */
async function countB(service: Service, token: string, environment: string): Promise<number> {
  const counts = await Promise.all(Array.from({ length: B_DECISIONS }, (_, i) => taskCount(service, token, APP_B, environment, `unserved-b${i}`)));
  return counts.reduce((sum, n) => sum + n, 0);
}

describe('effects are served fairly across apps', () => {
  let service: Service | undefined;
  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  it("app A's dispatch is carried out while app B's earlier backlog of dispatches is still being carried out", async () => {
    service = await startService();
    const s = service;
    const tokenA = s.token;
    const tokenB = await createTokenViaCli(s.storeUrl, [APP_B]);
    const envA = unique('fair-a');
    const envB = unique('fair-b');
    await Promise.all([
      startWorker({ url: s.url, token: tokenA, environment: envA }),
      startWorker({ url: s.url, token: tokenB, appId: APP_B, environment: envB }),
    ]);
    const a = new Client({ url: s.url, token: tokenA });
    const b = new Client({ url: s.url, token: tokenB });
    const total = B_DECISIONS * FAN_OUT;

    const startedB = Date.now();
    const idsB = await Promise.all(
      Array.from({ length: B_DECISIONS }, (_, i) => b.dispatchWorkflow({ appId: APP_B, environment: envB, name: 'FanOutNamed', input: [FAN_OUT, `unserved-b${i}`] })),
    );
    // Each of B's workflows completes in the decision that dispatches its tasks: once all are
    // complete, all of B's effects are in the log before anything A does next.
    for (const id of idsB) {
      await waitFor(async () => (await b.workflow(APP_B, envB, id))?.state === 'COMPLETED', { timeoutMs: 60_000, intervalMs: 25, description: `B's workflow ${id} completed` });
    }
    const beforeA = await countB(s, tokenB, envB);

    const dispatchedA = Date.now();
    await a.dispatchWorkflow({ appId: APP, environment: envA, name: 'FanOutNamed', input: [1, 'unserved-a'] });
    // Read A's task first, B's count after: B's count at the moment A's task existed was at most this.
    const seen = await waitFor(
      async () => ((await taskCount(s, tokenA, APP, envA, 'unserved-a')) === 1 ? { b: await countB(s, tokenB, envB) } : null),
      { timeoutMs: 120_000, intervalMs: 20, description: "A's task created" },
    );
    const waitA = Date.now() - dispatchedA;
    await waitFor(async () => (await countB(s, tokenB, envB)) === total, {
      timeoutMs: 60_000,
      intervalMs: 50,
      description: `B's ${total} tasks created`,
    });
    const backlogB = Date.now() - startedB;
    console.log(
      `fairness: B ${B_DECISIONS} x ${FAN_OUT} dispatches carried out in ${backlogB} ms; A's task created ${waitA} ms after A's dispatch, ` +
        `when B had ${seen.b} of ${total} (${beforeA} when A dispatched)`,
    );

    expect(seen.b).toBeLessThan(total - 2 * IN_FLIGHT);
    // Each of B's tasks and A's once.
    expect(await taskCount(s, tokenA, APP, envA, 'unserved-a')).toBe(1);
    expect(await countB(s, tokenB, envB)).toBe(total);
  }, 240_000);
});
