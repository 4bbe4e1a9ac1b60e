import { afterAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import Database from '../../src/event-store/sqlite/better-sqlite3.js';
import { createServer } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Engine, unique } from '../engine/engine-helpers.js';
import { ROOT, Service, startService } from '../support/service.js';
import { FixtureWorker, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';

function baton(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A port nothing listens on now (the restored instance must answer where the worker already points). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('a restore under a worker that kept running (docs/OPERATIONS.md, Backup and restore)', () => {
  const stopped: Array<Service | FixtureWorker> = [];
  afterAll(async () => {
    for (const s of stopped.reverse()) await s.stop();
  });

  it("the worker's held run (sticky execution) from after the backup is not replayed onto the restored history", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-restore-drain-'));
    const storeFile = join(dir, 'baton.db');
    const port = String(await freePort());
    const env = { PORT: port };
    const first = await startService({ storeUrl: `sqlite:${storeFile}`, env });
    const environment = unique('restore');
    const worker = await startWorker({ url: first.url, token: first.token, environment });
    stopped.push(worker);
    let engine = new Engine(first, environment);

    // Collector(2) takes two `item` events and returns their data in order.
    const id = await engine.dispatch('Collector', [2]);
    await engine.waitForEventType(id, 'DecisionCompleted');
    const backup = join(dir, 'backup.db');
    expect(baton(['backup', backup], { EVENT_STORE_URL: `sqlite:${storeFile}` }).code).toBe(0);

    // After the backup: `a` arrives and the worker decides on it (it holds the run past it).
    await engine.send({ id }, 'item', 'a');
    await engine.waitForHistory(id, (h) => h.filter((e) => e.type === 'DecisionCompleted').length === 2, 'the decision on `a`');
    await first.stop();

    // Restore as documented: instances stopped, the old files moved aside, the backup copied in.
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${storeFile}${suffix}`, { force: true });
    copyFileSync(backup, storeFile);
    const restored = await startService({ storeUrl: `sqlite:${storeFile}`, env });
    stopped.push(restored);
    engine = new Engine(restored, environment, first.token);
    expect(JSON.stringify((await engine.history(id)).map((e) => e.data))).not.toContain('"a"');

    // The restored workflow has not seen `a`: it takes `b` and `c`.
    await engine.send({ id }, 'item', 'b');
    await engine.waitForHistory(id, (h) => h.filter((e) => e.type === 'DecisionCompleted').length === 2, 'the decision on `b`');
    await engine.send({ id }, 'item', 'c');
    const done = await engine.waitForState(id);
    expect(done.result).toEqual(['b', 'c']);

    // And its history replays against the code that made it.
    await restored.stop();
    stopped.pop();
    const replay = baton(['replay', 'dist/test/support/fixtures/workflows.js', id], { EVENT_STORE_URL: `sqlite:${storeFile}` });
    expect({ code: replay.code, out: replay.stdout + replay.stderr }).toEqual({ code: 0, out: expect.stringMatching(/OK/) });
  }, 90_000);
});

/**
 * Stops the service (SIGTERM), expects a clean exit (code 0, "stopped in … ms"), and answers how
 * many `operation` requests its log shows from the start of the drain on.
 */
async function stopAndCountWhileDraining(service: Service, operation: string): Promise<number> {
  await service.stop();
  expect({ code: service.process.exitCode, stopped: /stopped in \d+ ms/.test(service.messages()) }).toEqual({ code: 0, stopped: true });
  const lines = service.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg?: string; operation?: string });
  const drainingAt = lines.findIndex((l) => /^draining/.test(l.msg ?? ''));
  expect(drainingAt).toBeGreaterThan(-1);
  return lines.slice(drainingAt).filter((l) => l.operation === operation).length;
}

/**
 * One instance drains for SHUTDOWN_DELAY_MS with both clients the two describes below are about
 * parked on it: a worker's polls (environment `drain-poll`) and a client's awaitWorkflow on a
 * workflow no worker runs (environment `drain-await`). Each counts only its own operation from the
 * start of the drain on. Set up and stopped by the first test that asks for it.
 */
let drain: Promise<{ service: Service; worker: FixtureWorker; waiting: Promise<unknown> }> | undefined;
const drained = (): Promise<{ service: Service; worker: FixtureWorker; waiting: Promise<unknown> }> =>
  (drain ??= (async () => {
    const service = await startService({ env: { SHUTDOWN_DELAY_MS: '3000', SHUTDOWN_GRACE_MS: '10000', LOG_LEVEL: 'info' } });
    const worker = await startWorker({ url: service.url, token: service.token, environment: unique('drain-poll') });
    // Parked: the worker's polls wait for work (up to their waitMs), nothing hurries them.
    await waitFor(async () => /baton_long_polls_parked [1-9]/.test(await (await fetch(`${service.url}/metrics`)).text()), { timeoutMs: 15_000, description: "the worker's polls to park" });
    const engine = new Engine(service, unique('drain-await'));
    const id = await engine.dispatch('Noop'); // no worker of its environment: it stays running
    // The SDK's awaitWorkflow asks again whenever an answer comes back with the workflow still running.
    const waiting = engine.client.awaitWorkflow('demo', engine.environment, id, { timeoutMs: 8_000 }).catch(() => null);
    await waitFor(async () => /baton_await_workflow_waiting 1\b/.test(await (await fetch(`${service.url}/metrics`)).text()), { timeoutMs: 10_000, description: 'the await to park' });
    return { service, worker, waiting };
  })());

afterAll(async () => {
  const setUp = await drain?.catch(() => undefined);
  await setUp?.worker.stop();
  await setUp?.service.stop();
});

describe('a worker polling an instance that drains for SHUTDOWN_DELAY_MS', () => {
  it('is not answered empty at once poll after poll (a busy loop of polls for the whole delay)', async () => {
    const { service } = await drained();
    // Within SHUTDOWN_GRACE_MS, exit code 0: the polls that waited were answered when it closed.
    const pollsWhileDraining = await stopAndCountWhileDraining(service, 'pollWork');
    // Two pollers (decisions, tasks); each parked poll is answered once, and a poll again gets no
    // hurried answer: a few, not one per round trip for 3 s.
    expect(pollsWhileDraining).toBeLessThan(20);
  }, 60_000);
});

describe('a client awaiting a result from an instance that drains for SHUTDOWN_DELAY_MS', () => {
  it('is not answered at once, await after await, for the whole delay', async () => {
    const { service, waiting } = await drained();
    const awaitsWhileDraining = await stopAndCountWhileDraining(service, 'awaitWorkflow');
    // The parked one is answered at drain, the next waits for the close: a few, not hundreds.
    expect(awaitsWhileDraining).toBeLessThan(10);
    await waiting;
  }, 60_000);
});

describe('retention swept by two instances on one store at once', () => {
  const stopped: Array<Service | FixtureWorker> = [];
  afterAll(async () => {
    for (const s of stopped.reverse()) await s.stop();
  });

  it('baton_retention_workflows_deleted_total counts each deletion once, on the instance that made it', async () => {
    // 0.00002 days = 1.7 s; both instances sweep every 100 ms.
    const env = { RETENTION_DAYS: '0.00002', RETENTION_SWEEP_MS: '100', LOG_LEVEL: 'info' };
    const storeUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'baton-restore-drain-')), 'baton.db')}`;
    const a = await startService({ storeUrl, env });
    stopped.push(a);
    const b = await startService({ storeUrl, env });
    stopped.push(b);
    const environment = unique('retention-two');
    const worker = await startWorker({ url: a.url, token: a.token, environment });
    stopped.push(worker);
    const engine = new Engine(a, environment);
    const ids: string[] = [];
    for (let round = 0; round < 8; round++) ids.push(...(await Promise.all(Array.from({ length: 25 }, () => engine.dispatch('Noop')))));
    await waitFor(async () => (await Promise.all(ids.map((id) => engine.client.workflow('demo', environment, id)))).every((w) => w === null), {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: 'every workflow to be deleted',
    });
    const counted = async (s: Service) => Number(/^baton_retention_workflows_deleted_total (\d+)/m.exec(await (await fetch(`${s.url}/metrics`)).text())?.[1] ?? 0);
    expect((await counted(a)) + (await counted(b))).toBe(ids.length);
  }, 90_000);
});

describe('start-up with an EventStoreDB connection string the client cannot read', () => {
  it.each([['esdb://localhost:2113?tls=maybe'], ['esdb://'], ['kurrentdb://localhost:2113?nodePreference=nearest']])(
    'EVENT_STORE_URL=%s: exit 2 naming the variable, no stack trace (README, Configuration)',
    (url) => {
      const result = spawnSync(process.execPath, [join(ROOT, 'dist/src/main.js')], {
        cwd: ROOT,
        env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', BATON_EXAMPLE_WORKER: 'false', EVENT_STORE_URL: url },
        encoding: 'utf8',
        timeout: 30_000,
      });
      const out = `${result.stdout}${result.stderr}`;
      expect({ code: result.status, out }).toEqual({ code: 2, out: expect.stringContaining(`EVENT_STORE_URL=`) });
      expect(out).not.toMatch(/\n\s+at /);
    },
  );
});

describe('SIGTERM while a retention sweep is deleting', () => {
  const stopped: Array<Service | FixtureWorker> = [];
  afterAll(async () => {
    for (const s of stopped.reverse()) await s.stop();
  });

  /** Workflow rows of the read models whose stream has no event left: deleted, never dropped. */
  const ghosts = (storeUrl: string): { streams: number; ghosts: number } => {
    const db = new Database(storeUrl.slice('sqlite:'.length), { readonly: true });
    try {
      const streams = (db.prepare(`SELECT count(DISTINCT stream_id) AS n FROM events WHERE stream_id LIKE 'workflow-%'`).get() as { n: number }).n;
      const left = (db.prepare(`SELECT count(*) AS n FROM rm_workflows w WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.stream_id = 'workflow-' || w.id)`).get() as { n: number }).n;
      return { streams, ghosts: left };
    } finally {
      db.close();
    }
  };

  it('leaves no workflow in the read models whose stream it deleted', async () => {
    const first = await startService();
    const environment = unique('retention-sigterm');
    const worker = await startWorker({ url: first.url, token: first.token, environment, concurrency: 50 });
    const engine = new Engine(first, environment);
    const ids: string[] = [];
    for (let round = 0; round < 30; round++) ids.push(...(await Promise.all(Array.from({ length: 50 }, () => engine.dispatch('Noop')))));
    await waitFor(async () => (await first.gql<{ workflows: { totalCount: number } }>('query($e: String!) { workflows(filter: { appId: "demo", environment: $e, state: COMPLETED }) { totalCount } }', { e: environment })).body.data?.workflows.totalCount === ids.length, {
      timeoutMs: 60_000,
      intervalMs: 250,
      description: 'every workflow to complete',
    });
    await worker.stop();
    await first.stop();

    // 1,500 finished workflows older than 0.86 s: the first sweep, 300 ms after the start, has three batches to delete.
    const second = await startService({ storeUrl: first.storeUrl, env: { RETENTION_DAYS: '0.00001', RETENTION_SWEEP_MS: '300' } });
    stopped.push(second);
    await waitFor(() => ghosts(second.storeUrl).streams < ids.length - 50, { timeoutMs: 20_000, intervalMs: 5, description: 'the sweep to be deleting' });
    await second.stop();
    stopped.pop();
    // Restarted (retention off), the read models have folded all the log holds.
    const third = await startService({ storeUrl: first.storeUrl });
    await third.stop();
    expect(ghosts(third.storeUrl).ghosts).toBe(0);
  }, 150_000);
});

describe('OpenTelemetry on (OTEL_EXPORTER_OTLP_ENDPOINT), against a collector that records what it is sent', () => {
  const received: Array<{ path: string; body: string }> = [];
  const collector = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  let service: Service | undefined;
  afterAll(async () => {
    await service?.stop();
    await new Promise<void>((resolve) => collector.close(() => resolve()));
  });

  it('exports traces (OTEL_RESOURCE_ATTRIBUTES service.name applies), not metrics or logs of its own as well', async () => {
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const { port } = collector.address() as { port: number };
    service = await startService({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_RESOURCE_ATTRIBUTES: 'service.name=orders-baton,deployment.environment=test',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_METRIC_EXPORT_INTERVAL: '100',
        OTEL_BLRP_SCHEDULE_DELAY: '100',
      },
    });
    // Two batches of spans, each after a request: the metrics reader (every 100 ms) had time to export too.
    for (let batch = 1; batch <= 2; batch++) {
      await service.gql('{ __typename }');
      await waitFor(() => received.filter((r) => r.path === '/v1/traces').length >= batch, { timeoutMs: 10_000, description: `trace batch ${batch}` });
    }
    const trace = JSON.parse(received.find((r) => r.path === '/v1/traces')!.body) as { resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> } }> };
    const attributes = Object.fromEntries(trace.resourceSpans[0].resource.attributes.map((a) => [a.key, a.value.stringValue]));
    expect([...new Set(received.map((r) => r.path))]).toEqual(['/v1/traces']);
    expect(attributes).toMatchObject({ 'service.name': 'orders-baton', 'deployment.environment': 'test' });
  }, 60_000);
});

describe('baton replay --all with a module that defines no workflow', () => {
  it('is refused (exit 2, naming the module), not a pass that checked nothing', async () => {
    const service = await startService();
    const environment = unique('replay-none');
    const worker = await startWorker({ url: service.url, token: service.token, environment });
    const engine = new Engine(service, environment);
    await engine.waitForState(await engine.dispatch('Sequential', ['x']));
    await worker.stop();
    await service.stop();

    // A path to the wrong file (or an index that re-exports nothing by name): a module, no definitions.
    const empty = join(mkdtempSync(join(tmpdir(), 'baton-restore-drain-')), 'index.mjs');
    writeFileSync(empty, 'export const version = 1;\n');
    const replay = baton(['replay', empty, '--all'], { EVENT_STORE_URL: service.storeUrl });
    expect({ code: replay.code, stderr: replay.stderr }).toEqual({ code: 2, stderr: expect.stringContaining(empty) });
    expect(replay.stdout).not.toMatch(/0 NON_DETERMINISTIC/);
  }, 60_000);
});
