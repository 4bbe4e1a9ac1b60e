/**
 * A workflow's ctx.select(...).send(...) whose ControlApplied could not
 * be recorded at once (the store did not answer: the effect is retried) while its target took the
 * event and continued as new.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Client, defineWorkflow } from '../../src/sdk/index.js';
import { startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'control-effects';

/** Takes `item` events one per run (continuing as new) until `stop`; answers what it took. */
const looper = defineWorkflow('RevLoop', async (ctx, seen: unknown[]) => {
  const event = await ctx.waitForEvent('item');
  if (event![1] === 'stop') return seen;
  return ctx.continueAsNew([...seen, event![1]]);
});
const sender = defineWorkflow('RevSend', async (ctx, id: string, value: string) => {
  ctx.select({ id }).send('item', value);
  return 'sent';
});

let client: Client;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ client, stop } = await startInProcessWorker({ appId: APP, environment: ENV, workflows: [looper, sender] }, { env: { BATON_FAULTS: 'append-unavailable:ControlApplied:4', LOG_LEVEL: 'info' } }));
});

afterAll(async () => {
  await stop?.();
});

describe('an event sent by a workflow, its ControlApplied retried', () => {
  it('is delivered once, though its target continued as new meanwhile', async () => {
    const target = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevLoop', input: [[]] });
    await waitFor(async () => (await client.workflowHistory(APP, ENV, target)).some((e) => e.type === 'DecisionCompleted'), { timeoutMs: 10_000 });
    const source = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevSend', input: [target, 'once'] });
    await waitFor(async () => (await client.workflowHistory(APP, ENV, source)).some((e) => e.type === 'ControlApplied'), { timeoutMs: 20_000, description: 'the ControlApplied' });
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id: target }, name: 'item', data: ['stop'] });
    const done = await client.awaitWorkflow(APP, ENV, target, { timeoutMs: 10_000 });
    const history = await client.workflowHistory(APP, ENV, target);
    const received = history.filter((e) => e.type === 'WorkflowEventReceived').map((e) => (e.data as { data: unknown[] }).data[0]);
    expect({ received, output: done?.output }).toEqual({ received: ['once', 'stop'], output: '["once"]' });
  });
});
