/**
 * Control actions through two instances on one store (one SQLite file; the EventStoreDB adapter on
 * one FAKE EventStoreDB server process, not EventStoreDB, each instance with read models of its
 * own), with both
 * effects reactors running (a workflow's ctx.select(...) actions) and the worker on one of them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { Service } from '../support/service.js';
import { ESDB_FAKE_OWN_READ_MODELS, InstancePair, SQLITE_SHARED_READ_MODELS } from '../support/instance-pairs.js';
import { quietLogger } from '../support/in-process-worker.js';
import { HEARTBEAT, poll } from './security-helpers.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'control-two';

const target = defineWorkflow('RevTarget', async (ctx) => {
  const got: unknown[] = [];
  for (;;) {
    const e = await ctx.waitForEvent('item');
    if (e![1] === 'stop') return got;
    got.push(e![1]);
  }
});
const pauser = defineWorkflow('RevPauser', async (ctx, id: string) => {
  ctx.select({ id }).pause();
  return id;
});
const sender = defineWorkflow('RevSender', async (ctx, id: string, value: string) => {
  ctx.select({ id }).send('item', value);
  return id;
});

const failedOnce = new Set<string>();
const failsFirst = defineTask(
  'revFailsFirst2',
  (ctx) => {
    if (failedOnce.has(ctx.workflowId!)) return 'second attempt';
    failedOnce.add(ctx.workflowId!);
    throw new Error('first attempt fails');
  },
  { retry: { maxAttempts: 1 } },
);
const failer = defineWorkflow('RevFailer', async (ctx) => ctx.run(failsFirst));

describe.each([SQLITE_SHARED_READ_MODELS, ESDB_FAKE_OWN_READ_MODELS].map((t) => [t.title, t] as const))('control through two instances on one store (%s)', (_title, topology) => {
  let pair: InstancePair;
  let a: Service;
  let b: Service;
  let onA: Client;
  let onB: Client;
  let worker: Worker;
  let running: Promise<void>;

  beforeAll(async () => {
    pair = await topology.start({ LOG_LEVEL: 'warn' });
    ({ a, b } = pair);
    onA = new Client({ url: a.url, token: a.token });
    onB = new Client({ url: b.url, token: a.token });
    worker = new Worker({ logger: quietLogger, url: a.url, token: a.token, appId: APP, environment: ENV, tasks: [failsFirst], workflows: [target, pauser, sender, failer] });
    running = worker.run();
  }, 60_000);

  afterAll(async () => {
    await worker?.shutdown();
    await running;
    await pair?.stop();
  });

  const history = (id: string) => onA.workflowHistory(APP, ENV, id);
  const effectsCaughtUp = async (service: Service) =>
    waitFor(
      async () => {
        const { effects, projections } = (await (await fetch(`${service.url}/health`)).json()).details;
        return effects.held === 0 && BigInt(effects.checkpoint) >= BigInt(projections.checkpoint);
      },
      { timeoutMs: 15_000, description: 'the effects reactor at the head' },
    );

  it('a workflow pausing another records ControlApplied with changed 1 for the one it paused, with both reactors running', async () => {
    const n = 100;
    const targets = await Promise.all(Array.from({ length: n }, () => onA.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevTarget', input: [] })));
    for (const id of targets) await waitFor(async () => (await history(id)).some((e) => e.type === 'DecisionCompleted'), { timeoutMs: 15_000 });
    const pausers = await Promise.all(targets.map((id, i) => (i % 2 ? onA : onB).dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevPauser', input: [id] })));
    for (const id of pausers) await waitFor(async () => (await history(id)).some((e) => e.type === 'ControlApplied'), { timeoutMs: 15_000 });
    await effectsCaughtUp(a);
    await effectsCaughtUp(b);
    const applied = await Promise.all(pausers.map(async (id) => (await history(id)).filter((e) => e.type === 'ControlApplied').map((e) => e.data)));
    const paused = await Promise.all(targets.map(async (id) => (await history(id)).filter((e) => e.type === 'WorkflowPaused').length));
    expect(paused).toEqual(targets.map(() => 1));
    expect(applied).toEqual(pausers.map(() => [expect.objectContaining({ matched: 1, changed: 1 })]));
  }, 120_000);

  it('a workflow sending to another delivers once, and records changed 1, with both reactors running', async () => {
    const n = 100;
    const targets = await Promise.all(Array.from({ length: n }, () => onA.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevTarget', input: [] })));
    for (const id of targets) await waitFor(async () => (await history(id)).some((e) => e.type === 'DecisionCompleted'), { timeoutMs: 15_000 });
    const senders = await Promise.all(targets.map((id, i) => (i % 2 ? onA : onB).dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevSender', input: [id, `v${i}`] })));
    for (const id of senders) await waitFor(async () => (await history(id)).some((e) => e.type === 'ControlApplied'), { timeoutMs: 15_000 });
    await effectsCaughtUp(a);
    await effectsCaughtUp(b);
    const received = await Promise.all(targets.map(async (id) => (await history(id)).filter((e) => e.type === 'WorkflowEventReceived').length));
    expect(received).toEqual(targets.map(() => 1));
    const applied = await Promise.all(senders.map(async (id) => (await history(id)).filter((e) => e.type === 'ControlApplied').map((e) => e.data)));
    expect(applied).toEqual(senders.map(() => [expect.objectContaining({ matched: 1, changed: 1 })]));
  }, 120_000);

  it('the same action on both instances at once changes a workflow once in all (changed sums to 1)', async () => {
    for (let i = 0; i < 10; i++) {
      const id = await onA.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevTarget', input: [] });
      const both = async (action: 'pauseWorkflows' | 'resumeWorkflows' | 'terminateWorkflows') => {
        const results = await Promise.all([onA, onB].map((c) => c[action]({ appId: APP, environment: ENV, selector: { id } })));
        return results.reduce((sum, r) => sum + r.changed, 0);
      };
      expect({ i, pause: await both('pauseWorkflows') }).toEqual({ i, pause: 1 });
      expect({ i, resume: await both('resumeWorkflows') }).toEqual({ i, resume: 1 });
      expect({ i, terminate: await both('terminateWorkflows') }).toEqual({ i, terminate: 1 });
      const h = await history(id);
      expect(h.filter((e) => ['WorkflowPaused', 'WorkflowResumed', 'WorkflowTerminated'].includes(e.type)).map((e) => e.type)).toEqual(['WorkflowPaused', 'WorkflowResumed', 'WorkflowTerminated']);
    }
  });

  it('paused and resumed on B while the worker polls A: events sent meanwhile through B are taken in order', async () => {
    const id = await onA.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevTarget', input: [] });
    await waitFor(async () => (await history(id)).some((e) => e.type === 'DecisionCompleted'), { timeoutMs: 15_000 });
    expect(await onB.pauseWorkflows({ appId: APP, environment: ENV, selector: { id } })).toMatchObject({ changed: 1 });
    for (const v of ['a', 'b', 'c', 'stop']) await onB.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'item', data: [v] });
    expect(await onB.resumeWorkflows({ appId: APP, environment: ENV, selector: { id } })).toMatchObject({ changed: 1 });
    const done = await onA.awaitWorkflow(APP, ENV, id, { timeoutMs: 15_000 });
    expect(done).toMatchObject({ state: 'COMPLETED' });
    expect(JSON.parse(done!.output!)).toEqual(['a', 'b', 'c']);
  });

  it('events sent through B right after the dispatch through A, with the worker parked on A (eager start), are all taken in order, 10 of 10', async () => {
    for (let i = 0; i < 10; i++) {
      const id = await onA.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevTarget', input: [] });
      for (const v of [`x${i}`, `y${i}`, 'stop']) {
        expect(await onB.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'item', data: [v] })).toMatchObject({ matched: 1, changed: 1 });
      }
      const done = await onB.awaitWorkflow(APP, ENV, id, { timeoutMs: 15_000 });
      expect({ i, state: done?.state, output: done?.output && JSON.parse(done.output) }).toEqual({ i, state: 'COMPLETED', output: [`x${i}`, `y${i}`] });
    }
  });

  it("a decision's heartbeat after its workflow was terminated tells the worker to stop, as a task's does", async () => {
    const scope = { appId: APP, environment: 'control-raw' };
    const id = await onA.dispatchWorkflow({ ...scope, name: 'RevRaw', input: [] });
    const [decision] = await poll(a, scope, { workflows: ['RevRaw'] });
    expect(decision).toMatchObject({ kind: 'DECISION', workflowId: id });
    expect(await onA.terminateWorkflows({ ...scope, selector: { id } })).toMatchObject({ changed: 1 });
    const answer = await a.gql(HEARTBEAT, { input: { ...scope, workerId: 'hostile-test', attempts: [{ ref: decision.ref, attemptId: decision.decisionId }] } });
    expect(answer.body.errors).toBeUndefined();
    expect(answer.body.data.heartbeat).toEqual([{ ref: decision.ref, cancel: true, reason: expect.stringMatching(/terminated|ended/) }]);
  });

  it('a workflow retried through B runs again on the worker polling A', async () => {
    for (let i = 0; i < 5; i++) {
      const id = await onA.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevFailer', input: [] });
      await waitFor(async () => (await onB.workflow(APP, ENV, id))?.state === 'FAILED', { timeoutMs: 15_000, description: 'the first run to fail' });
      expect(await onB.request('mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { matched changed } }', { input: { appId: APP, environment: ENV, selector: { id } } })).toEqual({ retryWorkflows: { matched: 1, changed: 1 } });
      expect({ i, done: await onA.awaitWorkflow(APP, ENV, id, { timeoutMs: 15_000 }) }).toMatchObject({ i, done: { state: 'COMPLETED', output: '"second attempt"' } });
    }
  });
});
