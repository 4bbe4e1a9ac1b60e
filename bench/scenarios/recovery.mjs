// Scenario 4: (a) how fast a restarted service rebuilds its read models from a large store, and
// (b) how much memory the service needs to hold many waiting workflows.
//
// The large stores are generated, not replayed through the API: a short real run records template
// workflows (a completed two-step workflow, a waiting one, one completed by an event), then their
// rows are cloned straight into the SQLite schema with fresh UUIDs, which takes seconds for a
// million events. The mix is realistic because every row was written by Baton itself.
import Database from '../../dist/src/event-store/sqlite/better-sqlite3.js'; // the build that runs on this Node
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { APP, DISPATCH, ENV, SEND_EVENT, StoreReader, ROOT, dispatch, freshStoreFile, gql, startBaton, startWorker } from '../lib/baton.mjs';
import { httpJson, pool, sleep, summary, waitUntil } from '../lib/util.mjs';

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** Records template workflows with a real service and worker; returns their rows by kind. */
export async function recordTemplates(log) {
  const svc = await startBaton();
  const worker = await startWorker(svc, { concurrency: 10 });
  const reader = new StoreReader(svc.storeFile);
  try {
    for (let i = 0; i < 2; i++) await dispatch(svc, 'BenchTwoStep');
    const done = await dispatch(svc, 'BenchWaiter');
    await dispatch(svc, 'BenchWaiter');
    await waitUntil(() => reader.count('WorkflowCompleted', 0).n >= 2 && reader.count('DecisionCompleted', 0).n >= 2 * 3 + 2, {
      timeoutMs: 30_000,
      what: 'template workflows',
    });
    await gql(svc, SEND_EVENT, { input: { appId: APP, environment: ENV, selector: { id: done }, name: 'go', data: '[]' } });
    await waitUntil(() => reader.count('WorkflowCompleted', 0).n >= 3, { timeoutMs: 30_000, what: 'the template waiter to complete' });
    await sleep(200);
  } finally {
    reader.close();
    await worker.stop();
    await svc.stop();
  }
  const db = new Database(svc.storeFile, { readonly: true });
  const rows = db.prepare('SELECT stream_id, revision, event_id, type, data, metadata, recorded_at FROM events ORDER BY position').all();
  db.close();
  const streams = new Map();
  for (const row of rows) {
    if (!streams.has(row.stream_id)) streams.set(row.stream_id, []);
    streams.get(row.stream_id).push(row);
  }
  const base = rows.filter((r) => !r.stream_id.startsWith('workflow-'));
  // UUIDs that must stay as they are: token ids (the actor in every event's metadata).
  const keep = new Set(base.flatMap((r) => [...`${r.stream_id} ${r.data}`.matchAll(UUID)].map((m) => m[0])));
  const kinds = { twoStep: null, waiting: null, waiterDone: null };
  for (const [stream, events] of streams) {
    if (!stream.startsWith('workflow-')) continue;
    const name = JSON.parse(events[0].data).name;
    const completed = events.some((e) => e.type === 'WorkflowCompleted');
    if (name === 'BenchTwoStep' && completed) kinds.twoStep ??= events;
    if (name === 'BenchWaiter' && completed) kinds.waiterDone ??= events;
    if (name === 'BenchWaiter' && !completed) kinds.waiting ??= events;
  }
  for (const [k, v] of Object.entries(kinds)) if (!v) throw new Error(`no template for ${k}`);
  log(`  templates: two-step ${kinds.twoStep.length} events, waiting ${kinds.waiting.length}, completed by an event ${kinds.waiterDone.length}`);
  return { token: svc.token, base, keep, kinds: Object.fromEntries(Object.entries(kinds).map(([k, events]) => [k, compile(events, keep)])) };
}

/** Splits every text column of a template around its UUIDs, so a clone is a join with new ones. */
function compile(events, keep) {
  const ids = [];
  const index = new Map();
  const split = (text) => {
    const parts = [];
    let last = 0;
    for (const m of text.matchAll(UUID)) {
      if (keep.has(m[0])) continue;
      if (!index.has(m[0])) {
        index.set(m[0], ids.length);
        ids.push(m[0]);
      }
      parts.push(text.slice(last, m.index), index.get(m[0]));
      last = m.index + m[0].length;
    }
    parts.push(text.slice(last));
    return parts;
  };
  const t0 = events[0].recorded_at;
  return {
    size: events.length,
    rows: events.map((e) => ({
      stream: split(e.stream_id),
      revision: e.revision,
      eventId: split(e.event_id),
      type: e.type,
      data: split(e.data),
      metadata: split(e.metadata),
      offset: e.recorded_at - t0,
    })),
    get ids() {
      return ids;
    },
  };
}

const join = (parts, fresh) => {
  let s = parts[0];
  for (let i = 1; i < parts.length; i += 2) s += fresh[parts[i]] + parts[i + 1];
  return s;
};

/** UUID v7 strings (time-ordered, like Baton's own ids), generated from bulk random bytes. */
function uuidFactory() {
  let pool = randomBytes(0);
  let offset = 0;
  return () => {
    if (offset + 10 > pool.length) {
      pool = randomBytes(1 << 16);
      offset = 0;
    }
    const t = Date.now().toString(16).padStart(12, '0');
    const r = pool.toString('hex', offset, offset + 10);
    offset += 10;
    const variant = ((parseInt(r[3], 16) & 0x3) | 0x8).toString(16);
    return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${r.slice(0, 3)}-${variant}${r.slice(4, 7)}-${r.slice(7, 19)}`;
  };
}

/**
 * Writes a store of `targetEvents` events (or `workflows` workflows of one kind) from the templates,
 * through the same schema the adapter creates. Returns { file, events, workflows, bytes }.
 */
export async function generateStore(templates, { targetEvents, mix, workflows, label }) {
  const file = freshStoreFile(label);
  const { SqliteEventStore } = await import(`${ROOT}/dist/src/event-store/sqlite/sqlite-event-store.js`);
  await new SqliteEventStore(file).close(); // creates the schema exactly as Baton does
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const insert = db.prepare('INSERT INTO events (stream_id, revision, event_id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const uuid = uuidFactory();
  let events = 0;
  let count = 0;
  const startAt = Date.now() - 24 * 3600_000;
  const copyBase = db.transaction(() => {
    for (const r of templates.base) insert.run(r.stream_id, r.revision, r.event_id, r.type, r.data, r.metadata, r.recorded_at);
  });
  copyBase();
  events += templates.base.length;
  const order = mix.flatMap(([kind, weight]) => Array.from({ length: weight }, () => templates.kinds[kind]));
  const done = () => (workflows !== undefined ? count >= workflows : events >= targetEvents);
  const chunk = db.transaction(() => {
    for (let n = 0; n < 2000 && !done(); n++) {
      const t = order[count % order.length];
      const fresh = t.ids.map(() => uuid());
      const at = startAt + count;
      for (const row of t.rows) {
        insert.run(join(row.stream, fresh), row.revision, join(row.eventId, fresh), row.type, join(row.data, fresh), join(row.metadata, fresh), at + row.offset);
      }
      events += t.rows.length;
      count++;
    }
  });
  while (!done()) chunk();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  // On disk before any service opens it, as a store is when a service restarts. Left in the page
  // cache, the file's hundreds of MiB were written back during the started service's first fsync
  // (its first write starts the WAL, whose header is synced), and the first start measured that
  // too: 274 ms of it on a million events here.
  const fd = openSync(file, 'r');
  fsyncSync(fd);
  closeSync(fd);
  return { file, events, workflows: count, bytes: statSync(file).size };
}

const COUNT = 'query($f: WorkflowFilterInput!) { workflows(filter: $f, first: 1) { totalCount totalCountCapped } }';

/**
 * How many workflows of the filter the running service's read models hold. The API counts up to
 * 10,000 (`totalCountCapped`); past that the rows are counted in the file itself (the read models
 * live in the store's file), after the API answered, so its read fence has run.
 */
async function workflowsSeen(svc, token, file, state) {
  const data = await gql({ ...svc, token }, COUNT, { f: { appId: APP, environment: ENV, ...(state ? { state } : {}) } }).catch(() => null);
  if (!data) return null;
  if (!data.workflows.totalCountCapped) return data.workflows.totalCount;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const where = `app_id = ? AND environment = ?${state ? ' AND status = ?' : ''}`;
    return db.prepare(`SELECT count(*) AS n FROM rm_workflows WHERE ${where}`).get(APP, ENV, ...(state ? [state.toLowerCase()] : [])).n;
  } finally {
    db.close();
  }
}

/** Spawn → BATON_READY, and whether the restarted read models really hold the store's workflows. */
async function timeRestarts(file, runs, token) {
  const results = [];
  for (let r = 0; r < runs; r++) {
    const svc = await startBaton({ storeFile: file, logLevel: 'info', readyTimeoutMs: 600_000 });
    // A store that already has a token gets no new bootstrap token, unless its tokens were not rebuilt.
    const seen = await workflowsSeen(svc, svc.token || token, file);
    results.push({ readyMs: svc.readyMs, rebuild: svc.rebuild, newBootstrapToken: Boolean(svc.token), workflowsSeen: seen });
    await svc.stop();
  }
  return results;
}

async function memorySample(svc) {
  if (existsSync(svc.memFile)) rmSync(svc.memFile);
  process.kill(svc.child.pid, 'SIGUSR2');
  await waitUntil(() => existsSync(svc.memFile), { timeoutMs: 30_000, what: 'the memory probe' });
  await sleep(50);
  return JSON.parse(readFileSync(svc.memFile, 'utf8'));
}

/** The lower of two post-GC samples: the one least disturbed by background work. */
async function memory(svc) {
  const a = await memorySample(svc);
  await sleep(300);
  const b = await memorySample(svc);
  return b.heapUsed < a.heapUsed ? b : a;
}

/**
 * Memory of a service restarted on a generated store of `count` waiting workflows, against the same
 * service on a store with only its token (the idle baseline), both measured in this run.
 */
async function restartedMemory(templates, count) {
  const empty = await generateStore(templates, { workflows: 0, mix: [['waiting', 1]], label: 'mem-idle' });
  const waiting = await generateStore(templates, { workflows: count, mix: [['waiting', 1]], label: 'mem-waiting' });
  const measure = async (file, expected) => {
    const svc = await startBaton({ storeFile: file, memProbe: true, readyTimeoutMs: 600_000 });
    try {
      const seen = await workflowsSeen(svc, svc.token || templates.token, file, 'RUNNING');
      await sleep(1000);
      return { mem: await memory(svc), seen, ok: seen === expected && !svc.token };
    } finally {
      await svc.stop();
    }
  };
  const idle = await measure(empty.file, 0);
  const full = await measure(waiting.file, count);
  return { method: 'restart', workflows: count, storeEvents: waiting.events, idle: idle.mem, waiting: full.mem, complete: idle.ok && full.ok, workflowsSeen: full.seen };
}

/**
 * Memory of a service restarted on `count` completed workflows against an empty store: with the
 * read models on disk it should not grow with the number of finished workflows.
 */
async function completedMemory(templates, count, log) {
  const empty = await generateStore(templates, { workflows: 0, mix: [['twoStep', 1]], label: 'mem-empty' });
  const done = await generateStore(templates, { workflows: count, mix: [['twoStep', 1]], label: 'mem-completed' });
  const measure = async (file, expected) => {
    // First start folds the log (once); the second is the steady state measured.
    await (await startBaton({ storeFile: file, readyTimeoutMs: 600_000 })).stop();
    const svc = await startBaton({ storeFile: file, memProbe: true, readyTimeoutMs: 600_000 });
    try {
      const seen = await workflowsSeen(svc, svc.token || templates.token, file, 'COMPLETED');
      await sleep(1000);
      return { mem: await memory(svc), seen, expected };
    } finally {
      await svc.stop();
    }
  };
  const idle = await measure(empty.file, 0);
  const full = await measure(done.file, count);
  const mib = (x) => (x / 1048576).toFixed(1);
  log(`  memory with ${count.toLocaleString('en-US')} completed workflows (${done.events.toLocaleString('en-US')} events): heap ${mib(full.mem.heapUsed)} MiB rss ${mib(full.mem.rss)} MiB vs empty store heap ${mib(idle.mem.heapUsed)} MiB rss ${mib(idle.mem.rss)} MiB (seen ${full.seen})`);
  rmSync(done.file, { force: true });
  return { workflows: count, events: done.events, idle: idle.mem, completed: full.mem, seen: full.seen };
}

/**
 * Memory of one service process: idle (after start and a first request), then holding `count`
 * waiting workflows dispatched through the API and parked by a worker's first decision.
 */
async function liveMemory(count, log) {
  const svc = await startBaton({ memProbe: true });
  const worker = await startWorker(svc, { concurrency: 100 });
  const reader = new StoreReader(svc.storeFile);
  try {
    await gql(svc, '{ __typename }');
    await sleep(1000);
    const idle = await memory(svc);
    const body = JSON.stringify({ query: DISPATCH, variables: { input: { appId: APP, environment: ENV, name: 'BenchWaiter', input: '[]' } } });
    const headers = { authorization: `Bearer ${svc.token}` };
    const t0 = Date.now();
    const errors = await pool(count, 50, async () => {
      const res = await httpJson(`${svc.url}/graphql`, { body, headers });
      if (res.status !== 200 || !res.body?.data?.dispatchWorkflow?.id) throw new Error(`dispatch failed: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    });
    if (errors.length) throw errors[0];
    await waitUntil(() => reader.count('DecisionCompleted', 0).n >= count, { timeoutMs: Math.max(120_000, count * 20), intervalMs: 250, what: `${count} waiting workflows` });
    const setupSeconds = (Date.now() - t0) / 1000;
    await worker.stop();
    await sleep(1000);
    const waiting = await memory(svc);
    return { idle, waiting, setupSeconds, storeEvents: reader.head(), complete: true };
  } finally {
    reader.close();
    await worker.stop();
    await svc.stop();
  }
}

export async function recovery({ events, restartRuns, waitingWorkflows, liveFallbackWorkflows, log }) {
  const templates = await recordTemplates(log);
  const empty = await generateStore(templates, { workflows: 0, mix: [['twoStep', 1]], label: 'empty' });

  const genStart = Date.now();
  const big = await generateStore(templates, { targetEvents: events, mix: [['twoStep', 8], ['waiterDone', 1], ['waiting', 1]], label: 'recovery' });
  const genSeconds = (Date.now() - genStart) / 1000;
  log(`  generated ${big.events.toLocaleString('en-US')} events (${big.workflows.toLocaleString('en-US')} workflows, ${(big.bytes / 1048576).toFixed(0)} MiB) in ${genSeconds.toFixed(1)} s`);

  // The first start on a generated store folds the whole log into the durable read models (once,
  // as after an upgrade); the restarts after it resume from their checkpoint.
  const [emptyFirst] = await timeRestarts(empty.file, 1, templates.token);
  const [firstStart] = await timeRestarts(big.file, 1, templates.token);
  log(`  first start (whole log folded into the read models): ${firstStart.readyMs.toFixed(0)} ms on ${big.events.toLocaleString('en-US')} events; empty store ${emptyFirst.readyMs.toFixed(0)} ms`);
  const emptyRuns = await timeRestarts(empty.file, restartRuns, templates.token);
  const bigRuns = await timeRestarts(big.file, restartRuns, templates.token);
  const emptyReady = summary(emptyRuns.map((x) => x.readyMs));
  const bigReady = summary(bigRuns.map((x) => x.readyMs));
  const readModelsComplete = bigRuns.every((x) => x.workflowsSeen === big.workflows);
  log(`  start on an empty store ${emptyReady.median.toFixed(0)} ms; on ${big.events.toLocaleString('en-US')} events ${bigReady.median.toFixed(0)} ms (runs: ${bigRuns.map((x) => x.readyMs.toFixed(0)).join(', ')})`);
  if (!readModelsComplete) {
    log(`  WARNING: after the restart the API saw ${bigRuns.map((x) => x.workflowsSeen ?? 'no').join(', ')} of ${big.workflows} workflows` +
      `${bigRuns.some((x) => x.newBootstrapToken) ? ' and the stored token was unknown (a new bootstrap token was printed)' : ''}: the read models were not rebuilt, so this time covers reading the log, not projecting it`);
  }
  rmSync(big.file, { force: true });
  const completed = await completedMemory(templates, waitingWorkflows, log);

  // Memory: preferably a restarted service on a generated store of `waitingWorkflows` waiting
  // workflows (fast, any size); if its read models turn out empty, workflows parked live through the
  // API instead (slower, so `liveFallbackWorkflows` of them).
  let mem = await restartedMemory(templates, waitingWorkflows);
  if (!mem.complete) {
    log(`  restarted service on ${waitingWorkflows.toLocaleString('en-US')} waiting workflows saw ${mem.workflowsSeen ?? 'no'} of them: measuring ${liveFallbackWorkflows.toLocaleString('en-US')} workflows parked live through the API instead`);
    mem = { ...(await liveMemory(liveFallbackWorkflows, log)), method: 'live', workflows: liveFallbackWorkflows };
  }
  const perWorkflow = {
    heapUsed: (mem.waiting.heapUsed - mem.idle.heapUsed) / mem.workflows,
    rss: (mem.waiting.rss - mem.idle.rss) / mem.workflows,
  };
  const mib = (x) => (x / 1048576).toFixed(1);
  log(`  memory (${mem.method}): idle heap ${mib(mem.idle.heapUsed)} MiB rss ${mib(mem.idle.rss)} MiB; ${mem.workflows.toLocaleString('en-US')} waiting: heap ${mib(mem.waiting.heapUsed)} MiB rss ${mib(mem.waiting.rss)} MiB → ${perWorkflow.heapUsed.toFixed(0)} B heap, ${perWorkflow.rss.toFixed(0)} B rss per workflow`);

  return {
    store: { events: big.events, workflows: big.workflows, bytes: big.bytes, generateSeconds: genSeconds },
    emptyReadyMs: emptyReady,
    readyMs: bigReady,
    readModelsComplete,
    firstStartMs: firstStart.readyMs,
    emptyFirstStartMs: emptyFirst.readyMs,
    // The whole log folded into every read model once, net of what a start costs anyway.
    // Null when the start on the log was not slower than on an empty store (a noisy machine): no rate can be told.
    firstStartNetEventsPerSec: firstStart.readyMs > emptyFirst.readyMs ? big.events / ((firstStart.readyMs - emptyFirst.readyMs) / 1000) : null,
    firstStartLog: firstStart.rebuild,
    replayedOnRestart: bigRuns.map((x) => x.rebuild?.events ?? null),
    completedMemory: completed,
    eventsPerSec: summary(bigRuns.map((x) => big.events / (x.readyMs / 1000))),
    netEventsPerSec: summary(bigRuns.map((x) => big.events / ((x.readyMs - emptyReady.median) / 1000))),
    rebuildLogEventsPerSec: summary(bigRuns.filter((x) => x.rebuild).map((x) => x.rebuild.events / (x.rebuild.ms / 1000))),
    runs: { empty: emptyRuns, big: bigRuns },
    memory: { ...mem, perWorkflow },
    settings: { events, restartRuns, waitingWorkflows, liveFallbackWorkflows },
  };
}
