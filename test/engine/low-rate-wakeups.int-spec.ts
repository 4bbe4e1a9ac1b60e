/**
 * At a low rate (one workflow at a time), the entries of a workflow's steps are claimed in the append
 * that makes them claimable (eager start, the decision made with a task's report, the task
 * claimed with the decision that schedules it), so a parked poll is never woken for them: counted
 * through the service's own counters in a real run (the wake-one unit spec counts the index alone).
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Client, unique } from '../api/api-helpers.js';
import { Service, startService } from '../support/service.js';
import { startWorker, killAllWorkers } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';
import { metric } from '../support/metrics.js';

const scrape = async (service: Service) => {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  return {
    firstRounds: metric(text, 'baton_poll_rounds_total', { round: 'first' }),
    rounds: metric(text, 'baton_poll_rounds_total', { round: 'again' }),
    reportRounds: metric(text, 'baton_poll_rounds_total', { round: 'report' }),
    wakeups: metric(text, 'baton_poll_wakeups_total'),
  };
};

describe('wake-ups at a low rate', () => {
  let service: Service;
  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });
  it('100 three-task workflows dispatched one after another, one worker: no parked poll woken, no claim round after a park', async () => {
    service = await startService();
    const environment = unique('lowrate');
    await startWorker({ url: service.url, token: service.token, environment });
    const admin = new Client(service, 'demo', environment);
    // The worker's poll parked (its first round found nothing).
    await waitFor(async () => (await scrape(service)).firstRounds > 0, { timeoutMs: 15_000, description: 'the worker polling' });
    const before = await scrape(service);
    const ids: string[] = [];
    // One at a time: each dispatched once the one before completed (the worker idle, its poll parked).
    for (let i = 0; i < 100; i++) {
      const id = await admin.dispatchWorkflow('Sequential', { input: JSON.stringify([`x${i}`]) });
      ids.push(id);
      await waitFor(async () => (await admin.state(id)) === 'COMPLETED', { timeoutMs: 15_000, description: `workflow ${i} completed` });
    }
    const after = await scrape(service);
    // Before the wake-ups waited for the events applied with them (e9dc1d9): six wake-ups and
    // rounds for nothing per workflow, 600 in all. A few may come from timing (a poll not parked
    // yet, a machine under load): the bound is far below what it was, not zero.
    expect(after.wakeups - before.wakeups).toBeLessThan(50);
    expect(after.rounds - before.rounds).toBeLessThan(50);
  });
});
