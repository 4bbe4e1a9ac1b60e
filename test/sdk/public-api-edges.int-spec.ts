/**
 * The SDK's public API at its edges: registrations, SIGTERM, client timeouts, shutdown, copies of the SDK.
 *
 * A worker declares its tasks and workflows in every poll (and every eager claim); the service
 * checks that registration: a task's timeout is at least 1 ms, and task and workflow names are 1
 * to 256 characters without control characters. `new Worker` checks the timeout's upper bound,
 * `maxAttempts` and `backoffFactor` ("a Worker given anything else throws when it is made, naming
 * the task", README), but not these: a task with `timeout: 0` (read as "no timeout" by many), a
 * sub-millisecond timeout (rounded to 0), or a name the service refuses made every poll of the
 * worker refused (BAD_USER_INPUT), for ever. The worker then served nothing at all (none of its
 * other tasks, none of its workflows), `run()` never settled, and all it said was a warning a minute.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { POLL_WORK } from '../../src/protocol/index.js';
import { type Service, startService } from '../support/service.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';

const noop = defineWorkflow('Noop', async () => 1);
const ok = defineTask('ok', () => 1);

const refused: Array<[string, { tasks?: ReturnType<typeof defineTask>[]; workflows?: ReturnType<typeof defineWorkflow>[]; workerId?: string }, string]> = [
  ['a task timeout of 0', { tasks: [defineTask('zeroTimeout', () => 1, { timeout: 0 })] }, 'zeroTimeout'],
  ['a task timeout of "0s"', { tasks: [defineTask('zeroSeconds', () => 1, { timeout: '0s' })] }, 'zeroSeconds'],
  ['a task timeout under half a millisecond (sent rounded, as 0)', { tasks: [defineTask('tinyTimeout', () => 1, { timeout: 0.4 })] }, 'tinyTimeout'],
  ['an empty task name', { tasks: [defineTask('', () => 1)] }, 'task'],
  ['a task name of 257 characters', { tasks: [defineTask('t'.repeat(257), () => 1)] }, 'task'],
  ['a task name with a newline', { tasks: [defineTask('send\nmail', () => 1)] }, 'task'],
  ['an empty workflow name', { workflows: [defineWorkflow('', async () => 1)] }, 'workflow'],
  ['a workflow name of 257 characters', { workflows: [defineWorkflow('W'.repeat(257), async () => 1)] }, 'workflow'],
  ['a workflow name with a tab', { workflows: [defineWorkflow('On\tboarding', async () => 1)] }, 'workflow'],
  ['an empty workerId', { workerId: '' }, 'workerId'],
  ['a workerId of 129 characters', { workerId: 'w'.repeat(129) }, 'workerId'],
];

let service: Service;

beforeAll(async () => {
  service = await startService();
}, 60_000);

afterAll(async () => {
  await killAllWorkers();
  await service?.stop();
});

describe('a worker registration the service refuses', () => {
  it.each(refused)('with %s, every poll is refused by the service (BAD_USER_INPUT)', async (_what, given) => {
    const client = new Client({ url: service.url, token: service.token });
    const tasks = [ok, ...(given.tasks ?? [])].map((t) => ({
      name: t.name,
      retry: null,
      timeoutMs: t.options.timeout !== undefined ? Math.round(typeof t.options.timeout === 'number' ? t.options.timeout : 0) : null,
    }));
    const poll = client.request(POLL_WORK, {
      input: { appId: 'demo', environment: 'review-sdk-refused', workerId: given.workerId ?? 'review-sdk', workflows: [noop, ...(given.workflows ?? [])].map((w) => w.name), tasks, maxItems: 1, waitMs: 0 },
    });
    await expect(poll).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });

  it.each(refused)('with %s, new Worker throws a TypeError naming it, instead of polling in vain for ever', (_what, given, names) => {
    const make = () =>
      new Worker({
        url: service.url,
        token: service.token,
        appId: 'demo',
        environment: 'review-sdk-refused',
        tasks: [ok, ...(given.tasks ?? [])],
        workflows: [noop, ...(given.workflows ?? [])],
        ...(given.workerId !== undefined ? { workerId: given.workerId } : {}),
        logger: { info() {}, warn() {}, error() {} },
      });
    expect(make).toThrow(TypeError);
    expect(make).toThrow(names);
  });
});

describe('a worker process told to stop (SIGTERM) with tasks in flight', () => {
  const history = async (id: string) => new Client({ url: service.url, token: service.token }).workflowHistory('demo', 'review-sdk-stop', id);
  const dispatch = (ms: number) =>
    new Client({ url: service.url, token: service.token }).dispatchWorkflow({ appId: 'demo', environment: 'review-sdk-stop', name: 'Parallel', input: [4, ms] });

  it('lets them finish within its grace and reports every result before it exits', async () => {
    const first = await startWorker({ url: service.url, token: service.token, environment: 'review-sdk-stop' });
    const id = await dispatch(1500);
    await waitFor(async () => (await history(id)).filter((e) => e.type === 'TaskStarted').length === 4, { timeoutMs: 20_000, description: 'four naps started' });
    await first.stop();
    expect(first.process.exitCode).toBe(0);
    const events = await history(id);
    expect(events.filter((e) => e.type === 'TaskCompleted')).toHaveLength(4);
    expect(events.filter((e) => e.type === 'TaskStarted')).toHaveLength(4);
    // What is left (the decision after the results) is made by another worker.
    const second = await startWorker({ url: service.url, token: service.token, environment: 'review-sdk-stop' });
    const ended = await new Client({ url: service.url, token: service.token }).workflowResult('demo', 'review-sdk-stop', id, { timeoutMs: 20_000 });
    expect(ended).toEqual(['p0', 'p1', 'p2', 'p3']);
    await second.stop();
  }, 60_000);

  it('gives back what its grace did not cover: another worker runs them at once, not after their leases lapse', async () => {
    const first = await startWorker({ url: service.url, token: service.token, environment: 'review-sdk-stop', env: { BATON_SHUTDOWN_GRACE_MS: '200' } });
    const id = await dispatch(60_000);
    await waitFor(async () => (await history(id)).filter((e) => e.type === 'TaskStarted').length === 4, { timeoutMs: 20_000, description: 'four naps started' });
    await first.stop();
    expect(first.process.exitCode).toBe(0);
    const stoppedAt = Date.now();
    const second = await startWorker({ url: service.url, token: service.token, environment: 'review-sdk-stop' });
    // The service's lease is 30 s: started again well before it, each attempt was given back.
    await waitFor(async () => (await history(id)).filter((e) => e.type === 'TaskStarted' && (e.data as { workerId?: string }).workerId === second.workerId).length === 4, {
      timeoutMs: 15_000,
      description: 'the four naps started again by the second worker',
    });
    expect(Date.now() - stoppedAt).toBeLessThan(15_000);
    await second.kill();
  }, 60_000);
});

/**
 * `ClientOptions.timeoutMs` went to `AbortSignal.timeout` unchecked (the Worker checks its own
 * timings for this very reason): 0 (no timeout, in many HTTP clients) or 2^31 ms and more is a
 * timer of 1 ms in Node, so every request was aborted at once with a TimeoutError, which
 * `awaitWorkflow` / `result()` take as a passing failure and retried for 5 minutes before failing;
 * NaN or a string threw from every request. And `awaitWorkflow` adds its long poll's wait (up to
 * 20 s) to the deadline: a timeoutMs of 2^31 - 1, which plain requests take, overflowed there.
 */
describe('ClientOptions.timeoutMs', () => {
  it.each([[0], [Number.NaN], [-1], [2 ** 31], [Number.POSITIVE_INFINITY], [1.5]])('%p: new Client throws a TypeError naming timeoutMs', (timeoutMs) => {
    const make = () => new Client({ url: service.url, token: service.token, timeoutMs });
    expect(make).toThrow(TypeError);
    expect(make).toThrow('timeoutMs');
  });

  it('2^31 - 1 (the longest a Node timer waits): awaitWorkflow long-polls and answers, instead of aborting every request at once', async () => {
    const client = new Client({ url: service.url, token: service.token, timeoutMs: 2 ** 31 - 1 });
    await expect(client.awaitWorkflow('demo', 'review-sdk-client', '01900000-0000-7000-8000-000000000000', { timeoutMs: 300 })).resolves.toBeNull();
  });
});

/**
 * A task's result waits, before it is reported, for the decision the worker makes right after it
 * (`decideAfterTasks`, on by default), which may run inline steps. A shutdown whose grace ran out
 * while such a step ran aborted the running attempts, waited 2 s and resolved, with the finished
 * task's result still unreported: the process exits then (`baton worker` does), the result is lost,
 * and the task runs again once its lease lapses (counted against its retries).
 */
describe('shutdown while the decision made after a finished task runs a slow step', () => {
  it('reports the finished task before shutdown() resolves', async () => {
    let stepStarted = false;
    let release: () => void = () => undefined;
    const quick = defineTask('reviewQuick', () => 'fetched');
    const slowAfter = defineWorkflow('ReviewSlowAfterTask', async (ctx) => {
      const data = await ctx.run(quick);
      await ctx.step('process', () => {
        stepStarted = true;
        return new Promise<string>((resolve) => (release = () => resolve('processed')));
      });
      return data;
    });
    const client = new Client({ url: service.url, token: service.token });
    const worker = new Worker({
      url: service.url,
      token: service.token,
      appId: 'demo',
      environment: 'review-sdk-after',
      tasks: [quick],
      workflows: [slowAfter],
      shutdownGraceMs: 200,
      heartbeatIntervalMs: 200,
      logger: { info() {}, warn() {}, error() {} },
    });
    const running = worker.run();
    const id = await client.dispatchWorkflow({ appId: 'demo', environment: 'review-sdk-after', name: 'ReviewSlowAfterTask' });
    await waitFor(() => stepStarted, { timeoutMs: 20_000, description: 'the step after the task started' });
    try {
      await worker.shutdown();
      await running;
      const history = await client.workflowHistory('demo', 'review-sdk-after', id);
      expect(history.filter((e) => e.type === 'TaskCompleted')).toHaveLength(1);
    } finally {
      release();
    }
  }, 60_000);
});

/**
 * `baton worker <module>` runs its own copy of the SDK (dist/src/sdk; the service's example worker
 * too), while the module imports `@baton/sdk` as the README says (packages/sdk, or the tarball in
 * the user's project): two copies of every class. The worker told a NonRetryableError, a
 * RetryableError's delay and workflow code a TaskFailedError by `instanceof` of its own classes:
 * a task throwing `@baton/sdk`'s NonRetryableError was retried by its policy, a RetryableError's
 * `retryAfterMs` was ignored, and `e instanceof TaskFailedError` in the workflow was false.
 */
describe("a module run by baton worker, importing @baton/sdk's classes", () => {
  it('stops retrying at its NonRetryableError, and its workflow code recognises TaskFailedError', async () => {
    const { mkdtempSync, rmSync, writeFileSync } = await import('node:fs');
    const { join, relative } = await import('node:path');
    const { ROOT } = await import('../support/worker.js');
    // Where `@baton/sdk` resolves from a module in the repository (node_modules/@baton/sdk links to packages/sdk).
    const sdk = join(ROOT, 'packages/sdk/dist/sdk/index.js');
    const dir = mkdtempSync(join(ROOT, 'dist', 'review-sdk-module-'));
    const file = join(dir, 'module.mjs');
    writeFileSync(
      file,
      `import { NonRetryableError, TaskFailedError, defineTask, defineWorkflow } from ${JSON.stringify(sdk)};
export const refuses = defineTask('reviewRefuses', () => { throw new NonRetryableError('no such customer'); }, { retry: { maxAttempts: 3, initialDelay: '50ms' } });
export const catches = defineWorkflow('ReviewCatches', async (ctx) => {
  try { await ctx.run(refuses); return 'completed'; } catch (e) { return { taskFailedError: e instanceof TaskFailedError, name: e.errorName, message: e.message }; }
});
`,
    );
    const worker = await startWorker({ url: service.url, token: service.token, environment: 'review-sdk-module', module: relative(ROOT, file) });
    try {
      const client = new Client({ url: service.url, token: service.token });
      const id = await client.dispatchWorkflow({ appId: 'demo', environment: 'review-sdk-module', name: 'ReviewCatches' });
      const result = await client.workflowResult('demo', 'review-sdk-module', id, { timeoutMs: 30_000 });
      const history = await client.workflowHistory('demo', 'review-sdk-module', id);
      expect(history.filter((e) => e.type === 'TaskStarted')).toHaveLength(1);
      expect(result).toEqual({ taskFailedError: true, name: 'NonRetryableError', message: 'no such customer' });
    } finally {
      await worker.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
