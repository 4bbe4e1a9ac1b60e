/**
 * Engine semantics at the edges. A real service and an in-process worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RetryableError, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'engine-edges';
const DAY = 24 * 3_600_000;

const rateLimited = defineTask(
  'revRateLimited',
  (ctx, delayMs: number) => {
    if (ctx.attempt === 1) throw new RetryableError('rate limited', { retryAfterMs: delayMs });
    return `attempt ${ctx.attempt}`;
  },
  { retry: { maxAttempts: 2 } },
);
const calls = defineWorkflow('RevCalls', async (ctx, delayMs: number) => ctx.run(rateLimited, delayMs));

const quick = defineTask('revQuick', (_ctx, n: number) => n * 2);
/** Timers at the edges: 0, a date in the past, 200 at once, one losing a race, one 30 days away. */
const timers = defineWorkflow('RevTimers', async (ctx) => {
  const t0 = ctx.now().getTime();
  await ctx.sleep(0);
  await ctx.sleepUntil(t0 - 60_000);
  await Promise.all(Array.from({ length: 200 }, (_, i) => ctx.sleep(i % 7)));
  const raced = await Promise.race([ctx.sleep('30d').then(() => 'timer'), ctx.run(quick, 21)]);
  const timed = await ctx.waitForEvent('never', { timeout: 0 });
  return { raced, timed };
});
/** A child that continues as new `runs` times, then completes, fails, or waits for ever. */
const kid = defineWorkflow('RevKid', async (ctx, runs: number, mode: string) => {
  if (runs > 0) return ctx.continueAsNew(runs - 1, mode);
  if (mode === 'fail') throw new Error('kid failed');
  if (mode === 'wait') await ctx.waitForEvent('never');
  return `done ${mode}`;
});
const parent = defineWorkflow('RevParent', async (ctx, runs: number, mode: string) => {
  try {
    return await ctx.workflow(kid, runs, mode);
  } catch (e) {
    return `caught ${(e as Error).name}: ${(e as Error).message}`;
  }
});
/** Dispatches `n` children (fire and forget) that complete at once, then waits for an event. */
const dispatcher = defineWorkflow('RevDispatcher', async (ctx, n: number) => {
  for (let i = 0; i < n; i++) ctx.dispatch(kid, 0, 'ok');
  await ctx.waitForEvent('go');
  return 'done';
});
/** Two waits on one name, then 100 events taken one by one (most sent before the code waits for them). */
const events = defineWorkflow('RevEvents', async (ctx) => {
  const both = await Promise.all([ctx.waitForEvent('go'), ctx.waitForEvent('go', { timeout: '1h' })]);
  const got: number[] = [];
  for (let i = 0; i < 100; i++) got.push((await ctx.waitForEvent('n'))![1] as number);
  return { both: both.map((e) => e![1]).sort(), got: got.sort((a, b) => a - b) };
});

let baton: InProcessWorker;
beforeAll(async () => {
  baton = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [rateLimited, quick], workflows: [calls, timers, events, kid, parent, dispatcher] }, { env: { LEASE_MS: '2000' } });
});
afterAll(() => baton?.stop());

type Failed = { reason: string; error: { message: string }; retryAt: string | null };

describe('RetryableError asking for a delay past 24.8 days (the SDK said it took 365 days)', () => {
  it('records the attempt failed with its error and the delay asked, not lapsed by its lease', async () => {
    const before = Date.now();
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevCalls', input: [30 * DAY] });
    const failed = await waitFor(
      async () => {
        const events = (await baton.client.workflowHistory(APP, ENV, id)).filter((e) => e.type === 'TaskAttemptFailed');
        return events.length > 0 ? (events[0].data as Failed) : undefined;
      },
      { timeoutMs: 30_000, description: 'the first attempt failed' },
    );
    expect(failed.reason).toBe('error');
    expect(failed.error.message).toBe('rate limited');
    // Capped at what the protocol carries (a GraphQL Int of ms, about 24.8 days).
    expect(Date.parse(failed.retryAt!)).toBeGreaterThanOrEqual(before + 2 ** 31 - 1);
  });
});

describe('timers at the edges', () => {
  it('sleep(0), a date in the past, 200 timers at once, a 30-day timer losing a race, a wait timing out at 0: the workflow completes', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevTimers', input: [] });
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 30_000 })).toEqual({ raced: 42, timed: null });
    const history = await baton.client.workflowHistory(APP, ENV, id);
    expect(history.filter((e) => e.type === 'TimerFired')).toHaveLength(2 + 200 + 1);
    expect(history.filter((e) => e.type === 'DecisionFailed')).toHaveLength(0);
  });
});

describe('events at the edges', () => {
  it('two waits on one name take one event each; 100 events sent at once are each taken once', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevEvents', input: [] });
    const send = (name: string, value: number) => baton.client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name, data: [value] });
    await Promise.all(Array.from({ length: 100 }, (_, i) => send('n', i)));
    await send('go', 1);
    await send('go', 2);
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 30_000 })).toEqual({ both: [1, 2], got: Array.from({ length: 100 }, (_, i) => i) });
    await send('late', 3);
    const history = await baton.client.workflowHistory(APP, ENV, id);
    expect(history.filter((e) => e.type === 'WorkflowEventReceived')).toHaveLength(102);
  });
});

describe('a child that continues as new before it ends', () => {
  const childOf = async (id: string) =>
    waitFor(async () => {
      const started = (await baton.client.workflowHistory(APP, ENV, id)).find((e) => e.type === 'ChildWorkflowStarted');
      return started ? (started.data as { childId: string }).childId : undefined;
    }, { timeoutMs: 20_000, description: 'the child started' });

  it('tells its parent its result after its last run', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevParent', input: [2, 'ok'] });
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 30_000 })).toBe('done ok');
  });

  it('tells its parent it failed', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevParent', input: [2, 'fail'] });
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 30_000 })).toMatch(/^caught .*: kid failed$/);
  });

  it('tells its parent it was terminated', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevParent', input: [2, 'wait'] });
    const child = await childOf(id);
    await waitFor(async () => (await baton.client.workflowHistory(APP, ENV, child)).filter((e) => e.type === 'WorkflowContinuedAsNew').length === 2, { timeoutMs: 20_000, description: 'the child in its third run' });
    await baton.client.terminateWorkflows({ appId: APP, environment: ENV, selector: { id: child }, reason: 'stop' });
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 30_000 })).toMatch(/^caught TaskFailedError: child workflow .* was terminated$/);
  });
});

describe('children dispatched with ctx.dispatch (fire and forget)', () => {
  it('their ends do not wake the workflow that dispatched them: it makes no decision for them', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevDispatcher', input: [20] });
    const children = await waitFor(async () => {
      const started = (await baton.client.workflowHistory(APP, ENV, id)).filter((e) => e.type === 'ChildWorkflowStarted');
      return started.length === 20 ? started.map((e) => (e.data as { childId: string }).childId) : undefined;
    }, { timeoutMs: 20_000, description: 'the children started' });
    for (const child of children) expect(await baton.client.workflowResult(APP, ENV, child, { timeoutMs: 20_000 })).toBe('done ok');
    // Every child's end carried out (the last one's effect), then the parent's decisions counted.
    await baton.client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'go' });
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 20_000 })).toBe('done');
    const history = await baton.client.workflowHistory(APP, ENV, id);
    // The first decision, and the one for 'go'.
    expect(history.filter((e) => e.type === 'DecisionStarted')).toHaveLength(2);
  });
});
