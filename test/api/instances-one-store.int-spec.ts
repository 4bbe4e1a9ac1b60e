/**
 * Two Baton processes on one store, as behind a load balancer: one SQLite file (read models
 * shared), and the EventStoreDB adapter on one FAKE EventStoreDB server process (not
 * EventStoreDB), each instance with read models of its own. A write acknowledged by one instance is seen, and can be acted on, by the next
 * request on the other; concurrent work on one workflow through both is normal.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, request } from 'node:http';
import { Service, createTokenViaCli } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { FixtureWorker, killAllWorkers, startWorker } from '../support/worker.js';
import { Engine, HistoryEntry, describeHistory } from '../engine/engine-helpers.js';
import { Client, expectData, revokeTokenViaCli, tokenIdOf, unique } from './api-helpers.js';
import { ESDB_FAKE_OWN_READ_MODELS, InstancePair, SQLITE_SHARED_READ_MODELS } from '../support/instance-pairs.js';
import { Schedules, data as scheduleData } from '../schedules/schedule-helpers.js';

describe.each([SQLITE_SHARED_READ_MODELS, ESDB_FAKE_OWN_READ_MODELS].map((t) => [t.title, t] as const))('two instances on one store (%s)', (_title, topology) => {
  let pair: InstancePair;
  let a: Service;
  let b: Service;
  let apiA: Client;
  let apiB: Client;
  const workers: FixtureWorker[] = [];

  beforeAll(async () => {
    pair = await topology.start();
    ({ a, b } = pair);
    apiA = new Client(a, 'demo', 'dev');
    apiB = new Client({ ...b, token: a.token } as Service, 'demo', 'dev');
  }, 60_000);
  afterAll(async () => {
    await killAllWorkers();
    await pair?.stop();
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
