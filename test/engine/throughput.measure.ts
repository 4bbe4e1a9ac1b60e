/**
 * A measurement, not a test: one worker process (concurrency 10) runs N two-task workflows
 * (`Pair` from test/support/fixtures/workflows.ts) dispatched at once against a fresh service on
 * the embedded store. Prints completed workflows per second and the time from dispatch to the
 * first task starting (TaskStarted.recordedAt − WorkflowDispatched.recordedAt), under that burst
 * and, for reference, for workflows dispatched one at a time on an idle engine.
 *
 * Run from the repository root, after a build:
 *   npx tsc -p tsconfig.build.json
 *   npx tsc --ignoreConfig --outDir dist/measure --rootDir . --module nodenext --moduleResolution nodenext \
 *     --target es2022 --skipLibCheck --types node test/engine/throughput.measure.ts
 *   node dist/measure/test/engine/throughput.measure.js [N=300]
 *
 * The service runs with RATE_LIMIT_PER_MINUTE=0: the default per-token limit (60000/min) would
 * otherwise be what is measured.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '../../src/sdk/index.js';
import { ROOT, startWorker } from '../support/worker.js';

const N = Number(process.argv[2] ?? 300);
const IDLE_SAMPLES = 20;
const APP = 'demo';
const ENV = 'measure';

interface Row {
  revision: number;
  type: string;
  data: any;
  recordedAt: string;
}

async function startService(): Promise<{ url: string; token: string; stop: () => void }> {
  const storeUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'baton-measure-')), 'baton.db')}`;
  const child = spawn(process.execPath, [join(ROOT, 'dist/src/main.js')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', EVENT_STORE_URL: storeUrl, LOG_LEVEL: 'warn', BATON_EXAMPLE_WORKER: 'false', RATE_LIMIT_PER_MINUTE: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${out}`)), 30_000);
    child.stdout!.on('data', () => {
      const match = /BATON_READY (\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => reject(new Error(`service exited with ${code}:\n${out}`)));
  });
  return { url, token: /BATON_BOOTSTRAP_TOKEN=(\S+)/.exec(out)![1], stop: () => child.kill('SIGTERM') };
}

const median = (xs: number[]) => quantile(xs, 0.5);
function quantile(xs: number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function waitCompleted(client: Client, ids: string[]): Promise<void> {
  const deadline = Date.now() + 300_000;
  const pending = new Set(ids);
  while (pending.size > 0) {
    if (Date.now() > deadline) throw new Error(`${pending.size} workflows did not complete`);
    const data = await client.request<{ workflows: { nodes: Array<{ id: string }> } }>(
      'query($filter: WorkflowFilterInput!) { workflows(filter: $filter, first: 500) { nodes { id } } }',
      { filter: { appId: APP, environment: ENV, name: 'Pair', state: 'COMPLETED' } },
    );
    for (const { id } of data.workflows.nodes) pending.delete(id);
    if (pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function timings(client: Client, ids: string[]) {
  const histories: Row[][] = [];
  for (let i = 0; i < ids.length; i += 25) {
    histories.push(...(await Promise.all(ids.slice(i, i + 25).map((id) => client.workflowHistory(APP, ENV, id) as Promise<Row[]>))));
  }
  const at = (h: Row[], type: string) => Date.parse(h.find((e) => e.type === type)!.recordedAt);
  const last = (h: Row[], type: string) => Date.parse(h.filter((e) => e.type === type).at(-1)!.recordedAt);
  return {
    firstDispatched: Math.min(...histories.map((h) => at(h, 'WorkflowDispatched'))),
    lastCompleted: Math.max(...histories.map((h) => last(h, 'WorkflowCompleted'))),
    toFirstTask: histories.map((h) => at(h, 'TaskStarted') - at(h, 'WorkflowDispatched')),
    toCompleted: histories.map((h) => last(h, 'WorkflowCompleted') - at(h, 'WorkflowDispatched')),
    events: histories.reduce((n, h) => n + h.length, 0),
  };
}

async function main(): Promise<void> {
  const service = await startService();
  const worker = await startWorker({ url: service.url, token: service.token, environment: ENV, concurrency: 10, heartbeatMs: 5000 });
  const client = new Client({ url: service.url, token: service.token });
  const dispatch = (i: number) => client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'Pair', input: [i] });
  try {
    // warm-up (JIT, connections, the worker's first poll)
    const warm = await Promise.all(Array.from({ length: 10 }, (_, i) => dispatch(-i - 1)));
    await waitCompleted(client, warm);

    // idle: one at a time, each after the previous completed
    const idle: string[] = [];
    for (let i = 0; i < IDLE_SAMPLES; i++) {
      const id = await dispatch(1000 + i);
      idle.push(id);
      await waitCompleted(client, [id]);
    }
    const idleTimes = await timings(client, idle);

    // burst: N dispatched at once (50 requests in flight)
    const started = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < N; i += 50) ids.push(...(await Promise.all(Array.from({ length: Math.min(50, N - i) }, (_, j) => dispatch(i + j)))));
    const dispatchedIn = Date.now() - started;
    await waitCompleted(client, ids);
    const wallMs = Date.now() - started;
    const burst = await timings(client, ids);
    const spanMs = burst.lastCompleted - burst.firstDispatched;

    const report = {
      workflows: N,
      workerConcurrency: 10,
      dispatchAllMs: dispatchedIn,
      completedPerSecond: Number(((N * 1000) / spanMs).toFixed(1)),
      completedPerSecondWallClock: Number(((N * 1000) / wallMs).toFixed(1)),
      eventsPerWorkflow: burst.events / N,
      burst: {
        dispatchToFirstTaskMs: { median: median(burst.toFirstTask), p95: quantile(burst.toFirstTask, 0.95), max: Math.max(...burst.toFirstTask) },
        dispatchToCompletedMs: { median: median(burst.toCompleted), p95: quantile(burst.toCompleted, 0.95) },
      },
      idle: {
        samples: IDLE_SAMPLES,
        dispatchToFirstTaskMs: { median: median(idleTimes.toFirstTask), p95: quantile(idleTimes.toFirstTask, 0.95) },
        dispatchToCompletedMs: { median: median(idleTimes.toCompleted), p95: quantile(idleTimes.toCompleted, 0.95) },
      },
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await worker.kill();
    service.stop();
  }
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exit(1);
});
