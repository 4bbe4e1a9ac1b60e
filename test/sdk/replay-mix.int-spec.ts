/**
 * A workflow mixing every kind of call (steps, tasks in Promise.all and in a race
 * with a timer, async onEvent handlers that run tasks, a timed waitForEvent, a child, uuid/random/now)
 * completes the same with the run held between decisions (sticky, with decisions made after tasks)
 * and with no run held (every decision a replay from the history), and its final history replays
 * to the same result. Real service, in-process worker; no mocks.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WorkflowReplay, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import type { HistoryEvent } from '../../src/sdk/index.js';
import { type Service, startService } from '../support/service.js';
import { Client, Worker } from '../../src/sdk/index.js';
import { quietLogger } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';

const echo = defineTask('mixEcho', async (_ctx, x: unknown) => x);
const child = defineWorkflow('MixChild', async (ctx, n: number) => (await ctx.step('double', () => n * 2)) + Number(await ctx.run(echo, 1)));
const mix = defineWorkflow('Mix', async (ctx, n: number) => {
  const log: unknown[] = [ctx.uuid(), ctx.random()];
  let stage = 'start';
  ctx.onQuery('stage', () => stage);
  ctx.onEvent('poke', async (x: number) => {
    log.push(await ctx.run(echo, `poke${x}`), ctx.uuid());
  });
  const a = await ctx.step('s1', () => n);
  const [b, c] = await Promise.all([ctx.run(echo, 'b'), ctx.step('s2', () => 2), ctx.run(echo, 'b2')]);
  const won = await Promise.race([ctx.run(echo, 'race'), ctx.sleep('1h').then(() => 'timer')]);
  log.push(a, b, c, won, ctx.uuid(), ctx.random());
  stage = 'waiting';
  const go = await ctx.waitForEvent('go', { timeout: '1h' });
  stage = 'child';
  log.push(go, await ctx.workflow(child, 3), ctx.uuid(), ctx.random());
  stage = 'done';
  return log;
});

let service: Service;
let client: Client;
beforeAll(async () => {
  service = await startService();
  client = new Client({ url: service.url, token: service.token });
}, 60_000);
afterAll(() => service?.stop(), 60_000);

async function runMix(environment: string, maxCachedWorkflows: number): Promise<{ result: unknown; history: HistoryEvent[]; id: string }> {
  const worker = new Worker({ url: service.url, token: service.token, appId: APP, environment, tasks: [echo], workflows: [mix, child], maxCachedWorkflows, logger: quietLogger });
  const running = worker.run();
  try {
    const id = await client.dispatchWorkflow({ appId: APP, environment, name: 'Mix', input: [7] });
    await client.sendEventToWorkflows({ appId: APP, environment, selector: { id }, name: 'poke', data: [1] });
    await waitFor(async () => (await client.queryWorkflow(APP, environment, id, 'stage')) === 'waiting', { timeoutMs: 20_000, description: 'stage waiting' });
    await client.sendEventToWorkflows({ appId: APP, environment, selector: { id }, name: 'poke', data: [2] });
    await client.sendEventToWorkflows({ appId: APP, environment, selector: { id }, name: 'go', data: ['now'] });
    const result = await client.workflowResult(APP, environment, id, { timeoutMs: 20_000 });
    const history = (await client.workflowHistory(APP, environment, id)) as unknown as HistoryEvent[];
    return { result, history, id };
  } finally {
    await worker.shutdown();
    await running;
  }
}

describe('a workflow of every kind of call', () => {
  for (const [label, cache] of [['held between decisions', 1000], ['replayed at every decision', 0]] as const) {
    it(`completes, with no decision failed, ${label}; its history replays to its result`, async () => {
      const { result, history, id } = await runMix(`mix-${cache}`, cache);
      expect(history.filter((e) => e.type === 'DecisionFailed')).toEqual([]);
      const log = result as unknown[];
      const at = log.indexOf(7);
      expect(log.slice(at, at + 4)).toEqual([7, 'b', 2, 'race']);
      expect(log).toContain('poke1');
      expect(log).toContain('poke2');
      expect(log).toContainEqual(['go', 'now']);
      expect(log[log.findIndex((x) => Array.isArray(x) && x[0] === 'go') + 1]).toBe(7); // the child: 3 * 2 + 1
      const start = history.findIndex((e) => e.type === 'WorkflowDispatched');
      // Replayed up to its last decision, the code makes that decision's commands again.
      let last = history.length - 1;
      while (history[last].type !== 'DecisionStarted') last--;
      const commands = await new WorkflowReplay(mix, id, [7], history.slice(start, last + 1), { verifyOnly: true }).execute();
      expect(commands).toEqual([{ type: 'CompleteWorkflow', result }]);
    }, 60_000);
  }
});
