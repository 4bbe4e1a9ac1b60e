// Scenario 5: large workflows. One workflow of N sequential no-op tasks and one of N parallel ones,
// one worker process. The sequential one is cut in blocks of 1,000 tasks: the cost of a task in the
// last block over the first says whether a step's cost grows with the workflow's history (it should
// not: 1.0 is flat). Times come from the store (TaskCompleted.recorded_at). Both are measured after a
// warm-up of the same two workflows (up to WARMUP_TASKS tasks each) on the same service and worker:
// on a cold pair the CPU per task (service + worker, from /proc) fell block by block over the first
// 2,000 sequential tasks, 5.3 → 4.1 → 3.8 → 3.3 ms, and was flat in the next run (3.2 3.1 3.3 3.1), so
// a first block measured cold put last ÷ first at 0.6 for a flat cost and would hide a growth of 1.6×.
import { APP, DISPATCH, ENV, StoreReader, gql, startBaton, startWorker } from '../lib/baton.mjs';
import { now, waitUntil } from '../lib/util.mjs';

/** Tasks in each warm-up workflow (the cold per-task cost had settled by 2,000). */
const WARMUP_TASKS = 2000;

export async function large({ tasks, workerConcurrency = 100, log }) {
  const svc = await startBaton();
  const worker = await startWorker(svc, { concurrency: workerConcurrency });
  const reader = new StoreReader(svc.storeFile);
  const completions = reader.db.prepare("SELECT recorded_at AS t FROM events WHERE stream_id = ? AND type = 'TaskCompleted' ORDER BY revision");
  const done = reader.db.prepare("SELECT recorded_at AS t FROM events WHERE stream_id = ? AND type = 'WorkflowCompleted'");
  const run = async (name, n = tasks) => {
    const t0 = now();
    const data = await gql(svc, DISPATCH, { input: { appId: APP, environment: ENV, name, input: JSON.stringify([n]) } });
    const id = data.dispatchWorkflow.id;
    await waitUntil(() => done.get(`workflow-${id}`), { timeoutMs: Math.max(300_000, n * 60), intervalMs: 250, what: `${name} of ${n} tasks to complete` });
    const seconds = (done.get(`workflow-${id}`).t - t0) / 1000;
    const times = completions.all(`workflow-${id}`).map((r) => r.t);
    return { id, seconds, tasksPerSec: n / seconds, times };
  };
  try {
    const warmup = Math.min(tasks, WARMUP_TASKS);
    // Parallel first: a sequential run measured right after a parallel one started slower again.
    const warm = [await run('BenchParallel', warmup), await run('BenchSequential', warmup)];
    log(`  warm-up (not counted): ${warmup} parallel tasks in ${warm[0].seconds.toFixed(1)} s, ${warmup} sequential in ${warm[1].seconds.toFixed(1)} s`);
    const sequential = await run('BenchSequential');
    const block = Math.min(1000, Math.floor(tasks / 4));
    const perTask = (from) => (sequential.times[from + block - 1] - sequential.times[from]) / (block - 1);
    const firstMs = perTask(0);
    const lastMs = perTask(sequential.times.length - block);
    log(`  sequential: ${tasks} tasks in ${sequential.seconds.toFixed(1)} s; first ${block}: ${firstMs.toFixed(2)} ms/task, last ${block}: ${lastMs.toFixed(2)} ms/task (×${(lastMs / firstMs).toFixed(2)})`);
    const parallel = await run('BenchParallel');
    log(`  parallel: ${tasks} tasks in ${parallel.seconds.toFixed(1)} s (${parallel.tasksPerSec.toFixed(0)} tasks/s)`);
    return {
      tasks,
      block,
      sequential: { seconds: sequential.seconds, tasksPerSec: sequential.tasksPerSec, firstBlockMsPerTask: firstMs, lastBlockMsPerTask: lastMs, lastOverFirst: lastMs / firstMs },
      parallel: { seconds: parallel.seconds, tasksPerSec: parallel.tasksPerSec },
      warmupTasks: warmup,
      settings: { tasks, workerConcurrency },
    };
  } finally {
    reader.close();
    await worker.stop();
    await svc.stop();
  }
}
