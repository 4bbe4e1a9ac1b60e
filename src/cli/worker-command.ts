import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TaskDefinition, WorkflowDefinition } from '../sdk/definitions.js';
import { Worker } from '../sdk/worker.js';

/** Every task and workflow definition a module exports. */
export async function loadDefinitions(modulePath: string): Promise<{ tasks: TaskDefinition[]; workflows: WorkflowDefinition[] }> {
  const module = (await import(pathToFileURL(resolve(modulePath)).href)) as Record<string, unknown>;
  const values = Object.values(module).filter((v): v is { kind: string } => typeof v === 'object' && v !== null && 'kind' in v);
  return {
    tasks: values.filter((v): v is TaskDefinition => v.kind === 'task'),
    workflows: values.filter((v): v is WorkflowDefinition => v.kind === 'workflow'),
  };
}

export interface WorkerCommandOptions {
  url: string;
  token?: string;
  app?: string;
  env?: string;
  concurrency: string;
  decisionConcurrency?: string;
  heartbeatMs: string;
  maxCachedWorkflows: string;
  shutdownGraceMs: string;
}

/** `baton worker <module>`: runs a worker for the definitions a module exports, until SIGINT/SIGTERM. */
export async function workerCommand(modulePath: string, values: WorkerCommandOptions): Promise<number> {
  if (!values.token || !values.app || !values.env) {
    process.stderr.write('baton worker needs --token, --app and --env (or BATON_TOKEN, BATON_APP_ID, BATON_ENVIRONMENT)\n');
    return 2;
  }
  const slots = { '--concurrency': values.concurrency, '--decision-concurrency': values.decisionConcurrency ?? values.concurrency };
  for (const [flag, value] of Object.entries(slots)) {
    if (!/^[1-9][0-9]{0,5}$/.test(value)) {
      process.stderr.write(`baton worker: ${flag} must be a whole number from 1 to 999999, not ${JSON.stringify(value)}\n`);
      return 2;
    }
  }
  const numbers: Array<[flag: string, value: string, min: number, max: number]> = [
    ['--heartbeat-ms', values.heartbeatMs, 100, 3_600_000],
    ['--max-cached-workflows', values.maxCachedWorkflows, 0, 10_000_000],
    ['--shutdown-grace-ms', values.shutdownGraceMs, 0, 86_400_000],
  ];
  for (const [flag, value, min, max] of numbers) {
    if (!/^\d{1,9}$/.test(value) || Number(value) < min || Number(value) > max) {
      process.stderr.write(`baton worker: ${flag} must be a whole number from ${min} to ${max}, not ${JSON.stringify(value)}\n`);
      return 2;
    }
  }
  if (!/^https?:$/.test(URL.parse(values.url)?.protocol ?? '')) {
    process.stderr.write(`baton worker: --url must be an http:// or https:// URL of the Baton service, not ${JSON.stringify(values.url)}\n`);
    return 2;
  }
  const { tasks, workflows } = await loadDefinitions(modulePath);
  if (tasks.length + workflows.length === 0) {
    // Else it polled for nothing, for ever: a wrong path, or an index that re-exports nothing.
    process.stderr.write(`baton worker: ${modulePath} exports no task or workflow definition (defineTask / defineWorkflow values exported by name)\n`);
    return 2;
  }
  const worker = new Worker({
    url: values.url,
    token: values.token,
    appId: values.app,
    environment: values.env,
    tasks,
    workflows,
    concurrency: Number(slots['--concurrency']),
    decisionConcurrency: Number(slots['--decision-concurrency']),
    heartbeatIntervalMs: Number(values.heartbeatMs),
    maxCachedWorkflows: Number(values.maxCachedWorkflows),
    shutdownGraceMs: Number(values.shutdownGraceMs),
  });
  const stop = () => void worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  process.stdout.write(
    `worker ${worker.workerId} serving ${workflows.map((w) => w.name).join(', ') || 'no workflows'}; tasks ${tasks.map((t) => t.name).join(', ') || 'none'}\nBATON_WORKER_READY\n`,
  );
  await worker.run();
  return 0;
}
