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
    for (let r = 0; r < runs; r++) {
      const startPos = reader.head();
      const t0 = now();
      const errors = await pool(waiters, concurrency, async () => {
        const res = await httpJson(`${svc.url}/graphql`, { body, headers });
        if (res.status !== 200 || !res.body?.data?.dispatchWorkflow?.id) throw new Error(`dispatch failed: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      });
      if (errors.length) throw errors[0];
      // Every waiter has had its first decision (it returned no command: it waits for "go").
      await waitUntil(() => reader.count('DecisionCompleted', startPos).n >= waiters, {
        timeoutMs: Math.max(60_000, waiters * 30),
        intervalMs: 100,
        what: `${waiters} workflows to be waiting`,
      });
      const setupSeconds = (now() - t0) / 1000;
      const sendPos = reader.head();
      const sentAt = now();
      const data = await gql(svc, SEND_EVENT, { input: { appId: APP, environment: ENV, selector: { name: 'BenchWaiter' }, name: 'go', data: '[]' } }, { timeoutMs: 600_000 });
      const mutationMs = now() - sentAt;
      const { matched, changed } = data.sendEventToWorkflows;
      await waitUntil(() => reader.count('WorkflowCompleted', sendPos).n >= waiters, {
        timeoutMs: Math.max(120_000, waiters * 50),
        intervalMs: 100,
        what: `${waiters} waiting workflows to complete after the event`,
      });
      const { last } = reader.count('WorkflowCompleted', sendPos);
      const seconds = (last - sentAt) / 1000;
      const events = reader.head() - sendPos;
      results.push({ waiters, matched, changed, mutationMs, seconds, completedPerSec: waiters / seconds, events, eventsPerSec: events / seconds, setupSeconds });
      log(`  run ${r + 1}/${runs}: ${waiters} waiting (set up in ${setupSeconds.toFixed(1)} s); event matched ${matched}, mutation ${mutationMs.toFixed(0)} ms, all completed after ${seconds.toFixed(2)} s`);
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
