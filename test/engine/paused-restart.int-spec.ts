/**
 * Workflows paused across a restart of the service (SIGKILL), while
 * a timer of one and the retry backoff of another's task come due: the timer fires after the
 * restart though the workflow is paused, the task is not run again while paused, and both finish
 * once resumed. A real service restarted on the same store and port, an in-process SDK worker.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Client, Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { quietLogger } from '../support/in-process-worker.js';
import { Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { portOf } from './engine-helpers.js';

const APP = 'demo';
const ENV = 'paused-restart';

const attempts = new Map<string, number>();
const failsOnce = defineTask(
  'revFailsOnce',
  (ctx) => {
    const n = (attempts.get(ctx.workflowId!) ?? 0) + 1;
    attempts.set(ctx.workflowId!, n);
    if (n === 1) throw new Error('first attempt fails');
    return `attempt ${n}`;
  },
  { retry: { maxAttempts: 3, initialDelay: '2s', backoffFactor: 1 } },
);
const sleeper = defineWorkflow('RevSleeper', async (ctx, ms: number) => {
  await ctx.sleep(ms);
  return 'woke';
});
const retrier = defineWorkflow('RevRetrier', async (ctx) => ctx.run(failsOnce));
const noop = defineWorkflow('RevNoop', async () => 'noop');

let service: Service | undefined;
let worker: Worker | undefined;
let running: Promise<void> | undefined;

afterAll(async () => {
  await worker?.shutdown();
  await running;
  await service?.stop();
});

describe('paused workflows across a restart', () => {
  it('fire their timers, do not retry their tasks while paused, and finish once resumed', async () => {
    service = await startService();
    const { storeUrl, token } = service;
    const port = portOf(service);
    const client = new Client({ url: service.url, token });
    worker = new Worker({ logger: quietLogger, url: service.url, token, appId: APP, environment: ENV, tasks: [failsOnce], workflows: [sleeper, retrier, noop] });
    running = worker.run();
    const history = (id: string) => client.workflowHistory(APP, ENV, id);
    const has = async (id: string, type: string) => (await history(id)).some((e) => e.type === type);

    const sleeping = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevSleeper', input: [1500] });
    const retrying = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevRetrier', input: [] });
    await waitFor(() => has(sleeping, 'TimerStarted'), { timeoutMs: 10_000, description: 'the timer' });
    await waitFor(() => has(retrying, 'TaskAttemptFailed'), { timeoutMs: 10_000, description: 'the first attempt to fail' });
    for (const id of [sleeping, retrying]) expect(await client.pauseWorkflows({ appId: APP, environment: ENV, selector: { id } })).toMatchObject({ changed: 1 });
    const fireAt = Date.parse(((await history(sleeping)).find((e) => e.type === 'TimerStarted')!.data as { fireAt: string }).fireAt);
    const retryAt = Date.parse(((await history(retrying)).find((e) => e.type === 'TaskAttemptFailed')!.data as { retryAt: string }).retryAt);

    await service.kill();
    await waitFor(() => Date.now() > Math.max(fireAt, retryAt) + 200, { timeoutMs: 10_000, description: 'both due times to pass' });
    service = await startService({ storeUrl, env: { PORT: port } });

    await waitFor(() => has(sleeping, 'TimerFired'), { timeoutMs: 15_000, description: 'the timer to fire after the restart' });
    // The worker is back and polling (a barrier), yet nothing ran for the paused workflows.
    expect(await client.awaitWorkflow(APP, ENV, await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevNoop', input: [] }), { timeoutMs: 20_000 })).toMatchObject({ state: 'COMPLETED' });
    expect((await history(retrying)).filter((e) => e.type === 'TaskStarted')).toHaveLength(1);
    expect((await client.workflow(APP, ENV, sleeping))!.state).toBe('PAUSED');
    expect((await client.workflow(APP, ENV, retrying))!.state).toBe('PAUSED');

    for (const id of [sleeping, retrying]) expect(await client.resumeWorkflows({ appId: APP, environment: ENV, selector: { id } })).toMatchObject({ changed: 1 });
    expect(await client.awaitWorkflow(APP, ENV, sleeping, { timeoutMs: 15_000 })).toMatchObject({ state: 'COMPLETED', output: '"woke"' });
    expect(await client.awaitWorkflow(APP, ENV, retrying, { timeoutMs: 15_000 })).toMatchObject({ state: 'COMPLETED', output: '"attempt 2"' });
  }, 90_000);
});
