// Starting the compiled Baton (dist/) and its bench worker, talking to it, and reading its store.
import Database from '../../dist/src/event-store/sqlite/better-sqlite3.js'; // the build that runs on this Node
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { spawnTracked, stopChild, tempDir, waitForOutput } from './procs.mjs';
import { httpJson, now } from './util.mjs';

export const ROOT = resolve(import.meta.dirname, '../..');
export const BENCH = resolve(import.meta.dirname, '..');
export const APP = 'demo';
export const ENV = 'bench';

export function assertBuilt() {
  for (const f of ['dist/src/main.js', 'dist/src/cli/baton.js', 'dist/src/sdk/index.js', 'dist/src/event-store/sqlite/sqlite-event-store.js']) {
    if (!existsSync(join(ROOT, f))) throw new Error(`${f} is missing: run \`npm run build\` first (npm run bench does it)`);
  }
}

/** A new temporary SQLite store file (its folder is removed at the end of the run). */
export function freshStoreFile(label = 'store') {
  return join(tempDir(`baton-bench-${label}-`), 'baton.db');
}

/**
 * Spawns `node dist/src/main.js` on 127.0.0.1 with an ephemeral port and the given store, waits for
 * BATON_READY and returns how long that took. `memProbe` preloads bench/mem-probe.mjs (--expose-gc),
 * which writes process.memoryUsage() after a full GC on SIGUSR2.
 */
export async function startBaton({ storeFile = freshStoreFile(), env = {}, memProbe = false, readyTimeoutMs = 120_000, logLevel = 'warn' } = {}) {
  const memFile = memProbe ? `${storeFile}.mem.json` : undefined;
  const nodeArgs = memProbe ? ['--expose-gc', '--import', join(BENCH, 'mem-probe.mjs')] : [];
  const spawnedAt = now();
  const child = spawnTracked(process.execPath, [...nodeArgs, join(ROOT, 'dist/src/main.js')], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      EVENT_STORE_URL: `sqlite:${storeFile}`,
      LOG_LEVEL: logLevel,
      BATON_EXAMPLE_WORKER: 'false',
      // The benchmark measures the engine, not the per-token rate limit (60,000/min by default).
      RATE_LIMIT_PER_MINUTE: '0',
      ...(memFile ? { BENCH_MEM_FILE: memFile } : {}),
      ...env,
    },
  });
  const [, url] = await waitForOutput(child, /BATON_READY (\S+)/, readyTimeoutMs, 'Baton');
  const readyMs = now() - spawnedAt;
  const token = /BATON_BOOTSTRAP_TOKEN=(\S+)/.exec(child.output)?.[1] ?? '';
  const rebuilt = /caught up (\d+) events in (\d+) ms/.exec(child.output);
  return {
    url,
    token,
    storeFile,
    child,
    readyMs,
    rebuild: rebuilt ? { events: Number(rebuilt[1]), ms: Number(rebuilt[2]) } : null,
    memFile,
    stop: () => stopChild(child, { graceMs: 10_000 }),
  };
}

/** One GraphQL operation; throws on HTTP or GraphQL errors. */
export async function gql(svc, query, variables, { timeoutMs = 300_000 } = {}) {
  const res = await httpJson(`${svc.url}/graphql`, {
    body: { query, variables },
    headers: { authorization: `Bearer ${svc.token}` },
    timeoutMs,
  });
  if (res.status !== 200 || res.body?.errors?.length) {
    throw new Error(`GraphQL ${res.status}: ${JSON.stringify(res.body?.errors ?? res.body).slice(0, 500)}`);
  }
  return res.body.data;
}

export const DISPATCH = 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }';
export const SEND_EVENT = 'mutation($input: SendEventToWorkflowsInput!) { sendEventToWorkflows(input: $input) { status matched changed } }';

export async function dispatch(svc, name, input = []) {
  const data = await gql(svc, DISPATCH, { input: { appId: APP, environment: ENV, name, input: JSON.stringify(input) } });
  return data.dispatchWorkflow.id;
}

/**
 * Starts one bench worker process (`baton worker bench/workloads.mjs`). The workload module appends
 * "<workflowId>\t<epoch ms>" to `obsFile` when a workflow's first task starts.
 */
export async function startWorker(svc, { concurrency = 100, obsFile } = {}) {
  const child = spawnTracked(
    process.execPath,
    [join(ROOT, 'dist/src/cli/baton.js'), 'worker', join(BENCH, 'workloads.mjs'), '--url', svc.url, '--token', svc.token, '--app', APP, '--env', ENV, '--concurrency', String(concurrency)],
    { cwd: ROOT, env: { ...process.env, ...(obsFile ? { BENCH_OBS_FILE: obsFile } : {}) } },
  );
  await waitForOutput(child, /BATON_WORKER_READY/, 30_000, 'Baton worker');
  return { child, stop: () => stopChild(child, { graceMs: 10_000 }) };
}

/** Reads "<id>\t<ms>" lines written by the workload module (first occurrence wins). */
export function readObservations(file) {
  const map = new Map();
  if (!existsSync(file)) return map;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [id, ms] = line.split('\t');
    if (id && ms && !map.has(id)) map.set(id, Number(ms));
  }
  return map;
}

/** A read-only view of a running service's SQLite store (WAL: readers never block the writer). */
export class StoreReader {
  constructor(file) {
    this.db = new Database(file, { readonly: true, fileMustExist: true });
    this.db.pragma('busy_timeout = 5000');
    this.countStmt = this.db.prepare('SELECT count(*) AS n, max(recorded_at) AS last FROM events WHERE position > ? AND type = ?');
    this.headStmt = this.db.prepare('SELECT coalesce(max(position), 0) AS p FROM events');
  }
  head() {
    return this.headStmt.get().p;
  }
  /** How many events of `type` after `position`, and when the last of them was recorded. */
  count(type, after) {
    return this.countStmt.get(after, type);
  }
  /** recorded_at of the first event of each `type` per stream, after `position`. */
  firstTimes(type, after) {
    const rows = this.db.prepare('SELECT stream_id AS s, min(recorded_at) AS t FROM events WHERE position > ? AND type = ? GROUP BY stream_id').all(after, type);
    return new Map(rows.map((r) => [r.s.slice('workflow-'.length), r.t]));
  }
  countTypes(types, after) {
    const q = `SELECT type, count(*) AS n FROM events WHERE position > ? AND type IN (${types.map(() => '?').join(',')}) GROUP BY type`;
    return Object.fromEntries(this.db.prepare(q).all(after, ...types).map((r) => [r.type, r.n]));
  }
  close() {
    this.db.close();
  }
}
