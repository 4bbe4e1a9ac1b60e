/**
 * A poll whose answer is lost after the service claimed work for it (the network resets the
 * connection as the answer comes back). The SDK client sends a poll again on a new connection
 * (polls are resendable); the claims of the first send must be handed to the second, not left to
 * lapse: a lapsed attempt counts as a failed one, and a task allowed one attempt then fails
 * without ever having run. The SDK gives each poll an id (`pollId`, the same on its resend), the
 * claim events carry it, and a poll that comes again answers the claims made for it
 * (DECISIONS.md "A repeated poll is answered with its claims").
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, expectData, expectError, issueTokens, post, startServices, unique } from '../api/api-helpers.js';
import type { ClaimedItem } from '../api/security-helpers.js';
import { answerDroppingProxy } from '../support/answer-dropping-proxy.js';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { freshLogFile, readLog } from './engine-helpers.js';
import { killAllWorkers, startWorker } from '../support/worker.js';

const LEASE_MS = 2_000;
const services = startServices({ main: { env: { LEASE_MS: String(LEASE_MS) } } });
afterAll(async () => {
  await killAllWorkers();
  await services.stopAll();
});

const scope = { appId: 'demo', environment: 'lost-polls' };
const POLL = `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref workflowId taskId name decisionId attemptId attempt } }`;

interface Item extends ClaimedItem {
  attempt: number | null;
}

let service: Service;
let admin: Client;
let workerToken: string;

beforeAll(async () => {
  service = await services.get('main');
  admin = new Client(service, scope.appId, scope.environment);
  [workerToken] = await issueTokens(service, [{ apps: ['demo'], role: 'worker' }]);
});

/** How many times the fixture worker logged `task` in `phase`. */
const logged = (log: string, task: string, phase: string) => readLog(log).filter((e) => e.task === task && e.phase === phase).length;

/**
 * A real SDK worker behind a proxy that drops the answers of the first `drops` polls that claim a
 * task (`longHeartbeat`, allowed one attempt: a lapsed lease fails it for good), after a first task
 * has put its next task poll on a kept-alive connection (the client sends a request again only
 * when one of those is reset). What became of the task, and how often it ran.
 */
async function oneAttemptTaskWithPollAnswersCut(drops: number) {
  const proxy = await answerDroppingProxy(service);
  const log = freshLogFile();
  try {
    const worker = await startWorker({ url: proxy.url, token: service.token, environment: scope.environment, env: { FIXTURE_LOG: log } });
    const warm = await admin.dispatchTask('echo', JSON.stringify(['warm']));
    await waitFor(async () => ((await admin.task(warm))?.state === 'COMPLETED' ? true : null), { timeoutMs: 15_000, description: 'the first task completed' });
    proxy.arm((request, answer) => request.includes('pollWork') && answer.includes('"kind":"TASK"'), drops);
    const id = await admin.dispatchTask('longHeartbeat', JSON.stringify([10]));
    const task = await waitFor(
      async () => {
        const t = await admin.task(id);
        return t && (t.state === 'COMPLETED' || t.state === 'FAILED') ? t : null;
      },
      { timeoutMs: 15_000 + 3 * LEASE_MS, description: `task ${id} ended` },
    );
    await worker.stop();
    return { cuts: proxy.cuts(), state: task.state, attempts: task.attempts, ran: logged(log, 'longHeartbeat', 'start') };
  } finally {
    await proxy.close();
  }
}

describe('a real SDK worker behind a proxy that drops the answer of the poll that claimed a task allowed one attempt', () => {
  it('gets the attempt again with the resent poll: the task runs once and completes, rather than failing unrun when the lease lapses', async () => {
    expect(await oneAttemptTaskWithPollAnswersCut(1)).toEqual({ cuts: 1, state: 'COMPLETED', attempts: 1, ran: 1 });
  });
});

describe('a real SDK worker behind a proxy that drops the answers of both the poll that claimed a task allowed one attempt and its resend', () => {
  it('polls again under the same id, marked as sent again, and gets the attempt: the task runs once and completes', async () => {
    // The client's resend is answered with the same attempt: that answer is dropped too.
    expect(await oneAttemptTaskWithPollAnswersCut(2)).toEqual({ cuts: 2, state: 'COMPLETED', attempts: 1, ran: 1 });
  });
});

describe('a real SDK worker behind a proxy that drops the answer of the poll that claimed a decision', () => {
  it('gets the decision again with the resent poll: no decision waits for its lease to time out', async () => {
    const proxy = await answerDroppingProxy(service);
    try {
      const worker = await startWorker({ url: proxy.url, token: service.token, environment: scope.environment });
      const warm = await admin.dispatchWorkflow('Noop');
      await waitFor(async () => ((await admin.state(warm)) === 'COMPLETED' ? true : null), { timeoutMs: 15_000, description: 'the first workflow completed' });
      proxy.arm((request, answer) => request.includes('pollWork') && answer.includes('"kind":"DECISION"'));
      const id = await admin.dispatchWorkflow('Sequential', { input: JSON.stringify(['x']) });
      await waitFor(async () => ((await admin.state(id)) === 'COMPLETED' ? true : null), { timeoutMs: 30_000, description: `workflow ${id} completed` });
      const history = await admin.history(id);
      const count = (type: string) => history.filter((e) => e.type === type).length;
      expect({ cuts: proxy.cuts(), timedOut: count('DecisionTimedOut'), tasksStarted: count('TaskStarted'), attemptsFailed: count('TaskAttemptFailed') }).toEqual({
        cuts: 1,
        timedOut: 0,
        tasksStarted: 3,
        attemptsFailed: 0,
      });
      await worker.stop();
    } finally {
      await proxy.close();
    }
  });
});

describe('two instances on one store: a poll whose answer from A is lost, resent to B (a balancer)', () => {
  it('B answers the claims A made for that poll id (the task attempt and the decision), and claims nothing more for it', async () => {
    const storeUrl = freshStoreUrl();
    const a = await startService({ storeUrl, env: { LEASE_MS: String(LEASE_MS) } });
    const b = await startService({ storeUrl, env: { LEASE_MS: String(LEASE_MS) } });
    try {
      const [token] = await issueTokens(a, [{ apps: ['demo'], role: 'worker' }]);
      const api = new Client(a, scope.appId, scope.environment);
      const name = unique('LostPoll');
      const taskName = unique('LostPollTask');
      const workerId = unique('chaos-worker');
      const tasks = [{ name: taskName, retry: { maxAttempts: 1, initialDelayMs: 100, backoffFactor: 1, maxDelayMs: 100 } }];
      const taskId = expectData(await api.dispatchTaskRaw({ name: taskName, input: '[]' })).dispatchTask.id as string;
      const workflowId = await api.dispatchWorkflow(name);
      // Both claimable (as seen from A) before the poll goes out.
      await waitFor(async () => ((await api.task(taskId))?.state === 'PENDING' && (await api.history(workflowId)).length > 0 ? true : null), { timeoutMs: 10_000, description: 'the work dispatched' });
      const pollId = unique('poll');
      const input = { ...scope, workerId, workflows: [name], tasks: [{ name: taskName, retry: tasks[0].retry }], maxItems: 10, waitMs: 5_000, pollId };
      const body = JSON.stringify({ query: POLL, variables: { input } });
      // The first send, on A: what it claims is the answer the network drops.
      const lost = await waitFor(
        async () => {
          const items = expectData(await post(a, body, token)).pollWork as Item[];
          return items.length > 0 ? items : null;
        },
        { timeoutMs: 10_000, description: 'the lost poll claimed' },
      );
      // It may have claimed one or both; a poll sent again is answered with exactly those.
      const resent = expectData(await post(b, body, token, { 'x-baton-resent': '1' })).pollWork as Item[];
      const key = (i: Item) => `${i.kind} ${i.ref} ${i.decisionId ?? i.attemptId}`;
      expect(resent.map(key).sort()).toEqual(lost.map(key).sort());
      // The same poll again on A, without the header (it has projected its own claims): the same claims.
      const again = expectData(await post(a, body, token)).pollWork as Item[];
      expect(again.map(key).sort()).toEqual(lost.map(key).sort());
      const history = (await api.history(workflowId)).map((e) => e.type);
      const attempts = (await api.task(taskId))?.attempts;
      expect({ decisionsStarted: history.filter((t) => t === 'DecisionStarted').length, taskAttempts: attempts }).toEqual({
        decisionsStarted: lost.some((i) => i.kind === 'DECISION') ? 1 : 0,
        taskAttempts: lost.some((i) => i.kind === 'TASK') ? 1 : 0,
      });
    } finally {
      await b.stop();
      await a.stop();
    }
  });
});

describe('a poll whose answer is lost, resent to the instance as it starts draining (SIGTERM, SHUTDOWN_DELAY_MS)', () => {
  it('is answered at once with the claim its first send made, though the instance claims nothing new', async () => {
    const d = await startService({ env: { LEASE_MS: String(LEASE_MS), SHUTDOWN_DELAY_MS: '5000' } });
    try {
      const [token] = await issueTokens(d, [{ apps: ['demo'], role: 'worker' }]);
      const api = new Client(d, scope.appId, scope.environment);
      const taskName = unique('DrainPoll');
      const taskId = expectData(await api.dispatchTaskRaw({ name: taskName, input: '[]' })).dispatchTask.id as string;
      const input = { ...scope, workerId: unique('chaos-worker'), workflows: [], tasks: [{ name: taskName }], maxItems: 1, waitMs: 5_000, pollId: unique('poll') };
      const body = JSON.stringify({ query: POLL, variables: { input } });
      const lost = expectData(await post(d, body, token)).pollWork as Item[];
      expect(lost.map((i) => i.taskId)).toEqual([taskId]);
      d.process.kill('SIGTERM');
      await waitFor(async () => ((await fetch(`${d.url}/health/ready`)).status === 503 ? true : null), { timeoutMs: 3_000, description: 'the instance draining' });
      const resent = expectData(await post(d, JSON.stringify({ query: POLL, variables: { input: { ...input, waitMs: 0 } } }), token, { 'x-baton-resent': '1' })).pollWork as Item[];
      expect(resent.map((i) => i.attemptId)).toEqual([lost[0].attemptId]);
    } finally {
      await d.stop();
    }
  });
});

describe('pollId', () => {
  it('is refused when empty, longer than 64 characters or with characters other than letters, digits, "-" and "_", naming pollId', async () => {
    const poll = (pollId: string) =>
      post(service, JSON.stringify({ query: POLL, variables: { input: { ...scope, workerId: 'poll-id-test', workflows: [], tasks: [], waitMs: 0, pollId } } }), workerToken);
    for (const pollId of ['', 'p'.repeat(65), 'a b', 'a\u0000', 'é']) expectError(await poll(pollId), 'BAD_USER_INPUT', 'pollId');
    expect(expectData(await poll('p'.repeat(64))).pollWork).toEqual([]);
    expect(expectData(await poll('0192f0c4-7a1e-7c3b-9d2e-5f6a7b8c9d0e')).pollWork).toEqual([]);
  });
});
