// Scenario 5: large workflows. One workflow of N sequential no-op tasks and one of N parallel ones,
// one worker process. The sequential one is cut in blocks of 1,000 tasks: the cost of a task in the
// last block over the first says whether a step's cost grows with the workflow's history (it should
// not: 1.0 is flat). Times come from the store (TaskCompleted.recorded_at).
import { APP, DISPATCH, ENV, StoreReader, gql, startBaton, startWorker } from '../lib/baton.mjs';
import { now, waitUntil } from '../lib/util.mjs';

export async function large({ tasks, workerConcurrency = 100, log }) {
  const svc = await startBaton();
  const worker = await startWorker(svc, { concurrency: workerConcurrency });
  const reader = new StoreReader(svc.storeFile);
  const completions = reader.db.prepare("SELECT recorded_at AS t FROM events WHERE stream_id = ? AND type = 'TaskCompleted' ORDER BY revision");
  const done = reader.db.prepare("SELECT recorded_at AS t FROM events WHERE stream_id = ? AND type = 'WorkflowCompleted'");
  const run = async (name) => {
    const t0 = now();
    const data = await gql(svc, DISPATCH, { input: { appId: APP, environment: ENV, name, input: JSON.stringify([tasks]) } });
    const id = data.dispatchWorkflow.id;
    await waitUntil(() => done.get(`workflow-${id}`), { timeoutMs: Math.max(300_000, tasks * 60), intervalMs: 250, what: `${name} of ${tasks} tasks to complete` });
    const seconds = (done.get(`workflow-${id}`).t - t0) / 1000;
    const times = completions.all(`workflow-${id}`).map((r) => r.t);
    return { id, seconds, tasksPerSec: tasks / seconds, times };
  };
  try {
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
      settings: { tasks, workerConcurrency },
    };
  } finally {
    reader.close();
    await worker.stop();
    await svc.stop();
  }
}
