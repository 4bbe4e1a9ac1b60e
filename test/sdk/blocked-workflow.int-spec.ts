/**
 * Workflow code that awaits something other than a `ctx` call (`fetch`, a database client,
 * `setTimeout`) is reported, not left hanging. Its decision ended with the code suspended on that
 * promise and nothing recorded to wait for: the decision completed with no commands, and the
 * workflow stayed RUNNING for ever, silently (what the code did once the promise settled was never
 * sent). Now such a decision fails with `WORKFLOW_BLOCKED` and a message saying what to do instead;
 * it is made again after the service's backoff, as a non-deterministic one is, until fixed code
 * runs. A real service and an in-process worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'blocked';

const one = defineTask('one', () => 1);
const awaitsTimer = defineWorkflow('AwaitsTimer', async (ctx) => {
  await new Promise((resolve) => setTimeout(resolve, 20));
  return ctx.run(one);
});
/** Handlers only, then a promise that never settles: waits for events, not blocked. */
const handlersOnly = defineWorkflow('HandlersOnly', async (ctx) => {
  let total = 0;
  ctx.onQuery('total', () => total);
  ctx.onEvent('add', (n: number) => {
    total += n;
  });
  await new Promise<never>(() => {});
});

let baton: InProcessWorker;
beforeAll(async () => {
  baton = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [one], workflows: [awaitsTimer, handlersOnly] });
});
afterAll(() => baton?.stop());

describe('workflow code awaiting something that is not a ctx call', () => {
  it('fails its decision with WORKFLOW_BLOCKED, saying to use a task, a step or ctx.sleep', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'AwaitsTimer' });
    const failed = await waitFor(
      async () => (await baton.client.workflowHistory(APP, ENV, id)).find((e) => e.type === 'DecisionFailed' || e.type === 'DecisionCompleted'),
      { timeoutMs: 10_000, intervalMs: 50, description: 'the first decision to end' },
    );
    expect(failed.type).toBe('DecisionFailed');
    expect(failed.data).toMatchObject({ code: 'WORKFLOW_BLOCKED', message: expect.stringMatching(/not a ctx call.*ctx\.step.*ctx\.sleep/s) });
  });

  it('a workflow that only waits for its event handlers is not blocked', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'HandlersOnly' });
    await baton.client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'add', data: [5] });
    await waitFor(async () => (await baton.client.queryWorkflow(APP, ENV, id, 'total')) === 5, { timeoutMs: 10_000, intervalMs: 50, description: 'the event handled' });
    const history = await baton.client.workflowHistory(APP, ENV, id);
    expect(history.filter((e) => e.type === 'DecisionFailed')).toEqual([]);
  });
});
