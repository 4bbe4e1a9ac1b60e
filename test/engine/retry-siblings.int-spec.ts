/**
 * retryWorkflows after a parallel task failed the workflow: the sibling task that was still
 * running is told to stop (its workflow failed). That stop is the service's doing, not the task's
 * failure: it must not use up the sibling's attempts, or the retried workflow fails again at once
 * with "cancelled by the server". A real service and an in-process SDK worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Client, NonRetryableError, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'retry-siblings';

let charged = false;
/** Refused the first time (the bug an operator then fixes), accepted after. */
const charge = defineTask('charge', () => {
  if (!charged) {
    charged = true;
    throw new NonRetryableError('card declined');
  }
  return 'charged';
});

let mayFinish = false;
/** One attempt only; runs (heartbeating) until the test lets it finish, stops when told to. */
const reserve = defineTask(
  'reserve',
  async (ctx) => {
    while (!mayFinish) {
      if (await ctx.heartbeat()) throw new Error('stopped');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return 'reserved';
  },
  { retry: { maxAttempts: 1 } },
);

const checkout = defineWorkflow('Checkout', async (ctx) => Promise.all([ctx.run(charge), ctx.run(reserve)]));

let client: Client;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ client, stop } = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [charge, reserve], workflows: [checkout], heartbeatIntervalMs: 50 }));
});

afterAll(async () => {
  mayFinish = true;
  await stop?.();
});

describe('a task stopped because its workflow failed', () => {
  it('runs again when the workflow is retried: the stop did not use up its attempts', async () => {
    const id = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'Checkout', input: [] });
    expect(await client.awaitWorkflow(APP, ENV, id, { timeoutMs: 10_000 })).toMatchObject({ state: 'FAILED' });
    // The sibling heard that its workflow failed and stopped; its outcome is recorded.
    await waitFor(
      async () => {
        const events = await client.workflowHistory(APP, ENV, id);
        const failedAt = events.findIndex((e) => e.type === 'WorkflowFailed');
        return events.slice(failedAt + 1).some((e) => e.type === 'TaskAttemptFailed' && (e.data as { seq: number }).seq === 1);
      },
      { timeoutMs: 10_000, description: 'the running sibling to stop' },
    );

    mayFinish = true;
    const retried = await client.request<{ retryWorkflows: { changed: number } }>(
      'mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { changed } }',
      { input: { appId: APP, environment: ENV, selector: { id } } },
    );
    expect(retried.retryWorkflows.changed).toBe(1);
    const done = await client.awaitWorkflow(APP, ENV, id, { timeoutMs: 10_000 });
    expect(done).toMatchObject({ state: 'COMPLETED' });
    expect(JSON.parse(done!.output!)).toEqual(['charged', 'reserved']);
  });
});
