import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
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

/** `baton worker <module>`: runs a worker for the definitions a module exports, until SIGINT/SIGTERM. */
export async function workerCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      url: { type: 'string', default: process.env.BATON_URL ?? 'http://localhost:3000' },
      token: { type: 'string', default: process.env.BATON_TOKEN },
      app: { type: 'string', default: process.env.BATON_APP_ID },
      env: { type: 'string', default: process.env.BATON_ENVIRONMENT },
      concurrency: { type: 'string', default: process.env.BATON_CONCURRENCY ?? '10' },
      'heartbeat-ms': { type: 'string', default: process.env.BATON_HEARTBEAT_MS ?? '5000' },
      'max-cached-workflows': { type: 'string', default: process.env.BATON_MAX_CACHED_WORKFLOWS ?? '1000' },
      'shutdown-grace-ms': { type: 'string', default: process.env.BATON_SHUTDOWN_GRACE_MS ?? '30000' },
    },
  });
  const [modulePath] = positionals;
  if (!modulePath || !values.token || !values.app || !values.env) {
    process.stderr.write('usage: baton worker <module> --token <token> --app <appId> --env <environment> [--url http://localhost:3000] [--concurrency 10]\n(or BATON_TOKEN, BATON_APP_ID, BATON_ENVIRONMENT, BATON_URL)\n');
    return 2;
  }
  const { tasks, workflows } = await loadDefinitions(modulePath);
  const worker = new Worker({
    url: values.url!,
    token: values.token,
    appId: values.app,
    environment: values.env,
    tasks,
    workflows,
    concurrency: Number(values.concurrency),
    heartbeatIntervalMs: Number(values['heartbeat-ms']),
    maxCachedWorkflows: Number(values['max-cached-workflows']),
    shutdownGraceMs: Number(values['shutdown-grace-ms']),
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
