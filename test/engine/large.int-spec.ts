/**
 * Large workflows at constant cost (issue 11): many tasks and children in one workflow, fairness
 * between task names, repeated reports, unknown event types, sticky decisions and their misses,
 * continue-as-new. Real service, real worker processes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { type Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { APP, Engine, ofType, unique } from './engine-helpers.js';

let service: Service;

beforeAll(async () => {
  service = await startService({ env: { LEASE_MS: '5000' } });
});

afterAll(async () => {
  await killAllWorkers();
  await service?.stop();
});

const sum = (n: number) => (n * (n - 1)) / 2;

describe('large workflows', () => {
  it('runs 1,000 parallel tasks and 200 child workflows in one workflow each', async () => {
    const env = unique('large');
    const engine = new Engine(service, env);
    await startWorker({ url: service.url, token: service.token, environment: env, concurrency: 50 });
    const tasks = await engine.dispatch('ManyParallel', [1000]);
    const children = await engine.dispatch('ManyChildren', [200]);
    expect((await engine.waitForState(tasks, 'COMPLETED', 120_000)).result).toBe(sum(1000));
    expect((await engine.waitForState(children, 'COMPLETED', 120_000)).result).toBe(sum(200));
    const history = await engine.history(tasks);
    expect(ofType(history, 'TaskCompleted')).toHaveLength(1000);
    expect(ofType(history, 'TaskResultIgnored')).toHaveLength(0);
    expect(ofType(await engine.history(children), 'ChildWorkflowCompleted')).toHaveLength(200);
  }, 180_000);

  it('shares a busy worker fairly between two task names: neither starves', async () => {
    const env = unique('fair');
    const engine = new Engine(service, env);
    await startWorker({ url: service.url, token: service.token, environment: env, concurrency: 4 });
    const busy = await engine.dispatch('ManyParallel', [600, 'tick']);
    await engine.waitForEventType(busy, 'TaskStarted');
    const small = await engine.dispatch('ManyParallel', [10, 'tock']);
    expect((await engine.waitForState(small, 'COMPLETED', 60_000)).result).toBe(sum(10));
    // The small workflow finished while the big one still had most of its backlog.
    const done = ofType(await engine.history(busy), 'TaskCompleted').length;
    expect(done).toBeLessThan(600);
    expect((await engine.waitForState(busy, 'COMPLETED', 120_000)).result).toBe(sum(600));
  }, 180_000);

  it('continues as new: each run starts with an empty history and numbers its calls after the last run', async () => {
    const env = unique('can');
    const engine = new Engine(service, env);
    await startWorker({ url: service.url, token: service.token, environment: env });
    const id = await engine.dispatch('Looper', [0, 5]);
    const done = await engine.waitForState(id, 'COMPLETED', 60_000);
    expect(done.result.round).toBe(4);
    const history = await engine.history(id);
    const runs = ofType(history, 'WorkflowContinuedAsNew');
    expect(runs.map((e) => e.data.run)).toEqual([2, 3, 4, 5]);
    expect(runs.map((e) => e.data.input)).toEqual([[1, 5], [2, 5], [3, 5], [4, 5]]);
    const seqs = ofType(history, 'TaskScheduled').map((e) => e.data.seq);
    expect(new Set(seqs).size).toBe(5);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
  }, 90_000);
});

describe('sticky decisions', () => {
  it('falls back to a full replay when another worker made the previous decision, or the run was evicted', async () => {
    const env = unique('sticky');
    const engine = new Engine(service, env);
    const first = await startWorker({ url: service.url, token: service.token, environment: env });
    const id = await engine.dispatch('ManySequential', [40]);
    await engine.waitForHistory(id, (events) => ofType(events, 'TaskCompleted').length >= 10, 'ten tasks done');
    await first.kill();
    // This worker holds nothing of the run, and keeps nothing between decisions: every decision is a miss.
    const second = await startWorker({ url: service.url, token: service.token, environment: env, env: { BATON_MAX_CACHED_WORKFLOWS: '0' } });
    expect((await engine.waitForState(id, 'COMPLETED', 60_000)).result).toBe(sum(40));
    const deciders = new Set(ofType(await engine.history(id), 'DecisionStarted').map((e) => e.data.workerId));
    expect(deciders).toEqual(new Set([first.workerId, second.workerId]));
    expect(ofType(await engine.history(id), 'DecisionFailed')).toHaveLength(0);
  }, 90_000);
});

describe('hostile histories and repeated reports', () => {
  const poll = (env: string, workerId: string, workflows: string[], tasks: string[]) =>
    service.gql(
      `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref decisionId attemptId history historyFrom runFrom } }`,
      { input: { appId: APP, environment: env, workerId, workflows, tasks: tasks.map((name) => ({ name })), maxItems: 1, waitMs: 5000 } },
    );
  const report = (env: string, workerId: string, input: Record<string, unknown>) =>
    service.gql(`mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { ref code message } } }`, {
      input: { appId: APP, environment: env, workerId, ...input },
    });

  it('acknowledges a decision report and a task report sent twice, and records each once', async () => {
    const env = unique('twice');
    const engine = new Engine(service, env);
    const id = await engine.dispatch('Hand', ['x']);
    const claimed = await poll(env, 'w-1', ['Hand'], []);
    const decision = claimed.body.data!.pollWork[0];
    expect(decision.kind).toBe('DECISION');
    expect(decision.historyFrom).toBe(decision.runFrom);
    const commands = JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: 'tick', args: [1] }]);
    for (let i = 0; i < 2; i++) {
      const answer = await report(env, 'w-1', { decisions: [{ ref: decision.ref, decisionId: decision.decisionId, commands }] });
      expect(answer.body.data!.reportWork).toEqual({ accepted: 1, rejected: [] });
    }
    const task = (await poll(env, 'w-1', [], ['tick'])).body.data!.pollWork[0];
    for (let i = 0; i < 2; i++) {
      const answer = await report(env, 'w-1', { tasks: [{ ref: task.ref, attemptId: task.attemptId, result: '1' }] });
      expect(answer.body.data!.reportWork).toEqual({ accepted: 1, rejected: [] });
    }
    // The next decision, claimed by the same worker: a run this small goes whole, so a worker that
    // no longer holds it (its cache is bounded) replays it without asking for it; one that holds it
    // skips what it has. (Longer runs carry only what followed the previous decision: the sticky test.)
    const next = (await poll(env, 'w-1', ['Hand'], [])).body.data!.pollWork[0];
    const whole = JSON.parse(next.history) as Array<{ revision: number; type: string }>;
    expect(next.historyFrom).toBe(next.runFrom);
    expect(whole.map((e) => e.type)).toEqual(['WorkflowDispatched', 'DecisionStarted', 'DecisionCompleted', 'TaskScheduled', 'TaskStarted', 'TaskCompleted', 'DecisionStarted']);
    const history = await engine.history(id);
    expect(ofType(history, 'DecisionCompleted')).toHaveLength(1);
    expect(ofType(history, 'TaskCompleted')).toHaveLength(1);
    expect(ofType(history, 'TaskResultIgnored')).toHaveLength(0);
  });

  it('eager dispatch: a report claims, in the same append, the tasks its decision scheduled and the decision its results made pending', async () => {
    const env = unique('eager');
    const engine = new Engine(service, env);
    const id = await engine.dispatch('Hand', ['x']);
    const decision = (await poll(env, 'w-1', ['Hand'], [])).body.data!.pollWork[0];
    const claim = { workflows: ['Hand'], tasks: [{ name: 'tick' }], maxItems: 10 };
    const commands = JSON.stringify([
      { type: 'ScheduleTask', seq: 0, name: 'tick', args: [1] },
      { type: 'ScheduleTask', seq: 1, name: 'tick', args: [2] },
      { type: 'ScheduleTask', seq: 2, name: 'tock', args: [3] },
    ]);
    const reported = (
      await service.gql(
        `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { ref } items { kind ref attemptId input } } }`,
        { input: { appId: APP, environment: env, workerId: 'w-1', decisions: [{ ref: decision.ref, decisionId: decision.decisionId, commands }], claim } },
      )
    ).body.data!.reportWork;
    // The two tick tasks (served), not the tock one.
    expect(reported.items.map((i: { kind: string; input: string }) => [i.kind, i.input])).toEqual([
      ['TASK', '[1]'],
      ['TASK', '[2]'],
    ]);
    let history = await engine.history(id);
    const completed = history.find((e) => e.type === 'DecisionCompleted')!;
    const started = ofType(history, 'TaskStarted');
    expect(started).toHaveLength(2);
    // Recorded with the decision, in the same append (same time, consecutive revisions).
    expect(started.every((e) => e.recordedAt === completed.recordedAt)).toBe(true);
    const results = reported.items.map((i: { ref: string; attemptId: string }, n: number) => ({ ref: i.ref, attemptId: i.attemptId, result: String(n) }));
    const next = (
      await service.gql(
        `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted items { kind ref decisionId history historyFrom } } }`,
        { input: { appId: APP, environment: env, workerId: 'w-1', tasks: results, claim } },
      )
    ).body.data!.reportWork;
    // Both results, then one decision that sees both.
    expect(next.items).toHaveLength(1);
    expect(next.items[0].kind).toBe('DECISION');
    const types = (JSON.parse(next.items[0].history) as Array<{ type: string }>).map((e) => e.type);
    expect(types.filter((t) => t === 'TaskCompleted')).toHaveLength(2);
    history = await engine.history(id);
    expect(ofType(history, 'DecisionStarted')).toHaveLength(2);
  });

  it('eager start: a dispatch hands its first decision to a parked poll that serves it, in the same append', async () => {
    const env = unique('eagerstart');
    const engine = new Engine(service, env);
    const parked = service.gql(
      `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref decisionId history historyFrom } }`,
      { input: { appId: APP, environment: env, workerId: 'w-eager', workflows: ['Hand'], tasks: [], maxItems: 1, waitMs: 15_000 } },
    );
    // The poll is parked once the instance counts it (nothing is claimable in this environment).
    await waitFor(
      async () => {
        const res = await service.gql(`query($appId: String!, $environment: String!) { workers(appId: $appId, environment: $environment) { workers { workerId pollsInFlight } } }`, { appId: APP, environment: env });
        return res.body.data?.workers.workers.some((w: { workerId: string; pollsInFlight: number }) => w.workerId === 'w-eager' && w.pollsInFlight > 0);
      },
      { timeoutMs: 10_000, description: 'the poll to park' },
    );
    const id = await engine.dispatch('Hand', ['x']);
    const items = (await parked).body.data!.pollWork;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ kind: 'DECISION', ref: `wf:${id}` });
    expect((JSON.parse(items[0].history) as Array<{ type: string }>).map((e) => e.type)).toEqual(['WorkflowDispatched', 'DecisionStarted']);
    const history = await engine.history(id);
    expect(history.map((e) => e.type)).toEqual(['WorkflowDispatched', 'DecisionStarted']);
    // One append, made by the dispatch's request: recorded together, under its correlation id.
    expect(history[1].recordedAt).toBe(history[0].recordedAt);
    expect(history[1].metadata.correlationId).toBe(history[0].metadata.correlationId);
    // A workflow the parked poll does not serve is not handed to it.
    const other = service.gql(
      `mutation($input: PollWorkInput!) { pollWork(input: $input) { ref } }`,
      { input: { appId: APP, environment: env, workerId: 'w-other', workflows: ['Elsewhere'], tasks: [], maxItems: 1, waitMs: 1_000 } },
    );
    const second = await engine.dispatch('Hand', ['y']);
    expect((await other).body.data!.pollWork).toEqual([]);
    expect((await engine.history(second)).map((e) => e.type)).toEqual(['WorkflowDispatched']);
  });

  it('gives another app\'s worker the same answer as for work that does not exist, and records nothing', async () => {
    const env = unique('scope');
    const engine = new Engine(service, env);
    const id = await engine.dispatch('Hand', ['x']);
    const decision = (await poll(env, 'w-1', ['Hand'], [])).body.data!.pollWork[0];
    const before = (await engine.history(id)).length;
    // Same token (it may act on app demo), but the report names another environment.
    const other = await report(`${env}-other`, 'w-2', { decisions: [{ ref: decision.ref, decisionId: decision.decisionId, commands: '[]' }] });
    const missing = await report(`${env}-other`, 'w-2', { decisions: [{ ref: 'wf:00000000-0000-7000-8000-000000000000', decisionId: decision.decisionId, commands: '[]' }] });
    expect(other.body.data!.reportWork.rejected[0].code).toBe('NOT_FOUND');
    expect(other.body.data!.reportWork.rejected[0].message.replace(decision.ref.slice(3), 'ID')).toBe(
      missing.body.data!.reportWork.rejected[0].message.replace('00000000-0000-7000-8000-000000000000', 'ID'),
    );
    expect(await engine.history(id)).toHaveLength(before);
  });

  it('skips an event type it does not know, in a workflow stream, and goes on', async () => {
    const env = unique('unknown');
    const engine = new Engine(service, env);
    await startWorker({ url: service.url, token: service.token, environment: env });
    const id = await engine.dispatch('Waiter', ['go', 60_000]);
    await engine.waitForEventType(id, 'TimerStarted');
    const store = new SqliteEventStore(service.storeUrl.slice('sqlite:'.length));
    try {
      await store.append(`workflow-${id}`, [{ id: crypto.randomUUID(), type: 'SomethingFromTheFuture', data: { x: 1 }, metadata: { appId: APP, environment: env } }], 'any');
    } finally {
      await store.close();
    }
    await engine.waitForEventType(id, 'SomethingFromTheFuture');
    await engine.send({ id }, 'go', 42);
    expect((await engine.waitForState(id, 'COMPLETED', 30_000)).result).toEqual(['go', 42]);
    await engine.barrier();
  }, 60_000);
});
