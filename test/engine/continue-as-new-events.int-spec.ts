/**
 * Events and `ctx.continueAsNew`: an event the service accepted (`changed: 1`) while the decision
 * that continues the workflow as new was in flight must not be lost: that decision is discarded
 * and made again with it (its code may take it; one it leaves untaken goes to the new run). A real
 * service and an in-process SDK worker; the decision is held open by an inline step that waits for
 * the test, so the event is recorded between that decision's start and its report.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Client, defineWorkflow } from '../../src/sdk/index.js';
import { startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'continue-as-new-events';

/** Opened by the test; the step of round 0 waits for it. */
let stepRunning = false;
let openGate: () => void = () => {};
const gate = new Promise<void>((resolve) => {
  openGate = resolve;
});

/**
 * Round 0 holds its decision open (a step waiting for the gate), then continues as new, taking no
 * event. Round 1 collects `item` events until `stop`.
 */
const eventLoop = defineWorkflow('EventLoop', async (ctx, round: number) => {
  const items: unknown[] = [];
  if (round > 0) {
    ctx.onEvent('item', (item: unknown) => {
      items.push(item);
    });
  }
  if (round === 0) {
    await ctx.step('hold', async () => {
      stepRunning = true;
      await gate;
      return 'held';
    });
    return ctx.continueAsNew(1);
  }
  await ctx.waitForEvent('stop');
  return { round, items };
});

/**
 * Round 0 waits for `go` only (an `item` sent before it is left untaken), then continues as new;
 * round 1 collects `item` events until `stop`.
 */
const takesGoOnly = defineWorkflow('TakesGoOnly', async (ctx, round: number) => {
  if (round === 0) {
    await ctx.waitForEvent('go');
    return ctx.continueAsNew(1);
  }
  const items: unknown[] = [];
  ctx.onEvent('item', (item: unknown) => {
    items.push(item);
  });
  await ctx.waitForEvent('stop');
  return { round, items };
});

let client: Client;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ client, stop } = await startInProcessWorker({ appId: APP, environment: ENV, workflows: [eventLoop, takesGoOnly] }));
});

afterAll(async () => {
  openGate();
  await stop?.();
});

describe('an event recorded while the decision that continues as new is in flight', () => {
  it('is delivered to the new run', async () => {
    const id = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'EventLoop', input: [0] });
    await waitFor(() => stepRunning, { timeoutMs: 10_000, description: 'the step of round 0 to run' });

    expect(await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'item', data: ['sent during the decision'] })).toMatchObject({ changed: 1 });
    openGate();
    await waitFor(async () => (await client.workflowHistory(APP, ENV, id)).some((e) => e.type === 'WorkflowContinuedAsNew'), {
      timeoutMs: 10_000,
      description: 'the workflow to continue as new',
    });

    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'item', data: ['sent to the new run'] });
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'stop', data: [] });
    const done = await client.awaitWorkflow(APP, ENV, id, { timeoutMs: 10_000 });
    expect(done).toMatchObject({ state: 'COMPLETED' });
    expect(JSON.parse(done!.output!)).toEqual({ round: 1, items: ['sent during the decision', 'sent to the new run'] });
    // The decision that ran while the event came was made again, with it.
    const types = (await client.workflowHistory(APP, ENV, id)).map((e) => e.type);
    expect(types.filter((t) => t === 'DecisionDiscarded')).toHaveLength(1);
  });
});

describe('an event the old run received but never took (no waitForEvent or onEvent asked for it)', () => {
  it('is delivered to the new run, as "one that arrived earlier and was not yet taken"', async () => {
    const id = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'TakesGoOnly', input: [0] });
    expect(await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'item', data: ['early'] })).toMatchObject({ changed: 1 });
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'go', data: [] });
    await waitFor(async () => (await client.workflowHistory(APP, ENV, id)).some((e) => e.type === 'WorkflowContinuedAsNew'), {
      timeoutMs: 10_000,
      description: 'the workflow to continue as new',
    });
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'stop', data: [] });
    const done = await client.awaitWorkflow(APP, ENV, id, { timeoutMs: 10_000 });
    expect(done).toMatchObject({ state: 'COMPLETED' });
    expect(JSON.parse(done!.output!)).toEqual({ round: 1, items: ['early'] });
  });
});
