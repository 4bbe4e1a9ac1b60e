// `--peers`: scenario 2 (two sequential no-op steps, one worker/endpoint process) on Restate and on
// DBOS Transact, measured the same way as on Baton: client send time → first step starts in the
// worker process, and completed workflows per second at full load.
//
// Peers are installed into bench/peers/ (its own package.json), never into Baton's dependencies.
// Anything that cannot run here is reported as unavailable with the reason; the rest goes on.
import { randomUUID } from 'node:crypto';
import { chownSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH } from '../lib/baton.mjs';
import { onCleanupSync, runSync, spawnTracked, stopChild, tempDir, waitForOutput } from '../lib/procs.mjs';
import { atRate, freePort, httpJson, now, percentile, pool, sleep, summary, waitUntil } from '../lib/util.mjs';

const PEERS = join(BENCH, 'peers');
const REQUIRED = ['@restatedev/restate-sdk', '@restatedev/restate-server', '@dbos-inc/dbos-sdk'];

/** npm install in bench/peers when a peer package is missing. Returns null or the reason it failed. */
export function ensurePeersInstalled(log) {
  const missing = REQUIRED.filter((p) => !existsSync(join(PEERS, 'node_modules', p, 'package.json')));
  if (missing.length === 0) return null;
  log(`  installing ${missing.join(', ')} into bench/peers/ (npm install)…`);
  try {
    runSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: PEERS, timeout: 600_000 });
  } catch (error) {
    return `npm install in bench/peers failed: ${error.message.split('\n').slice(0, 6).join(' ')}`;
  }
  const still = REQUIRED.filter((p) => !existsSync(join(PEERS, 'node_modules', p, 'package.json')));
  return still.length ? `still missing after npm install: ${still.join(', ')}` : null;
}

/**
 * One batch against a peer. `dispatchOne(id)` resolves when the peer accepted the workflow (and,
 * for request-response peers, with the completion time); `progress()` counts completions;
 * `collect()` returns { step1: {id: ms}, done: {id: ms} }.
 */
async function peerBatch(peer, { count, rate, concurrency, label, log }) {
  await peer.reset();
  const sent = new Map();
  const clientDone = new Map();
  let firstSend = Infinity;
  let bad = 0;
  const job = async () => {
    const id = randomUUID();
    const t = now();
    if (t < firstSend) firstSend = t;
    try {
      const doneAt = await peer.dispatchOne(id);
      sent.set(id, t);
      if (doneAt) clientDone.set(id, doneAt);
    } catch (error) {
      if (++bad <= 3) log(`  ${peer.name} dispatch failed: ${error.message.slice(0, 200)}`);
    }
  };
  const errors = rate ? await atRate(count, rate, job) : await pool(count, concurrency, job);
  if (sent.size === 0) throw new Error(`${peer.name}: every dispatch failed`);
  await waitUntil(async () => (await peer.progress(clientDone)) >= sent.size, {
    timeoutMs: Math.max(60_000, count * 20),
    intervalMs: 100,
    what: `${sent.size} ${peer.name} workflows to complete (${label})`,
  });
  const { step1, done } = await peer.collect(clientDone);
  const latencies = [];
  let last = 0;
  for (const [id, t] of sent) {
    if (step1[id] !== undefined) latencies.push(step1[id] - t);
    if (done[id] !== undefined && done[id] > last) last = done[id];
  }
  const seconds = (last - firstSend) / 1000;
  const result = {
    label,
    count: sent.size,
    dispatchErrors: errors.length + bad,
    seconds,
    completedPerSec: sent.size / seconds,
    latency: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), n: latencies.length },
  };
  log(`  ${peer.name} ${label}: ${sent.size} workflows, ${result.completedPerSec.toFixed(0)} completed/s, first step p50 ${result.latency.p50.toFixed(1)} ms p99 ${result.latency.p99.toFixed(1)} ms`);
  return result;
}

async function runPeer(peer, { fixedRate, fixedSeconds, fullCount, fullRuns, concurrency, log }) {
  // As large as one full-load batch, as for Baton (bench/scenarios/e2e-baton.mjs says why).
  await peerBatch(peer, { count: fullCount, concurrency, label: 'warm-up', log });
  const fixed = await peerBatch(peer, { count: fixedRate * fixedSeconds, rate: fixedRate, label: `fixed ${fixedRate}/s`, log });
  const full = [];
  for (let r = 0; r < fullRuns; r++) full.push(await peerBatch(peer, { count: fullCount, concurrency, label: `full load ${r + 1}/${fullRuns}`, log }));
  return {
    available: true,
    fixed,
    full,
    fullSummary: {
      completedPerSec: summary(full.map((x) => x.completedPerSec)),
      latencyP50: summary(full.map((x) => x.latency.p50)),
      latencyP99: summary(full.map((x) => x.latency.p99)),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Restate

function restateBinary() {
  const platform = { linux: 'linux', darwin: 'darwin' }[process.platform];
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch];
  const bin = join(PEERS, 'node_modules', '@restatedev', `restate-server-${platform}-${arch}`, 'bin', 'restate-server');
  return platform && arch && existsSync(bin) ? bin : null;
}

export async function restatePeer(settings) {
  const { log } = settings;
  const bin = restateBinary();
  if (!bin) return { available: false, reason: `no restate-server binary for ${process.platform}-${process.arch} in bench/peers/node_modules (the npm package ships it as an optional platform package)` };
  const dir = tempDir('baton-bench-restate-');
  const [ingress, admin, fabric, endpointPort, statsPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  const server = spawnTracked(bin, ['--no-logo', '--base-dir', dir, '--node-name', 'bench'], {
    cwd: dir,
    env: {
      ...process.env,
      RESTATE_LISTEN_MODE: 'tcp',
      RESTATE_INGRESS__BIND_ADDRESS: `127.0.0.1:${ingress}`,
      RESTATE_ADMIN__BIND_ADDRESS: `127.0.0.1:${admin}`,
      RESTATE_BIND_ADDRESS: `127.0.0.1:${fabric}`,
      RESTATE_ADVERTISED_ADDRESS: `http://127.0.0.1:${fabric}/`,
      RESTATE_LOG_FILTER: 'warn',
    },
  });
  const endpoint = spawnTracked(process.execPath, [join(PEERS, 'restate-endpoint.mjs')], {
    cwd: PEERS,
    env: { ...process.env, ENDPOINT_PORT: String(endpointPort), STATS_PORT: String(statsPort), RESTATE_LOGGING: 'WARN' },
  });
  try {
    await waitForOutput(endpoint, /PEER_READY/, 30_000, 'Restate endpoint');
    await waitUntil(async () => (await httpJson(`http://127.0.0.1:${admin}/health`, { method: 'GET', timeoutMs: 2000 }).catch(() => ({}))).status === 200, {
      timeoutMs: 60_000,
      intervalMs: 200,
      what: `restate-server admin API (output: ${server.output.slice(-500)})`,
    });
    await waitUntil(
      async () => {
        const res = await httpJson(`http://127.0.0.1:${admin}/deployments`, { body: { uri: `http://127.0.0.1:${endpointPort}` }, timeoutMs: 10_000 }).catch((e) => ({ status: 0, body: e.message }));
        return res.status >= 200 && res.status < 300;
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'the Restate deployment to register' },
    );
    const base = `http://127.0.0.1:${ingress}/BenchTwoStep/run`;
    await waitUntil(async () => (await httpJson(base, { body: JSON.stringify('probe'), timeoutMs: 10_000 }).catch(() => ({}))).status === 200, {
      timeoutMs: 60_000,
      intervalMs: 250,
      what: 'the first Restate invocation',
    });
    const version = runSync(bin, ['--version']).trim();
    const peer = {
      name: 'Restate',
      // Request-response: the answer arrives once the invocation completed and its result is durable.
      dispatchOne: async (id) => {
        const res = await httpJson(base, { body: JSON.stringify(id), timeoutMs: 300_000 });
        if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`);
        return now();
      },
      progress: async (clientDone) => clientDone.size,
      collect: async (clientDone) => {
        const { body } = await httpJson(`http://127.0.0.1:${statsPort}/stats`, { method: 'GET' });
        return { step1: body.step1, done: Object.fromEntries(clientDone) };
      },
      reset: () => httpJson(`http://127.0.0.1:${statsPort}/reset`, { method: 'GET' }),
    };
    // In flight at once: the invocations stay open until done, so allow more than Baton's 50 dispatchers.
    const result = await runPeer(peer, { ...settings, concurrency: settings.restateInFlight ?? 200 });
    return { ...result, version, inFlight: settings.restateInFlight ?? 200 };
  } finally {
    await stopChild(endpoint);
    await stopChild(server, { graceMs: 10_000 });
  }
}

// ---------------------------------------------------------------------------------------------
// DBOS on PostgreSQL

function findPgBin() {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  const versions = readdirSync(base).filter((v) => existsSync(join(base, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(base, versions[0], 'bin') : null;
}

/** PostgreSQL binaries, installing Debian's package if they are missing and we are root. */
function ensurePostgres(log) {
  let bin = findPgBin();
  if (bin) return { bin };
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) return { reason: 'PostgreSQL is not installed (run: apt-get update && apt-get install -y postgresql)' };
  log('  installing PostgreSQL (apt-get update && apt-get install -y postgresql)…');
  try {
    runSync('apt-get', ['update'], { timeout: 300_000 });
    runSync('apt-get', ['install', '-y', 'postgresql'], { timeout: 600_000, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  } catch (error) {
    return { reason: `apt-get install postgresql failed: ${error.message.split('\n').slice(0, 4).join(' ')}` };
  }
  bin = findPgBin();
  return bin ? { bin } : { reason: 'initdb not found under /usr/lib/postgresql/*/bin after installing postgresql' };
}

/** A throwaway cluster in a temp folder on a free 127.0.0.1 port (initdb refuses root: runs as postgres). */
async function startPostgres(bin, log) {
  const dir = tempDir('baton-bench-pg-');
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const as = (cmd, args) => (asRoot ? runSync('runuser', ['-u', 'postgres', '--', cmd, ...args]) : runSync(cmd, args));
  if (asRoot) {
    const pw = runSync('id', ['-u', 'postgres']).trim();
    const gr = runSync('id', ['-g', 'postgres']).trim();
    chownSync(dir, Number(pw), Number(gr));
  }
  as(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
  const port = await freePort();
  as(join(bin, 'pg_ctl'), ['-D', data, '-l', join(dir, 'postgres.log'), '-w', '-t', '60', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`, 'start']);
  onCleanupSync(() => {
    try {
      as(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } catch {
      /* not running */
    }
  });
  const version = runSync(join(bin, 'postgres'), ['--version']).trim();
  log(`  ${version} on 127.0.0.1:${port} (cluster in ${dir})`);
  return { port, version, stop: () => as(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop']) };
}

export async function dbosPeer(settings) {
  const { log } = settings;
  const pg = ensurePostgres(log);
  if (!pg.bin) return { available: false, reason: pg.reason };
  let cluster;
  try {
    cluster = await startPostgres(pg.bin, log);
  } catch (error) {
    return { available: false, reason: `could not start PostgreSQL: ${error.message.split('\n').slice(0, 6).join(' ')}` };
  }
  const port = await freePort();
  const app = spawnTracked(process.execPath, [join(PEERS, 'dbos-app.mjs')], {
    cwd: PEERS,
    env: { ...process.env, PORT: String(port), DBOS_SYSTEM_DATABASE_URL: `postgresql://postgres@127.0.0.1:${cluster.port}/baton_bench_dbos` },
  });
  try {
    await waitForOutput(app, /PEER_READY/, 120_000, 'DBOS app');
    const base = `http://127.0.0.1:${port}`;
    const peer = {
      name: 'DBOS',
      dispatchOne: async (id) => {
        const res = await httpJson(`${base}/dispatch`, { body: { id }, timeoutMs: 120_000 });
        if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`);
        return undefined;
      },
      progress: async () => (await httpJson(`${base}/count`, { method: 'GET' })).body.count,
      collect: async () => (await httpJson(`${base}/stats`, { method: 'GET' })).body,
      reset: () => httpJson(`${base}/reset`, { method: 'GET' }),
    };
    const result = await runPeer(peer, { ...settings, concurrency: settings.concurrency ?? 50 });
    const sdk = JSON.parse(runSync(process.execPath, ['-p', `JSON.stringify(require('${join(PEERS, 'node_modules/@dbos-inc/dbos-sdk/package.json')}').version)`]));
    return { ...result, version: `@dbos-inc/dbos-sdk ${sdk}, ${cluster.version}` };
  } finally {
    await stopChild(app, { graceMs: 10_000 });
    try {
      cluster.stop();
    } catch {
      /* the cleanup handler stops it */
    }
    await sleep(100);
  }
}
