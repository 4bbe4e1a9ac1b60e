/**
 * Review (chaos): exactly-once claims when the network drops an answer after the request was
 * delivered. The SDK's worker resends a report whose answer it did not get (same outcomes, same
 * eager `claim`, `src/sdk/worker.ts` `send`): the service must recognise the outcomes (it does,
 * DECISIONS.md "A repeated report is acknowledged") and must not strand the work the lost answer
 * handed over. Driven over raw GraphQL: a report whose answer is lost is, for the service, the
 * same report arriving twice.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, HistoryRow, expectData, gql, issueTokens, startServices, unique } from '../api/api-helpers.js';
import { Service, startService } from '../support/service.js';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '../support/wait-for.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { answerDroppingProxy } from '../support/answer-dropping-proxy.js';

const LEASE_MS = 2_000;
const services = startServices({ main: { env: { LEASE_MS: String(LEASE_MS) } } });
afterAll(async () => {
  await killAllWorkers();
  await services.stopAll();
});

const scope = { appId: 'demo', environment: 'lost-answers' };
const ITEMS = 'items { kind ref workflowId name decisionId attemptId }';
const REPORT = `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { ref code message } ${ITEMS} } }`;
const POLL = `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref workflowId name decisionId attemptId } }`;

interface Item {
  kind: 'DECISION' | 'TASK';
  ref: string;
  workflowId: string;
  name: string;
  decisionId: string | null;
  attemptId: string | null;
}

let service: Service;
let admin: Client;
let workerToken: string;

beforeAll(async () => {
  service = await services.get('main');
  admin = new Client(service, scope.appId, scope.environment);
  [workerToken] = await issueTokens(service, [{ apps: ['demo'], role: 'worker' }]);
});

const types = (history: HistoryRow[]) => history.map((e) => e.type);

describe('a decision report whose answer (with the eagerly claimed task) is lost, sent again', () => {
  it('hands the claimed attempt to the worker again instead of leaving it to lapse: the task, allowed one attempt, is not failed unrun', async () => {
    const name = unique('LostAnswer');
    const taskName = unique('LostAnswerTask');
    const workerId = unique('chaos-worker');
    // One attempt: a lapsed lease fails the task for good.
    const tasks = [{ name: taskName, retry: { maxAttempts: 1, initialDelayMs: 100, backoffFactor: 1, maxDelayMs: 100 } }];
    const id = await admin.dispatchWorkflow(name);
    const decision = await waitFor(
      async () => {
        const input = { ...scope, workerId, workflows: [name], tasks, waitMs: 1_000 };
        return (expectData(await gql(service, POLL, { input }, workerToken)).pollWork as Item[]).find((i) => i.kind === 'DECISION' && i.workflowId === id);
      },
      { timeoutMs: 15_000, description: 'the first decision claimed' },
    );
    // Exactly what the SDK sends, and sends again when the answer does not come back.
    const input = {
      ...scope,
      workerId,
      decisions: [{ ref: decision.ref, decisionId: decision.decisionId, commands: JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: taskName, args: [] }]) }],
      claim: { workflows: [name], tasks, maxItems: 10, maxDecisions: 10, maxTasks: 10 },
    };
    const lost = expectData(await gql(service, REPORT, { input }, workerToken)).reportWork as { accepted: number; items: Item[] };
    expect(lost.accepted).toBe(1);
    const claimed = lost.items.filter((i) => i.kind === 'TASK');
    expect(claimed).toHaveLength(1); // the answer the network drops: the worker never sees this attempt

    const again = expectData(await gql(service, REPORT, { input }, workerToken)).reportWork as { accepted: number; rejected: unknown[]; items: Item[] };
    expect(again.accepted).toBe(1);
    expect(again.rejected).toEqual([]);

    // The worker runs what it is handed now; if nothing, the attempt waits for its lease to lapse.
    const handed = again.items.filter((i) => i.kind === 'TASK' && i.ref === claimed[0].ref);
    if (handed.length === 1) {
      const done = { ...scope, workerId, tasks: [{ ref: handed[0].ref, attemptId: handed[0].attemptId, result: '"ran"' }] };
      expect((expectData(await gql(service, REPORT, { input: done }, workerToken)).reportWork as { accepted: number }).accepted).toBe(1);
    }
    // Counting outcomes: the task ends once, either completed (it ran) or failed with its lease.
    const ended = await waitFor(
      async () => {
        const history = types(await admin.history(id));
        return history.includes('TaskCompleted') || history.includes('TaskFailed') ? history : null;
      },
      { timeoutMs: 15_000 + 3 * LEASE_MS, description: 'the task ended' },
    );
    expect({ handedAgain: handed.length, taskStarted: ended.filter((t) => t === 'TaskStarted').length, taskFailed: ended.filter((t) => t === 'TaskFailed').length, taskCompleted: ended.filter((t) => t === 'TaskCompleted').length }).toEqual({
      handedAgain: 1,
      taskStarted: 1,
      taskFailed: 0,
      taskCompleted: 1,
    });
  });
});

describe('a task report whose answer (with the eagerly claimed decision) is lost, sent again', () => {
  it('hands the decision the lost answer carried to the worker again instead of leaving it to time out', async () => {
    const name = unique('LostDecision');
    const taskName = unique('LostDecisionTask');
    const workerId = unique('chaos-worker');
    const tasks = [{ name: taskName }];
    const id = await admin.dispatchWorkflow(name);
    const poll = async (kind: Item['kind']) =>
      waitFor(
        async () => {
          const input = { ...scope, workerId, workflows: [name], tasks, waitMs: 1_000 };
          return (expectData(await gql(service, POLL, { input }, workerToken)).pollWork as Item[]).find((i) => i.kind === kind && i.workflowId === id);
        },
        { timeoutMs: 15_000, description: `a ${kind} of ${id} claimed` },
      );
    const decision = await poll('DECISION');
    const scheduled = { ...scope, workerId, decisions: [{ ref: decision.ref, decisionId: decision.decisionId, commands: JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: taskName, args: [] }]) }] };
    expect((expectData(await gql(service, REPORT, { input: scheduled }, workerToken)).reportWork as { accepted: number }).accepted).toBe(1);
    const task = await poll('TASK');
    // The result, with an eager claim of the decision it makes pending: the answer the network drops.
    const input = { ...scope, workerId, tasks: [{ ref: task.ref, attemptId: task.attemptId, result: '"ran"' }], claim: { workflows: [name], tasks, maxItems: 10, maxDecisions: 10, maxTasks: 10 } };
    const lost = expectData(await gql(service, REPORT, { input }, workerToken)).reportWork as { items: Item[] };
    const claimed = lost.items.filter((i) => i.kind === 'DECISION');
    expect(claimed).toHaveLength(1);
    const again = expectData(await gql(service, REPORT, { input }, workerToken)).reportWork as { accepted: number; items: Item[] };
    expect(again.accepted).toBe(1);
    const handed = again.items.filter((i) => i.kind === 'DECISION');
    if (handed.length === 1) {
      const done = { ...scope, workerId, decisions: [{ ref: handed[0].ref, decisionId: handed[0].decisionId, commands: JSON.stringify([{ type: 'CompleteWorkflow', result: 1 }]) }] };
      expect((expectData(await gql(service, REPORT, { input: done }, workerToken)).reportWork as { accepted: number }).accepted).toBe(1);
    }
    await waitFor(
      async () => {
        const history = types(await admin.history(id));
        return history.includes('DecisionTimedOut') || history.includes('WorkflowCompleted') ? history : null;
      },
      { timeoutMs: 15_000 + 3 * LEASE_MS, description: 'the decision reported or timed out' },
    );
    const history = types(await admin.history(id));
    expect({ handedAgain: handed.map((i) => i.decisionId), timedOut: history.filter((t) => t === 'DecisionTimedOut').length, completed: history.includes('WorkflowCompleted') }).toEqual({
      handedAgain: [claimed[0].decisionId],
      timedOut: 0,
      completed: true,
    });
  });
});

describe('the SDK client when the network drops the answer of a mutation the service has already applied', () => {
  it('does not send the mutation again on its own: one dispatchWorkflow call, one workflow (the request was delivered; a reset on a kept-alive connection does not prove otherwise)', async () => {
    const { Client: SdkClient } = await import('../../src/sdk/index.js');
    // Cuts the connection as the next answer starts to come back (after the service has read and
    // applied the request).
    const proxy = await answerDroppingProxy(service);
    try {
      const url = proxy.url;
      const baton = new SdkClient({ url, token: service.token });
      const name = unique('DroppedAnswer');
      // A first request: the client's connection is now kept alive and reused by the next one.
      await baton.request('{ __typename }');
      proxy.arm(() => true);
      const outcome = await Promise.resolve(baton.dispatchWorkflow({ ...scope, name })).then(
        (id) => ({ ok: true, id }),
        (error: Error) => ({ ok: false, error: error.message }),
      );
      expect(proxy.cuts()).toBe(1);
      const listed = await admin.workflows({ name });
      // Either the call fails (the caller decides whether to retry, with an idempotency key)
      // or it answers the one workflow the service created: never a second, unasked for.
      expect({ workflows: listed.totalCount, answeredOneOfThem: outcome.ok ? listed.nodes.some((n) => n.id === (outcome as { id: string }).id) : null }).toEqual({
        workflows: 1,
        answeredOneOfThem: outcome.ok ? true : null,
      });
    } finally {
      await proxy.close();
    }
  });
});

describe('a real SDK worker behind a proxy that drops the answer of its first task report', () => {
  it('runs every task of a sequential workflow once: the report is resent, recorded once, and the next task its answer carried is not left to lapse', async () => {
    const proxy = await answerDroppingProxy(service);
    try {
      const worker = await startWorker({ url: proxy.url, token: service.token, environment: scope.environment });
      // The first report that carries a task's result (and, eagerly, the next task's claim).
      proxy.arm((request) => request.includes('reportWork') && request.includes('"result"'));
      const id = await admin.dispatchWorkflow('Sequential', { input: JSON.stringify(['x']) });
      await waitFor(async () => ((await admin.state(id)) === 'COMPLETED' ? true : null), { timeoutMs: 30_000, description: `workflow ${id} completed` });
      const history = await admin.history(id);
      const count = (type: string) => history.filter((e) => e.type === type).length;
      expect({ cuts: proxy.cuts(), output: (await admin.workflow(id))?.output, started: count('TaskStarted'), completed: count('TaskCompleted'), attemptsFailed: count('TaskAttemptFailed'), ignored: count('TaskResultIgnored') }).toEqual({
        cuts: 1,
        output: JSON.stringify(['x', 3, 'x-3']),
        started: 3,
        completed: 3,
        attemptsFailed: 0,
        ignored: 0,
      });
      await worker.stop();
    } finally {
      await proxy.close();
    }
  });
});

describe('a real SDK worker behind a proxy that drops the answer of its first report of a parallel task', () => {
  it('gets the decision that answer carried again: no decision waits for its lease, every task runs once', async () => {
    const proxy = await answerDroppingProxy(service);
    try {
      const worker = await startWorker({ url: proxy.url, token: service.token, environment: scope.environment });
      proxy.arm((request) => request.includes('reportWork') && request.includes('"result"'));
      const id = await admin.dispatchWorkflow('Parallel', { input: JSON.stringify([3, 0]) });
      await waitFor(async () => ((await admin.state(id)) === 'COMPLETED' ? true : null), { timeoutMs: 30_000, description: `workflow ${id} completed` });
      const history = await admin.history(id);
      const count = (type: string) => history.filter((e) => e.type === type).length;
      expect({ cuts: proxy.cuts(), started: count('TaskStarted'), attemptsFailed: count('TaskAttemptFailed'), timedOut: count('DecisionTimedOut'), failedDecisions: count('DecisionFailed') }).toEqual({
        cuts: 1,
        started: 3,
        attemptsFailed: 0,
        timedOut: 0,
        failedDecisions: 0,
      });
      await worker.stop();
    } finally {
      await proxy.close();
    }
  });
});

/**
 * A worker runs `NapThenEcho` (a `nap` task of `napMs`) through a proxy; the service is killed
 * once the nap has started (or, with `downUntilNapEnds`, stays down until it has ended), stays down
 * for 1.5 leases, and restarts on the same store, the proxy now pointing at it. Answers the
 * workflow's history once it completed and how many naps started.
 */
async function napThroughOutage(napMs: number, downUntilNapEnds: boolean): Promise<{ history: HistoryRow[]; napStarts: number }> {
  const first = await startService({ env: { LEASE_MS: String(LEASE_MS) } });
  const proxy = await answerDroppingProxy(first);
  const log = join(mkdtempSync(join(tmpdir(), 'baton-chaos-')), 'fixtures.log');
  let second: Service | undefined;
  try {
    const api = new Client(first, scope.appId, scope.environment);
    await startWorker({ url: proxy.url, token: first.token, environment: scope.environment, env: { FIXTURE_LOG: log } });
    const naps = (phase: string) =>
      existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { task: string; phase: string }).filter((e) => e.task === 'nap' && e.phase === phase).length : 0;
    const id = await api.dispatchWorkflow('NapThenEcho', { input: JSON.stringify([napMs]) });
    await waitFor(() => (naps('start') > 0 ? true : null), { timeoutMs: 15_000, description: 'the nap started' });
    await first.kill();
    if (downUntilNapEnds) await waitFor(() => (naps('end') > 0 ? true : null), { timeoutMs: 15_000, description: 'the nap ended' });
    // Down for longer than a lease: the worker's heartbeats (or its report) fail meanwhile.
    const downSince = Date.now();
    await waitFor(() => (Date.now() > downSince + 1.5 * LEASE_MS ? true : null), { timeoutMs: 10_000, description: 'a lease-long outage' });
    second = await startService({ storeUrl: first.storeUrl, env: { LEASE_MS: String(LEASE_MS) } });
    proxy.retarget(second);
    const api2 = new Client({ ...second, token: first.token }, scope.appId, scope.environment);
    await waitFor(async () => ((await api2.state(id)) === 'COMPLETED' ? true : null), { timeoutMs: 30_000, description: `workflow ${id} completed` });
    return { history: await api2.history(id), napStarts: naps('start') };
  } finally {
    await killAllWorkers();
    await proxy.close();
    await second?.stop();
    await first.stop();
  }
}

const lapsedLeases = (history: HistoryRow[]) => history.filter((e) => e.type === 'TaskAttemptFailed' && JSON.parse(e.data).reason === 'lease_expired').length;

describe('the service down for longer than LEASE_MS while a worker keeps running a task', () => {
  it('does not expire, on restart, the lease the worker could not heartbeat while the service was down: the task runs once', async () => {
    const { history, napStarts } = await napThroughOutage(5 * LEASE_MS, false);
    expect({ napStarts, lapsed: lapsedLeases(history), ignored: history.filter((e) => e.type === 'TaskResultIgnored').length }).toEqual({ napStarts: 1, lapsed: 0, ignored: 0 });
  });
});

describe('a task that ends while the service is down for longer than LEASE_MS', () => {
  it('has its result reported once the service is back (its worker kept it, the lease lapsed only for want of a service): the task runs once', async () => {
    const { history, napStarts } = await napThroughOutage(LEASE_MS / 2, true);
    expect({ napStarts, lapsed: lapsedLeases(history) }).toEqual({ napStarts: 1, lapsed: 0 });
  });
});

describe('two instances on one store: a report whose answer from A is lost, resent to B (a balancer)', () => {
  it('is recorded once, and B hands again the task and the decision the lost answers carried', async () => {
    const storeUrl = (await import('../support/service.js')).freshStoreUrl();
    const a = await startService({ storeUrl, env: { LEASE_MS: String(LEASE_MS) } });
    const b = await startService({ storeUrl, env: { LEASE_MS: String(LEASE_MS) } });
    try {
      const [token] = await issueTokens(a, [{ apps: ['demo'], role: 'worker' }]);
      const api = new Client(a, scope.appId, scope.environment);
      const name = unique('TwoInstances');
      const taskName = unique('TwoInstancesTask');
      const workerId = unique('chaos-worker');
      const tasks = [{ name: taskName, retry: { maxAttempts: 1, initialDelayMs: 100, backoffFactor: 1, maxDelayMs: 100 } }];
      const claim = { workflows: [name], tasks, maxItems: 10, maxDecisions: 10, maxTasks: 10 };
      const report = async (to: Service, input: Record<string, unknown>) => expectData(await gql(to, REPORT, { input: { ...scope, workerId, ...input } }, token)).reportWork as { accepted: number; rejected: unknown[]; items: Item[] };
      const id = await api.dispatchWorkflow(name);
      const decision = await waitFor(
        async () => (expectData(await gql(a, POLL, { input: { ...scope, workerId, workflows: [name], tasks, waitMs: 1_000 } }, token)).pollWork as Item[]).find((i) => i.kind === 'DECISION' && i.workflowId === id),
        { timeoutMs: 15_000, description: 'the first decision claimed' },
      );
      const schedule = { decisions: [{ ref: decision.ref, decisionId: decision.decisionId, commands: JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: taskName, args: [] }]) }], claim };
      const lostTask = (await report(a, schedule)).items.filter((i) => i.kind === 'TASK');
      const taskAgain = (await report(b, schedule)).items.filter((i) => i.kind === 'TASK');
      const result = { tasks: [{ ref: taskAgain[0]?.ref ?? lostTask[0].ref, attemptId: lostTask[0].attemptId, result: '"ran"' }], claim };
      const lostDecision = (await report(a, result)).items.filter((i) => i.kind === 'DECISION');
      const decisionAgain = (await report(b, result)).items.filter((i) => i.kind === 'DECISION');
      const history = types(await api.history(id));
      expect({
        taskAgain: taskAgain.map((i) => i.attemptId),
        decisionAgain: decisionAgain.map((i) => i.decisionId),
        taskStarted: history.filter((t) => t === 'TaskStarted').length,
        taskCompleted: history.filter((t) => t === 'TaskCompleted').length,
        decisionsStarted: history.filter((t) => t === 'DecisionStarted').length,
      }).toEqual({ taskAgain: [lostTask[0].attemptId], decisionAgain: [lostDecision[0].decisionId], taskStarted: 1, taskCompleted: 1, decisionsStarted: 2 });
    } finally {
      await b.stop();
      await a.stop();
    }
  });
});
