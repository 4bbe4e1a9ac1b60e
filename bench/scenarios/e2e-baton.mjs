// Scenario 2 on Baton: workflows of two sequential no-op steps, one worker process, in two variants
// (VARIANTS). Completion comes from the store (WorkflowCompleted.recorded_at); dispatch →
// first-step-start is measured from the client's send time to the moment the worker starts the
// first step.
import { APP, DISPATCH, ENV, StoreReader, readObservations, startBaton, startWorker } from '../lib/baton.mjs';
import { atRate, httpJson, now, percentile, pool, summary, waitUntil } from '../lib/util.mjs';

/**
 * The same two steps, as tasks and inline. `startEvent` is the store's event that the server-side
 * latency (WorkflowDispatched → it) runs to, if any.
 */
const VARIANTS = {
  // Each step a task, dispatched through the service (claimed, leased, reported). Its results keep
  // the keys they always had, so older results stay comparable.
  tasks: { workflow: 'BenchTwoStep', startEvent: 'TaskStarted' },
  // Each step inline (ctx.step), run in the decision and recorded with its report, as Restate's
  // ctx.run and DBOS's steps are. No event marks a step's start, and the server-side figure is left
  // out: the nearest event, the first DecisionStarted, is written in the dispatch's own append
  // whenever a worker's poll is waiting (the engine's eager start), so it would read as zero and say
  // nothing about when the step ran.
  inline: { workflow: 'BenchTwoStepInline', startEvent: null },
};

/**
 * Resolves `wait(id)` when the workflow's WorkflowCompleted is in the store: one reader for all,
 * reading the log's new completions every 2 ms (a closed loop, as Restate's request-response
 * calls are).
 */
function completions(reader, after) {
  // Failed and terminated workflows end their lane's wait too (rejected): a lane waiting for a
  // completion that never comes held the batch until the run's time limit, reported as "stopped at
  // the time limit" instead of the failure that the batch's check then names.
  const statement = reader.db.prepare(
    "SELECT position, stream_id, type FROM events WHERE position > ? AND type IN ('WorkflowCompleted', 'WorkflowFailed', 'WorkflowTerminated') ORDER BY position",
  );
  const ended = new Map();
  const waiting = new Map();
  let position = after;
  const settle = (id, type, waiter) => (type === 'WorkflowCompleted' ? waiter.resolve() : waiter.reject(new Error(`workflow ${id}: ${type}`)));
  const timer = setInterval(() => {
    for (const row of statement.all(position)) {
      position = row.position;
      const id = row.stream_id.slice('workflow-'.length);
      ended.set(id, row.type);
      const waiter = waiting.get(id);
      if (waiter) settle(id, row.type, waiter);
      waiting.delete(id);
    }
  }, 2);
  return {
    wait: (id) =>
      new Promise((resolve, reject) => {
        if (ended.has(id)) settle(id, ended.get(id), { resolve, reject });
        else waiting.set(id, { resolve, reject });
      }),
    stop: () => clearInterval(timer),
  };
}

async function runBatch(ctx, { count, rate, concurrency, closedLoop = false, label }) {
  const { reader, obsFile, log, variant } = ctx;
  // Where the dispatches go: the worker's own service, or another instance on the same store.
  const svc = ctx.dispatchTo ?? ctx.svc;
  const { workflow, startEvent } = variant;
  const startPos = reader.head();
  const sent = new Map();
  const body = JSON.stringify({ query: DISPATCH, variables: { input: { appId: APP, environment: ENV, name: workflow, input: '[]' } } });
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
    // Closed loop: this lane dispatches its next workflow once this one completed.
    if (closedLoop) await completed.wait(id);
  };
  const completed = closedLoop ? completions(reader, startPos) : null;
  const errors = rate ? await atRate(count, rate, job) : await pool(count, concurrency, job).finally(() => completed?.stop());
  const dispatchedAt = now();
  const expected = sent.size;
  const timeoutMs = Math.max(60_000, count * 20);
  await waitUntil(
    () => {
      const failed = reader.countTypes(['WorkflowFailed', 'DecisionFailed', 'TaskAttemptFailed', 'StepFailed'], startPos);
      if (Object.keys(failed).length) throw new Error(`workflows failed during the run: ${JSON.stringify(failed)}`);
      return reader.count('WorkflowCompleted', startPos).n >= expected;
    },
    { timeoutMs, intervalMs: 100, what: `${expected} ${workflow} workflows to complete (${label})` },
  );
  const { last } = reader.count('WorkflowCompleted', startPos);
  const events = reader.head() - startPos;
  await new Promise((r) => setTimeout(r, 120)); // the workload flushes its observations every 50 ms
  const observed = readObservations(obsFile);
  const latencies = [];
  for (const [id, t] of sent) if (observed.has(id)) latencies.push(observed.get(id) - t);
  // The same latency as the server sees it, from the store: WorkflowDispatched → the variant's start event.
  let serverLatency = null;
  if (startEvent) {
    const dispatched = reader.firstTimes('WorkflowDispatched', startPos);
    const started = reader.firstTimes(startEvent, startPos);
    const serverLatencies = [];
    for (const [id, t] of dispatched) if (started.has(id)) serverLatencies.push(started.get(id) - t);
    serverLatency = { p50: percentile(serverLatencies, 50), p99: percentile(serverLatencies, 99), n: serverLatencies.length };
  }
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
    serverLatency,
  };
  log(
    `  ${workflow} ${label}: ${expected} workflows, ${result.completedPerSec.toFixed(0)} completed/s, ` +
      `first step p50 ${result.latency.p50.toFixed(1)} ms p99 ${result.latency.p99.toFixed(1)} ms, ${result.eventsPerWorkflow.toFixed(1)} events/workflow`,
  );
  return result;
}

/**
 * One variant on a service and worker of its own, so each starts from the same state (a fresh
 * process, an empty store) and gets its own warm-up.
 */
async function runVariant(variant, { fixedRate, fixedSeconds, fullCount, fullRuns, concurrency, workerConcurrency, inFlight, log }) {
  const svc = await startBaton();
  const obsFile = `${svc.storeFile}.obs`;
  const worker = await startWorker(svc, { concurrency: workerConcurrency, obsFile });
  const reader = new StoreReader(svc.storeFile);
  const ctx = { svc, reader, obsFile, log, variant };
  try {
    // A warm-up as large as one full-load batch (for the peers too): with 200 workflows, every
    // system still sped up from one quick full-load batch to the next.
    await runBatch(ctx, { count: fullCount, concurrency, label: 'warm-up' });
    const fixed = await runBatch(ctx, { count: fixedRate * fixedSeconds, rate: fixedRate, label: `fixed ${fixedRate}/s` });
    const full = [];
    for (let r = 0; r < fullRuns; r++) full.push(await runBatch(ctx, { count: fullCount, concurrency, label: `full load ${r + 1}/${fullRuns}` }));
    // As Restate is driven (peers.mjs): at most `inFlight` workflows in flight, each lane waiting
    // for its workflow to complete before dispatching the next. The full-load batches above
    // dispatch as fast as 50 clients go, so their first task waits behind the whole backlog.
    // Its lanes' connections are opened first, as the peer's are by its warm-up at that concurrency:
    // a busy Node server accepts one new connection per turn of its event loop (libuv, Node 20 to 24), so
    // 150 connections opened at once under load would put about a second into the figure.
    await pool(inFlight, inFlight, () => httpJson(`${svc.url}/graphql`, { body: { query: '{ __typename }' }, headers: { authorization: `Bearer ${svc.token}` } }));
    const closed = await runBatch(ctx, { count: fullCount, concurrency: inFlight, closedLoop: true, label: `full load, at most ${inFlight} in flight` });
    return {
      closed: { ...closed, inFlight },
      workflow: variant.workflow,
      serverLatencyTo: variant.startEvent,
      fixed,
      full,
      fullSummary: {
        completedPerSec: summary(full.map((x) => x.completedPerSec)),
        eventsPerSec: summary(full.map((x) => x.eventsPerSec)),
        latencyP50: summary(full.map((x) => x.latency.p50)),
        latencyP99: summary(full.map((x) => x.latency.p99)),
      },
    };
  } finally {
    reader.close();
    await worker.stop();
    await svc.stop();
  }
}

/**
 * Two instances on one store, as behind a load balancer: the worker polls instance B, the
 * inline workflows are dispatched through instance A at the fixed rate, so no poll waits on the
 * dispatching instance (no eager start) and B learns of each workflow from the shared file.
 * Then the same through B, the worker's own instance, in the same minutes.
 */
export async function runTwoInstances({ fixedRate, fixedSeconds, workerConcurrency, log }) {
  const b = await startBaton();
  const a = await startBaton({ storeFile: b.storeFile });
  a.token = b.token;
  const obsFile = `${b.storeFile}.obs`;
  const worker = await startWorker(b, { concurrency: workerConcurrency, obsFile });
  const reader = new StoreReader(b.storeFile);
  const ctx = { svc: b, reader, obsFile, log, variant: VARIANTS.inline };
  try {
    // Both instances warmed up: A has answered nothing yet, and the first batch through a fresh
    // instance carries its cold start (dispatch answers of 106 and 69 ms at its start, p99 69 ms,
    // against 13 ms in the next batch through it, in a probe on 2026-11-27).
    await runBatch(ctx, { count: fixedRate * 2, rate: fixedRate, label: 'warm-up' });
    await runBatch({ ...ctx, dispatchTo: a }, { count: fixedRate * 2, rate: fixedRate, label: 'warm-up through the other instance' });
    const viaOther = await runBatch({ ...ctx, dispatchTo: a }, { count: fixedRate * fixedSeconds, rate: fixedRate, label: `fixed ${fixedRate}/s through the other instance` });
    const viaSame = await runBatch(ctx, { count: fixedRate * fixedSeconds, rate: fixedRate, label: `fixed ${fixedRate}/s through the worker's instance` });
    return { workflow: VARIANTS.inline.workflow, viaOther, viaSame };
  } finally {
    reader.close();
    await worker.stop();
    await a.stop();
    await b.stop();
  }
}

/** The task variant's figures at the top level (as before), the inline variant's under `inline`, two instances under `twoInstances`. */
export async function e2eBaton({ fixedRate, fixedSeconds, fullCount, fullRuns, concurrency = 50, workerConcurrency = 100, inFlight = 200, log }) {
  const settings = { fixedRate, fixedSeconds, fullCount, fullRuns, concurrency, workerConcurrency, inFlight };
  const tasks = await runVariant(VARIANTS.tasks, { ...settings, log });
  const inline = await runVariant(VARIANTS.inline, { ...settings, log });
  const twoInstances = await runTwoInstances({ ...settings, log });
  return { ...tasks, inline, twoInstances, settings };
}
