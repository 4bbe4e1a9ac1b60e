/**
 * A BUFFER_ONE schedule whose last workflow failed and was retried keeps
 * its promise, "dispatch [the kept occurrence] as soon as the running workflow completes, fails
 * or is terminated" (README, Overlap), also for a workflow that runs again after retryWorkflows.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Client, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';
import { Schedules, unique } from './schedule-helpers.js';

const APP = 'demo';
const ENV = 'buffer-one-retried';

/** Fails the first attempt of each workflow that calls it (one attempt in all: the workflow fails), then succeeds. */
const failedOnce = new Set<string>();
const failsFirst = defineTask(
  'revFailsFirst',
  (ctx) => {
    if (!failedOnce.has(ctx.workflowId!)) {
      failedOnce.add(ctx.workflowId!);
      throw new Error('first attempt fails');
    }
    return 'ok';
  },
  { retry: { maxAttempts: 1 } },
);
const failsThenWaits = defineWorkflow('RevFailsThenWaits', async (ctx) => {
  await ctx.run(failsFirst);
  await ctx.waitForEvent('finish');
  return 'finished';
});

let client: Client;
let api: Schedules;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  let service;
  ({ client, stop, service } = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [failsFirst], workflows: [failsThenWaits] }));
  api = new Schedules(service, ENV);
});

afterAll(async () => {
  await stop?.();
});

describe('BUFFER_ONE and a retried workflow', () => {
  it('fires the kept occurrence as soon as the retried workflow completes, not at the next occurrence', async () => {
    const id = await api.scheduleWorkflow({ name: 'RevFailsThenWaits', cron: '*/10 * * * * * *', overlapPolicy: 'BUFFER_ONE', tag: unique('buffered') });
    const first = await waitFor(async () => (await api.schedule(id))?.lastDispatchId, { timeoutMs: 15_000, intervalMs: 50, description: 'the first dispatch' });
    await waitFor(async () => (await client.workflow(APP, ENV, first))?.state === 'FAILED', { timeoutMs: 10_000, intervalMs: 50, description: 'the first run to fail' });
    expect(await client.request<{ retryWorkflows: { changed: number } }>(
      'mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { changed } }',
      { input: { appId: APP, environment: ENV, selector: { id: first } } },
    )).toEqual({ retryWorkflows: { changed: 1 } });
    // Running again (its task passed): the next occurrence is kept for when it ends.
    await waitFor(async () => (await client.workflowHistory(APP, ENV, first)).some((e) => e.type === 'TaskCompleted'), { timeoutMs: 10_000, intervalMs: 50, description: 'the retried task' });
    const kept = await waitFor(async () => (await api.schedule(id))?.bufferedOccurrence, { timeoutMs: 15_000, intervalMs: 50, description: 'a kept occurrence' });
    const endedAt = Date.now();
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id: first }, name: 'finish', data: [] });
    await waitFor(async () => (await client.workflow(APP, ENV, first))?.state === 'COMPLETED', { timeoutMs: 10_000, intervalMs: 20, description: 'the retried run to complete' });
    const history = await waitFor(
      async () => {
        const events = await api.history(id);
        return events.some((e) => e.type === 'ScheduleFired' && e.data.occurrence === kept) ? events : null;
      },
      { timeoutMs: 20_000, intervalMs: 20, description: 'the kept occurrence to fire' },
    );
    await api.act('delete', id);
    const keptFiring = history.find((e) => e.type === 'ScheduleFired' && e.data.occurrence === kept)!;
    // As soon as the workflow ended: well before the next occurrence, 10 s after the kept one.
    expect(Date.parse(keptFiring.data.firedAt) - endedAt).toBeLessThan(3_000);
  }, 60_000);
});
