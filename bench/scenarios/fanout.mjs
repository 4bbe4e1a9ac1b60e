// Scenario 3: W workflows each waiting for an event; one sendEventToWorkflows by name; time until
// every one of them has completed (WorkflowCompleted.recorded_at of the last one, from the store).
import { APP, DISPATCH, ENV, SEND_EVENT, StoreReader, gql, startBaton, startWorker } from '../lib/baton.mjs';
import { httpJson, now, pool, summary, waitUntil } from '../lib/util.mjs';

export async function fanout({ waiters, runs, concurrency = 50, workerConcurrency = 100, log }) {
  const svc = await startBaton();
  const worker = await startWorker(svc, { concurrency: workerConcurrency });
  const reader = new StoreReader(svc.storeFile);
  const body = JSON.stringify({ query: DISPATCH, variables: { input: { appId: APP, environment: ENV, name: 'BenchWaiter', input: '[]' } } });
  const headers = { authorization: `Bearer ${svc.token}` };
  const results = [];
  try {
    // r = -1: a warm-up round, not counted. The first round on a fresh service was the slowest in every
    // committed full run (4.33, 4.44, 3.63 s against 3.0–3.9 s after; the send 1.2–1.4 s against
    // 0.87–1.24 s), and the quick run's median of two rounds is their mean.
    for (let r = -1; r < runs; r++) {
      const waiting = r < 0 ? Math.min(waiters, 1000) : waiters;
      const startPos = reader.head();
      const t0 = now();
      const errors = await pool(waiting, concurrency, async () => {
        const res = await httpJson(`${svc.url}/graphql`, { body, headers });
        if (res.status !== 200 || !res.body?.data?.dispatchWorkflow?.id) throw new Error(`dispatch failed: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      });
      if (errors.length) throw errors[0];
      // Every waiter has had its first decision (it returned no command: it waits for "go").
      await waitUntil(() => reader.count('DecisionCompleted', startPos).n >= waiting, {
        timeoutMs: Math.max(60_000, waiting * 30),
        intervalMs: 100,
        what: `${waiting} workflows to be waiting`,
      });
      const setupSeconds = (now() - t0) / 1000;
      const sendPos = reader.head();
      const sentAt = now();
      const data = await gql(svc, SEND_EVENT, { input: { appId: APP, environment: ENV, selector: { name: 'BenchWaiter' }, name: 'go', data: '[]' } }, { timeoutMs: 600_000 });
      const mutationMs = now() - sentAt;
      const { matched, changed } = data.sendEventToWorkflows;
      await waitUntil(() => reader.count('WorkflowCompleted', sendPos).n >= waiting, {
        timeoutMs: Math.max(120_000, waiting * 50),
        intervalMs: 100,
        what: `${waiting} waiting workflows to complete after the event`,
      });
      const { last } = reader.count('WorkflowCompleted', sendPos);
      const seconds = (last - sentAt) / 1000;
      const events = reader.head() - sendPos;
      if (r < 0) {
        log(`  warm-up (not counted): ${waiting} waiting, all completed after ${seconds.toFixed(2)} s`);
        continue;
      }
      results.push({ waiters: waiting, matched, changed, mutationMs, seconds, completedPerSec: waiting / seconds, events, eventsPerSec: events / seconds, setupSeconds });
      log(`  run ${r + 1}/${runs}: ${waiting} waiting (set up in ${setupSeconds.toFixed(1)} s); event matched ${matched}, mutation ${mutationMs.toFixed(0)} ms, all completed after ${seconds.toFixed(2)} s`);
    }
    return {
      runs: results,
      seconds: summary(results.map((x) => x.seconds)),
      mutationMs: summary(results.map((x) => x.mutationMs)),
      completedPerSec: summary(results.map((x) => x.completedPerSec)),
      eventsPerSec: summary(results.map((x) => x.eventsPerSec)),
      settings: { waiters, runs, workerConcurrency },
    };
  } finally {
    reader.close();
    await worker.stop();
    await svc.stop();
  }
}
