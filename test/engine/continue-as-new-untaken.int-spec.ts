/**
 * `ctx.continueAsNew` lists the events the run
 * received and never took in the ContinueAsNew command (`events`). That list has no bound: a run
 * that received events it never waits for (each well within MAX_PAYLOAD_BYTES) makes a
 * ContinueAsNew over MAX_DECISION_BYTES, which the service refuses; the SDK records the decision
 * as failed (DECISION_REJECTED) and the same decision is made again and again, with backoff: the
 * workflow can never continue as new. Before the change it continued (the untaken events were
 * dropped). A real service (default limits) and an in-process SDK worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Client, defineWorkflow } from '../../src/sdk/index.js';
import { startInProcessWorker } from '../support/in-process-worker.js';

const APP = 'demo';
const ENV = 'review-can-size';

/** Round 0 waits for `go` only (the `noise` events sent before it are never taken), then continues as new. */
const untaken = defineWorkflow('UntakenNoise', async (ctx, round: number) => {
  if (round === 0) {
    await ctx.waitForEvent('go');
    return ctx.continueAsNew(1);
  }
  return `round ${round}`;
});

let client: Client;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ client, stop } = await startInProcessWorker({ appId: APP, environment: ENV, workflows: [untaken] }));
});

afterAll(async () => {
  await stop?.();
});

describe('a run that received events it never took', () => {
  it('still continues as new when those events together exceed MAX_DECISION_BYTES (5 events of 200 KB, each under MAX_PAYLOAD_BYTES and MAX_JSON_STRING_LENGTH)', async () => {
    const id = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'UntakenNoise', input: [0] });
    for (let i = 0; i < 5; i++) {
      const r = await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'noise', data: [String(i).padEnd(100_000, 'x'), String(i).padEnd(100_000, 'y')] });
      expect(r).toMatchObject({ changed: 1 });
    }
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'go', data: [] });
    const done = await client.awaitWorkflow(APP, ENV, id, { timeoutMs: 20_000 });
    const failed = (await client.workflowHistory(APP, ENV, id)).filter((e) => e.type === 'DecisionFailed').map((e) => (e.data as { message: string }).message.slice(0, 160));
    expect({ state: done?.state, output: done?.output, failedDecisions: failed }).toEqual({ state: 'COMPLETED', output: '"round 1"', failedDecisions: [] });
  });
});
