/**
 * Two Baton processes on one store, as behind a load balancer: one SQLite file (read models
 * shared), and the EventStoreDB adapter on one FAKE EventStoreDB server process (not
 * EventStoreDB), each instance with read models of its own. A write acknowledged by one instance is seen, and can be acted on, by the next
 * request on the other; concurrent work on one workflow through both is normal. Control actions
 * through both, with both effects reactors running (a workflow's ctx.select(...) actions) and the
 * worker on one of them.
 *
 * One pair per topology for the whole file: every test works on names, ids, tags or environments
 * of its own (the control tests in environments of their own, 'control-two' and 'control-raw'),
 * and counts only those, so no test depends on a fresh store or on what another left.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, request } from 'node:http';
import { Client as SdkClient, Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { Service, createTokenViaCli } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { FixtureWorker, killAllWorkers, startWorker } from '../support/worker.js';
import { quietLogger } from '../support/in-process-worker.js';
import { Engine, HistoryEntry, describeHistory } from '../engine/engine-helpers.js';
import { Client, expectData, revokeTokenViaCli, tokenIdOf, unique } from './api-helpers.js';
import { HEARTBEAT, poll } from './security-helpers.js';
import { ESDB_FAKE_OWN_READ_MODELS, InstancePair, SQLITE_SHARED_READ_MODELS } from '../support/instance-pairs.js';
import { Schedules, data as scheduleData } from '../schedules/schedule-helpers.js';

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

describe.each([SQLITE_SHARED_READ_MODELS, ESDB_FAKE_OWN_READ_MODELS].map((t) => [t.title, t] as const))('two instances on one store (%s)', (_title, topology) => {
  let pair: InstancePair;
  let a: Service;
  let b: Service;
  let apiA: Client;
  let apiB: Client;
  const workers: FixtureWorker[] = [];

  beforeAll(async () => {
    pair = await topology.start({ LOG_LEVEL: 'warn' });
    ({ a, b } = pair);
    apiA = new Client(a, 'demo', 'dev');
    apiB = new Client({ ...b, token: a.token } as Service, 'demo', 'dev');
  }, 60_000);
  afterAll(async () => {
    await killAllWorkers();
    await pair?.stop();
  });

  // First, while no fixture worker runs yet (the tests below stop theirs only at the end).
  describe('control through both instances, both effects reactors running, the worker on A', () => {
    let onA: SdkClient;
    let onB: SdkClient;
    let worker: Worker;
    let running: Promise<void>;

    beforeAll(async () => {
      onA = new SdkClient({ url: a.url, token: a.token });
      onB = new SdkClient({ url: b.url, token: a.token });
      worker = new Worker({ logger: quietLogger, url: a.url, token: a.token, appId: APP, environment: ENV, tasks: [failsFirst], workflows: [target, pauser, sender, failer] });
      running = worker.run();
    }, 60_000);

    afterAll(async () => {
      await worker?.shutdown();
      await running;
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

  it('the same idempotency key dispatched through A and B at once starts exactly one workflow, 20 of 20', async () => {
    const name = unique('Keyed');
    for (let i = 0; i < 20; i++) {
      const key = `key-${i}-${unique('k')}`;
      const [ra, rb] = await Promise.all([apiA.dispatchWorkflowRaw({ name, idempotencyKey: key }), apiB.dispatchWorkflowRaw({ name, idempotencyKey: key })]);
      const [ida, idb] = [expectData(ra).dispatchWorkflow.id, expectData(rb).dispatchWorkflow.id];
      expect({ i, same: ida === idb }).toEqual({ i, same: true });
    }
    expect((await apiB.workflows({ name }, { first: 100 })).totalCount).toBe(20);
    expect((await apiA.workflows({ name }, { first: 100 })).totalCount).toBe(20);
  });

  it('the same idempotency key for a task through A and B at once dispatches one task, 10 of 10', async () => {
    const name = unique('KeyedTask');
    for (let i = 0; i < 10; i++) {
      const key = `task-key-${i}-${unique('k')}`;
      const [ra, rb] = await Promise.all([apiA.dispatchTaskRaw({ name, idempotencyKey: key }), apiB.dispatchTaskRaw({ name, idempotencyKey: key })]);
      expect({ i, same: expectData(ra).dispatchTask.id === expectData(rb).dispatchTask.id }).toEqual({ i, same: true });
    }
    expect((await apiB.tasks({ name })).totalCount).toBe(10);
  });

  it('a token revoked with the CLI is refused at once by both instances, 5 of 5', async () => {
    for (let i = 0; i < 5; i++) {
      const token = await createTokenViaCli(a.storeUrl, ['demo']);
      // Known (and verified) on both first.
      for (const s of [a, b]) expect((await s.gql('{ viewer { role } }', undefined, token)).status).toBe(200);
      await revokeTokenViaCli(a.storeUrl, tokenIdOf(token));
      const [onA, onB] = await Promise.all([a.gql('{ viewer { role } }', undefined, token), b.gql('{ viewer { role } }', undefined, token)]);
      expect({ i, a: onA.status, b: onB.status }).toEqual({ i, a: 401, b: 401 });
    }
  });

  it('a schedule created on A is read, paused, triggered and deleted through B at once', async () => {
    const sa = new Schedules(a, 'dev', 'demo', a.token);
    const sb = new Schedules(b, 'dev', 'demo', a.token);
    for (let i = 0; i < 5; i++) {
      const name = unique('Sched');
      const id = await sa.scheduleTask({ cron: '0 0 1 1 *', name, input: '[]' });
      expect({ i, seen: (await sb.schedule(id))?.state }).toEqual({ i, seen: 'ACTIVE' });
      const list = scheduleData(await sb.gql(`{ schedules(filter: { appId: "demo", environment: "dev", name: "${name}" }) { totalCount nodes { id state } } }`)).schedules;
      expect({ i, list }).toEqual({ i, list: { totalCount: 1, nodes: [{ id, state: 'ACTIVE' }] } });
      expect((await sb.act('pause', id)).state).toBe('PAUSED');
      expect((await sa.schedule(id))?.state).toBe('PAUSED');
      expect((await sa.act('resume', id)).state).toBe('ACTIVE');
      const triggered = scheduleData(await sb.gql(`mutation { triggerSchedule(input: { appId: "demo", environment: "dev", id: "${id}" }) { id schedule { triggeredCount } } }`)).triggerSchedule;
      expect(triggered.schedule.triggeredCount).toBe(1);
      expect(await apiA.task(triggered.id)).toMatchObject({ id: triggered.id, name, state: 'PENDING' });
      expect((await sb.act('delete', id)).state).toBe('DELETED');
      expect((await sa.schedule(id))?.state).toBe('DELETED');
      expect(scheduleData(await sa.gql(`{ scheduleHistory(appId: "demo", environment: "dev", id: "${id}") { type } }`)).scheduleHistory.map((e: { type: string }) => e.type)).toEqual([
        'ScheduleCreated',
        'SchedulePaused',
        'ScheduleResumed',
        'ScheduleTriggered',
        'ScheduleDeleted',
      ]);
    }
  });

  it('a task dispatched on A is listed, counted and read on B at once; the audit log on B has it', async () => {
    const name = unique('Listed');
    for (let i = 0; i < 10; i++) {
      const id = await apiA.dispatchTask(name, `[${i}]`);
      expect(await apiB.task(id)).toMatchObject({ id, state: 'PENDING' });
      expect({ i, count: (await apiB.tasks({ name })).totalCount }).toEqual({ i, count: i + 1 });
      const audit = expectData(await apiB.gql(`{ auditLog(filter: { appId: "demo", environment: "dev", search: "${name.toLowerCase()}" }) { totalCount } }`)).auditLog;
      expect({ i, audit: audit.totalCount }).toEqual({ i, audit: i + 1 });
    }
  });

  it('an event sent on A is in the history read on B at once; counts by state on B follow a terminate on A', async () => {
    const name = unique('Hist');
    for (let i = 0; i < 10; i++) {
      const id = await apiA.dispatchWorkflow(name);
      expect(await apiA.act('send', { id }, { name: 'Hello', data: `[${i}]` })).toMatchObject({ changed: 1 });
      expect((await apiB.history(id)).map((e) => e.type)).toEqual(['WorkflowDispatched', 'WorkflowEventReceived']);
      expect(await apiA.act('terminate', { id })).toMatchObject({ changed: 1 });
      const counts = expectData(await apiB.gql(`{ workflowCounts(filter: { appId: "demo", environment: "dev", name: "${name}" }) { state count } }`)).workflowCounts;
      expect({ i, counts: counts.filter((c: { count: number }) => c.count > 0) }).toEqual({ i, counts: [{ state: 'TERMINATED', count: i + 1 }] });
      const awaited = expectData(await apiB.gql(`{ awaitWorkflow(appId: "demo", environment: "dev", id: "${id}", waitMs: 5000) { state } }`)).awaitWorkflow;
      expect(awaited).toEqual({ state: 'TERMINATED' });
    }
  });

  it('a workflow of 300 parallel tasks, run by workers on A and B, completes with every task completed once', async () => {
    const environment = unique('wide');
    workers.push(await startWorker({ url: a.url, token: a.token, environment, concurrency: 20 }));
    workers.push(await startWorker({ url: b.url, token: a.token, environment, concurrency: 20 }));
    const engineA = new Engine(a, environment);
    const engineB = new Engine(b, environment, a.token);
    const ids = [await engineA.dispatch('Parallel', [300, 30]), await engineB.dispatch('Parallel', [300, 5])];
    for (const id of ids) {
      const done = await engineA.waitForState(id, 'COMPLETED', 60_000);
      expect(done.result).toEqual(Array.from({ length: 300 }, (_, i) => `p${i}`));
      const history: HistoryEntry[] = await engineB.history(id);
      const perSeq = new Map<number, { started: number; completed: number; ended: number }>();
      for (const e of history) {
        if (!['TaskStarted', 'TaskCompleted', 'TaskAttemptFailed'].includes(e.type)) continue;
        const s = perSeq.get(e.data.seq) ?? { started: 0, completed: 0, ended: 0 };
        if (e.type === 'TaskStarted') s.started++;
        else if (e.type === 'TaskCompleted') s.completed++;
        else s.ended++;
        perSeq.set(e.data.seq, s);
      }
      const wrong = [...perSeq].filter(([, s]) => s.completed !== 1 || s.started !== 1 + s.ended);
      expect({ id, size: perSeq.size, wrong, history: wrong.length ? describeHistory(history) : '' }).toEqual({ id, size: 300, wrong: [], history: '' });
    }
  }, 120_000);

  it("a resume through B reaches a parent paused through A after its child's result reached it through both reactors, 8 of 8", async () => {
    const environment = unique('stale');
    workers.push(await startWorker({ url: a.url, token: a.token, environment }));
    const engineA = new Engine(a, environment);
    const engineB = new Engine(b, environment, a.token);
    for (let i = 0; i < 8; i++) {
      const tag = unique('kid');
      const parentId = await engineA.dispatch('Parent', [tag]);
      await engineA.childOf(parentId);
      // B acts on the parent once: it now holds the parent's stream (the child call pending).
      expect(await engineB.send({ id: parentId }, 'hello')).toMatchObject({ matched: 1, changed: 1 });
      // Paused through A: B's copy does not know.
      expect(await engineA.pause({ id: parentId })).toMatchObject({ matched: 1, changed: 1 });
      // The child ends through A: both instances' reactors tell the parent (one event recorded).
      await waitFor(async () => (await engineA.send({ name: 'Child', tag }, 'release', i)).matched === 1, { timeoutMs: 10_000, description: `child ${tag}` });
      await engineA.waitForEventType(parentId, 'ChildWorkflowCompleted');
      await engineA.effectsCaughtUp();
      await engineB.effectsCaughtUp();
      expect((await engineB.workflow(parentId)).state).toBe('PAUSED');
      // Resumed through B: it must change the paused parent, which then completes.
      const resumed = await engineB.resume({ id: parentId });
      expect({ i, resumed }).toMatchObject({ i, resumed: { matched: 1, changed: 1 } });
      await engineA.waitForState(parentId, 'COMPLETED');
    }
  }, 120_000);

  it('a workflow failed through A is in failures on B at once, retried through B, and completes without running its done step again', async () => {
    const environment = unique('retry');
    workers.push(await startWorker({ url: a.url, token: a.token, environment }));
    const engineA = new Engine(a, environment);
    const engineB = new Engine(b, environment, a.token);
    const clientB = new Client({ ...b, token: a.token } as Service, 'demo', environment);
    for (let i = 0; i < 3; i++) {
      const key = unique('order');
      const id = await engineA.dispatch('ChargeOrder', [key]);
      await engineA.waitForState(id, 'FAILED');
      const failures = expectData(await clientB.gql(`{ failures(appId: "demo", environment: "${environment}") { name count error } }`)).failures;
      expect(failures).toContainEqual(expect.objectContaining({ name: 'ChargeOrder', count: 1, error: expect.stringContaining(key) }));
      const retried = expectData(await clientB.gql(`mutation { retryWorkflows(input: { appId: "demo", environment: "${environment}", selector: { id: "${id}" } }) { matched changed } }`)).retryWorkflows;
      expect(retried).toEqual({ matched: 1, changed: 1 });
      const done = await engineB.waitForState(id, 'COMPLETED');
      expect(done.result).toEqual({ echoed: key, charged: `charged ${key}` });
      const history = await engineA.history(id);
      expect(history.filter((e) => e.type === 'TaskStarted' && e.data.seq === 0)).toHaveLength(1);
      expect(history.filter((e) => e.type === 'WorkflowRetried')).toHaveLength(1);
      const after = expectData(await clientB.gql(`{ failures(appId: "demo", environment: "${environment}") { name count } }`)).failures;
      expect(after.filter((f: { name: string }) => f.name === 'ChargeOrder')).toEqual([]);
    }
  }, 60_000);

  it('workers and clients behind a round-robin balancer (every request to the other instance): each workflow completes once, nothing claimed or recorded twice', async () => {
    // The balancer: each request to the next instance, so a worker polls one and reports to the other.
    const targets = [new URL(a.url), new URL(b.url)];
    let next = 0;
    const balancer = createServer((req, res) => {
      const target = targets[next++ % 2];
      const upstream = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.writeHead(502).end());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => balancer.listen(0, '127.0.0.1', () => resolve()));
    try {
      const url = `http://127.0.0.1:${(balancer.address() as { port: number }).port}`;
      const environment = unique('balanced');
      for (let i = 0; i < 3; i++) workers.push(await startWorker({ url, token: a.token, environment, concurrency: 20 }));
      const engine = new Engine({ ...a, url } as Service, environment);
      const expected = new Map<string, unknown>();
      await Promise.all(
        Array.from({ length: 4 }, async (_, lane) => {
          for (let k = 0; k < 8; k++) {
            if (k % 4 === 0) {
              const id = await engine.dispatch('Sequential', [`l${lane}k${k}`]);
              expected.set(id, [`l${lane}k${k}`, 3, `l${lane}k${k}-3`]);
            } else if (k % 4 === 1) {
              const id = await engine.dispatch('Parallel', [20, 5]);
              expected.set(id, Array.from({ length: 20 }, (_, i) => `p${i}`));
            } else if (k % 4 === 2) {
              const tag = unique('kid');
              const id = await engine.dispatch('Parent', [tag]);
              expected.set(id, undefined);
              await waitFor(async () => (await engine.send({ name: 'Child', tag }, 'release', k)).matched === 1, { timeoutMs: 10_000, description: `child ${tag}` });
            } else {
              const tag = unique('listener');
              const id = await engine.dispatch('Listener', [], tag);
              for (let p = 0; p < 3; p++) expect(await engine.send({ name: 'Listener', tag }, 'ping', p)).toMatchObject({ matched: 1, changed: 1 });
              expect(await engine.send({ id }, 'stop')).toMatchObject({ matched: 1, changed: 1 });
              expected.set(id, [[0], [1], [2]]);
            }
          }
        }),
      );
      for (const [id, want] of expected) {
        const done = await engine.waitForState(id, 'COMPLETED', 30_000);
        if (want !== undefined) expect({ id, result: done.result }).toEqual({ id, result: want });
        const history: HistoryEntry[] = await engine.history(id);
        const seen = new Map<string, number>();
        for (const e of history) {
          const key =
            e.type === 'TaskStarted'
              ? `TaskStarted ${e.data.seq} attempt ${e.data.attempt}`
              : e.type === 'TaskCompleted' || e.type.startsWith('Child')
                ? `${e.type} ${e.data.seq}`
                : /^(TaskAttemptFailed|TaskResultIgnored|DecisionTimedOut|DecisionFailed)$/.test(e.type)
                  ? `${e.type} ${JSON.stringify(e.data)}`
                  : null;
          if (key) seen.set(key, (seen.get(key) ?? 0) + 1);
        }
        const wrong = [...seen].filter(([key, n]) => n > 1 || !/^(TaskStarted|TaskCompleted|Child)/.test(key));
        expect({ id, wrong, history: wrong.length ? describeHistory(history) : '' }).toEqual({ id, wrong: [], history: '' });
      }
    } finally {
      balancer.closeAllConnections();
      balancer.close();
    }
  }, 120_000);
});
