/**
 * A report's answer that carries work its claim's `pollId`
 * filled the slot with (a task allowed one attempt, waiting while the worker was full) is lost
 * (the connection reset as the answer comes back). The SDK sends the report again under the same
 * id, marked as sent again, and must be handed the attempt again rather than leave it to lapse
 * (a lapsed attempt of a task allowed one fails it without its ever having run). A real service,
 * a real `baton worker` process (concurrency 1) behind answer-dropping-proxy.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, startServices } from '../api/api-helpers.js';
import { answerDroppingProxy } from '../support/answer-dropping-proxy.js';
import type { Service } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { freshLogFile, readLog } from './engine-helpers.js';
import { killAllWorkers, startWorker } from '../support/worker.js';

const LEASE_MS = 2_000;
const services = startServices({ main: { env: { LEASE_MS: String(LEASE_MS) } } });
afterAll(async () => {
  await killAllWorkers();
  await services.stopAll();
});

const scope = { appId: 'demo', environment: 'review-fill-lost-report' };
let service: Service;
let admin: Client;

beforeAll(async () => {
  service = await services.get('main');
  admin = new Client(service, scope.appId, scope.environment);
});

/** How many times the fixture worker logged `task` in `phase`. */
const logged = (log: string, task: string, phase: string) => readLog(log).filter((e) => e.task === task && e.phase === phase).length;

async function filledTaskWithReportAnswersCut(drops: number) {
  const proxy = await answerDroppingProxy(service);
  const log = freshLogFile();
  try {
    const worker = await startWorker({ url: proxy.url, token: service.token, environment: scope.environment, concurrency: 1, env: { FIXTURE_LOG: log } });
    const warm = await admin.dispatchTask('echo', JSON.stringify(['warm']));
    await waitFor(async () => ((await admin.task(warm))?.state === 'COMPLETED' ? true : null), { timeoutMs: 15_000, description: 'the first task completed' });
    // The worker's one task slot busy: what comes next waits in the service, for a report to fill the slot.
    const busy = await admin.dispatchTask('nap', JSON.stringify([1_000, 'busy']));
    await waitFor(async () => (logged(log, 'nap', 'start') > 0 ? true : null), { timeoutMs: 15_000, description: 'the nap running' });
    proxy.arm((request, answer) => request.includes('reportWork') && answer.includes('"kind":"TASK"'), drops);
    const id = await admin.dispatchTask('longHeartbeat', JSON.stringify([10]));
    const task = await waitFor(
      async () => {
        const t = await admin.task(id);
        return t && (t.state === 'COMPLETED' || t.state === 'FAILED') ? t : null;
      },
      { timeoutMs: 15_000 + 3 * LEASE_MS, description: `task ${id} ended` },
    );
    expect((await admin.task(busy))?.state).toBe('COMPLETED');
    await worker.stop();
    return { cuts: proxy.cuts(), state: task.state, attempts: task.attempts, ran: logged(log, 'longHeartbeat', 'start') };
  } finally {
    await proxy.close();
  }
}

describe('a real SDK worker whose report answer carrying the task that filled its free slot is lost', () => {
  it('gets the attempt again with the report sent again: the task runs once and completes', async () => {
    expect(await filledTaskWithReportAnswersCut(1)).toEqual({ cuts: 1, state: 'COMPLETED', attempts: 1, ran: 1 });
  }, 60_000);

  it('and when the resend is lost too, with its next retry under the same id', async () => {
    expect(await filledTaskWithReportAnswersCut(2)).toEqual({ cuts: 2, state: 'COMPLETED', attempts: 1, ran: 1 });
  }, 60_000);
});
