// Scenario 2 on Baton: workflows of two sequential no-op tasks, one worker process.
// Completion comes from the store (WorkflowCompleted.recorded_at); dispatch → first-task-start is
// measured from the client's send time to the moment the worker starts the first task.
import { APP, DISPATCH, ENV, StoreReader, readObservations, startBaton, startWorker } from '../lib/baton.mjs';
import { atRate, httpJson, now, percentile, pool, summary, waitUntil } from '../lib/util.mjs';

async function runBatch(ctx, { count, rate, concurrency, label }) {
  const { svc, reader, obsFile, log } = ctx;
  const startPos = reader.head();
  const sent = new Map();
  const body = JSON.stringify({ query: DISPATCH, variables: { input: { appId: APP, environment: ENV, name: 'BenchTwoStep', input: '[]' } } });
  const headers = { authorization: `Bearer ${svc.token}` };
  let firstSend = Infinity;
  let bad = 0;
  const job = async () => {
    const t = now();
    if (t < firstSend) firstSend = t;
    const res = await httpJson(`${svc.url}/graphql`, { body, headers });
    const id = res.body?.data?.dispatchWorkflow?.id;
    if (res.status !== 200 || !id) {
      if (++bad <= 3) log(`  dispatch failed: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      return;
    }
    sent.set(id, t);
  };
  const errors = rate ? await atRate(count, rate, job) : await pool(count, concurrency, job);
  const dispatchedAt = now();
  const expected = sent.size;
  const timeoutMs = Math.max(60_000, count * 20);
  await waitUntil(
    () => {
      const failed = reader.countTypes(['WorkflowFailed', 'DecisionFailed', 'TaskAttemptFailed'], startPos);
      if (Object.keys(failed).length) throw new Error(`workflows failed during the run: ${JSON.stringify(failed)}`);
      return reader.count('WorkflowCompleted', startPos).n >= expected;
    },
    { timeoutMs, intervalMs: 100, what: `${expected} BenchTwoStep workflows to complete (${label})` },
  );
  const { last } = reader.count('WorkflowCompleted', startPos);
  const events = reader.head() - startPos;
  await new Promise((r) => setTimeout(r, 120)); // the workload flushes its observations every 50 ms
  const observed = readObservations(obsFile);
  const latencies = [];
  for (const [id, t] of sent) if (observed.has(id)) latencies.push(observed.get(id) - t);
  // The same latency as the server sees it: WorkflowDispatched → first TaskStarted, from the store.
  const dispatched = reader.firstTimes('WorkflowDispatched', startPos);
  const started = reader.firstTimes('TaskStarted', startPos);
  const serverLatencies = [];
  for (const [id, t] of dispatched) if (started.has(id)) serverLatencies.push(started.get(id) - t);
  const seconds = (last - firstSend) / 1000;
  const result = {
    label,
    count: expected,
    dispatchErrors: errors.length + bad,
    seconds,
    completedPerSec: expected / seconds,
    dispatchPerSec: expected / ((dispatchedAt - firstSend) / 1000),
    eventsPerWorkflow: events / expected,
    eventsPerSec: events / seconds,
    latency: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), n: latencies.length },
    serverLatency: { p50: percentile(serverLatencies, 50), p99: percentile(serverLatencies, 99), n: serverLatencies.length },
  };
  log(
    `  ${label}: ${expected} workflows, ${result.completedPerSec.toFixed(0)} completed/s, ` +
      `first task p50 ${result.latency.p50.toFixed(1)} ms p99 ${result.latency.p99.toFixed(1)} ms, ${result.eventsPerWorkflow.toFixed(1)} events/workflow`,
  );
  return result;
}

export async function e2eBaton({ fixedRate, fixedSeconds, fullCount, fullRuns, concurrency = 50, workerConcurrency = 100, log }) {
  const svc = await startBaton();
  const obsFile = `${svc.storeFile}.obs`;
  const worker = await startWorker(svc, { concurrency: workerConcurrency, obsFile });
  const reader = new StoreReader(svc.storeFile);
  const ctx = { svc, reader, obsFile, log };
  try {
    await runBatch(ctx, { count: Math.min(200, fullCount), concurrency, label: 'warm-up' });
    const fixed = await runBatch(ctx, { count: fixedRate * fixedSeconds, rate: fixedRate, label: `fixed ${fixedRate}/s` });
    const full = [];
    for (let r = 0; r < fullRuns; r++) full.push(await runBatch(ctx, { count: fullCount, concurrency, label: `full load ${r + 1}/${fullRuns}` }));
    return {
      fixed,
      full,
      fullSummary: {
        completedPerSec: summary(full.map((x) => x.completedPerSec)),
        eventsPerSec: summary(full.map((x) => x.eventsPerSec)),
        latencyP50: summary(full.map((x) => x.latency.p50)),
        latencyP99: summary(full.map((x) => x.latency.p99)),
      },
      settings: { fixedRate, fixedSeconds, fullCount, fullRuns, concurrency, workerConcurrency },
    };
  } finally {
    reader.close();
    await worker.stop();
    await svc.stop();
  }
}
