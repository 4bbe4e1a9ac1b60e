/**
 * The operator CLI (`baton`): what an operator or an auditor meets at its edges.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEventStore } from '../../src/event-store/create-event-store.js';
import Database from '../../src/event-store/sqlite/better-sqlite3.js';
import { ROOT, Service, startService } from '../support/service.js';
import { Engine, unique } from '../engine/engine-helpers.js';
import { FIXTURES_MODULE, FixtureWorker, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';

function baton(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('baton CLI (review)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-review-cli-'));
  const store = `sqlite:${join(dir, 'store.db')}`;
  let tokenId: string;
  let token: string;

  beforeAll(() => {
    const created = baton(['tokens', 'create', '--app', 'shop', '--store', store, '--create']);
    expect(created.code).toBe(0);
    token = created.stdout.trim().split('\n').pop()!;
    tokenId = /^Token (\S+)/.exec(created.stdout)![1];
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // The store commands use EVENT_STORE_URL (or --store) alone; the service's other settings are
  // not theirs. An operator's shell (LOG_LEVEL=trace for another tool) or a setting only the
  // service checks against another (SHUTDOWN_DELAY_MS past the default grace) locked every
  // command out, with "Invalid configuration" about a setting it never reads.
  it.each([
    ['LOG_LEVEL', 'trace'],
    ['PORT', 'http'],
    ['SHUTDOWN_DELAY_MS', '30000'],
  ])('store commands run whatever the service setting %s=%s', (name, value) => {
    const env = { [name]: value };
    const list = baton(['tokens', 'list', '--store', store], env);
    expect({ code: list.code, stderr: list.stderr }).toEqual({ code: 0, stderr: '' });
    expect(list.stdout).toContain(tokenId);
    const events = baton(['events', '--limit', '1', '--store', store], env);
    expect(events.code).toBe(0);
    expect(events.stdout).toContain('ApiTokenCreated');
  });
  // An operator with the token at hand passes it instead of its id: the error printed the secret
  // back on stderr (CI logs, terminal scrollback, shell transcripts), and an id in capitals (as
  // the API reads UUIDs) was "no token" though the token exists.
  it('tokens revoke given the token itself does not print its secret', () => {
    const revoke = baton(['tokens', 'revoke', token, '--store', store]);
    expect(revoke.stdout + revoke.stderr).not.toContain(token.split('_').pop()!);
    expect(revoke.code).toBe(2);
    expect(revoke.stderr).toContain(tokenId);
  });

  it('tokens revoke takes the id in either case', () => {
    const revoke = baton(['tokens', 'revoke', tokenId.toUpperCase(), '--store', store]);
    expect({ code: revoke.code, stdout: revoke.stdout }).toEqual({ code: 0, stdout: `Token ${tokenId} revoked.\n` });
    expect(baton(['tokens', 'list', '--store', store]).stdout).toMatch(new RegExp(`^${tokenId}  revoked `));
  });
});

/**
 * `baton backup` stopped by a signal (Ctrl-C, a cron job's timeout, a pod's SIGTERM): it writes
 * `<file>.partial-<pid>` (and SQLite's -journal beside it) and renames it once checked, but an
 * interrupted run left both behind, as large as the store, one pair per attempt.
 */
describe('baton backup interrupted', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-review-cli-backup-'));
  const store = `sqlite:${join(dir, 'store.db')}`;
  const out = join(dir, 'backups');

  beforeAll(async () => {
    const s = await createEventStore(store);
    try {
      const meta = { actor: 'test', appId: 'demo', environment: 'cli', correlationId: 'c' };
      const pad = 'x'.repeat(2000);
      for (let i = 0; i < 50; i++) {
        await s.append(`task-${randomUUID()}`, Array.from({ length: 1000 }, (_, k) => ({ id: randomUUID(), type: 'TaskDispatched', data: { n: i * 1000 + k, pad }, metadata: meta })));
      }
    } finally {
      await s.close();
    }
    mkdirSync(out);
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['SIGINT', 'SIGTERM'] as const)('by %s leaves no partial copy, and the copy it was to replace as it was', async (signal) => {
    const target = join(out, `baton-${signal}.db`);
    // A copy that finished before the signal came proves nothing: tried again (a few times at most).
    let child: ReturnType<typeof spawn>;
    let code: number | null = 0;
    for (let attempt = 0; attempt < 5 && code === 0; attempt++) {
      writeFileSync(target, 'the previous backup');
      child = spawn(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), 'backup', target, '--force', '--store', store], { cwd: ROOT, stdio: 'ignore' });
      const exited = new Promise<number | null>((resolve) => child.once('exit', (c, sig) => resolve(c ?? (sig ? 128 : null))));
      await waitFor(() => readdirSync(out).some((f) => f.startsWith(`baton-${signal}.db.partial-`)), { timeoutMs: 30_000, intervalMs: 1, description: 'the partial copy' });
      child.kill(signal);
      code = await exited;
    }
    expect(code).not.toBe(0);
    await waitFor(() => !existsSync(`/proc/${child!.pid}`), { timeoutMs: 30_000 });
    expect(readdirSync(out).filter((f) => f.startsWith(`baton-${signal}.db`))).toEqual([`baton-${signal}.db`]);
    expect(readFileSync(target, 'utf8')).toBe('the previous backup');
  }, 60_000);
});

/**
 * A SQLite file that is not an event store (an instance's read-model file, READ_MODEL_PATH, the
 * likeliest next to a store URL): the CLI's check that a mistyped path does not silently become
 * a new store passed it, because it exists, and every command then wrote the store's tables
 * into it; `tokens create` issued a token there, which no instance ever reads, exit code 0.
 */
describe('baton on a SQLite file that is not an event store', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-review-cli-foreign-'));
  const file = join(dir, 'read-models-host.db');
  const tables = () => {
    const db = new Database(file, { readonly: true });
    try {
      return db.prepare<[], { name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).all().map((t) => t.name);
    } finally {
      db.close();
    }
  };

  beforeAll(() => {
    const db = new Database(file);
    db.exec('CREATE TABLE rm_checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL); CREATE TABLE rm_workflows (id TEXT PRIMARY KEY)');
    db.close();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    [['tokens', 'create', '--app', 'shop']],
    [['tokens', 'create', '--app', 'shop', '--create']],
    [['tokens', 'list']],
    [['events']],
  ])('%j is refused, naming the file, and adds nothing to it', (args) => {
    const result = baton([...args, '--store', `sqlite:${file}`]);
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 2, stdout: '' });
    expect(result.stderr).toContain(file);
    expect(tables()).toEqual(['rm_checkpoints', 'rm_workflows']);
  });
});

/**
 * Workflow ids are UUIDs, stored in lower case; the API reads them in either case (README), and
 * an id copied from another tool (a log, a spreadsheet) may come in capitals: `baton history`
 * answered "no workflow" for a workflow that is there.
 */
describe('baton history with an id in capitals', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-review-cli-case-'));
  const store = `sqlite:${join(dir, 'store.db')}`;
  const workflowId = '01a20000-0000-7000-8000-0000000000ab';

  beforeAll(async () => {
    const s = await createEventStore(store);
    try {
      const meta = { actor: 'test', appId: 'demo', environment: 'cli', correlationId: 'c' };
      await s.append(`workflow-${workflowId}`, [{ id: randomUUID(), type: 'WorkflowDispatched', data: { workflowId, name: 'Shape' }, metadata: meta }]);
    } finally {
      await s.close();
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints the history of the workflow', () => {
    const result = baton(['history', workflowId.toUpperCase(), '--json', '--store', store]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(result.stdout.trim())).toMatchObject({ streamId: `workflow-${workflowId}`, type: 'WorkflowDispatched' });
  });
});

/**
 * `replay --all --name`: a dispatch of `Versioned` runs the highest version a worker serves
 * (`Versioned_v2`), so an operator who changed `Versioned_v2` asks for `--name Versioned_v2`.
 * That matched only dispatches made under that exact name: none, "replayed 0 workflows", exit
 * code 0, the changed code checked against nothing. And `--name Versioned` left out workflows
 * dispatched under an explicit version (`Versioned_v1`).
 */
describe('baton replay --all --name with versioned workflows', () => {
  let service: Service;
  let worker: FixtureWorker;

  beforeAll(async () => {
    service = await startService();
    const environment = unique('cli-versions');
    worker = await startWorker({ url: service.url, token: service.token, environment });
    const engine = new Engine(service, environment);
    const latest = await engine.dispatch('Versioned');
    const pinned = await engine.dispatch('Versioned_v1');
    for (const id of [latest, pinned]) await engine.waitForEventType(id, 'DecisionCompleted');
    expect((await engine.workflow(latest)).version).toBe('Versioned_v2');
    await worker.stop();
    await service.stop();
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await service?.stop();
  });

  it.each([
    ['Versioned_v2', 1],
    ['Versioned_v1', 1],
    ['Versioned', 2],
  ])('--name %s checks the %d workflow(s) running that workflow', (name, count) => {
    const result = baton(['replay', FIXTURES_MODULE, '--all', '--name', name, '--store', service.storeUrl]);
    expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 0, stdout: expect.stringContaining(`replayed ${count} workflows: ${count} OK, 0 NON_DETERMINISTIC`) });
  });
});
