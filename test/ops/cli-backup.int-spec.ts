import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APP, Engine, unique } from '../engine/engine-helpers.js';
import { ROOT, Service, freshStoreUrl, startService } from '../support/service.js';
import Database from '../../src/event-store/sqlite/better-sqlite3.js';
import { readModelRows } from '../support/read-model-rows.js';
import { waitFor } from '../support/wait-for.js';
import { FIXTURES_MODULE, FixtureWorker, startWorker } from '../support/worker.js';

function baton(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** `baton` without blocking this process (which keeps a load going meanwhile); killed after `timeoutMs`. */
function batonAsync(args: string[], env: Record<string, string>, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), ...args], { cwd: ROOT, env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/**
 * A store as `baton tokens create --app demo --create` leaves it (one event: a token for app
 * `demo`), made once by the CLI and copied to `file` for each test that starts from one.
 */
let demoStore: string | undefined;
function storeWithDemoToken(file: string): void {
  if (!demoStore) {
    const made = join(mkdtempSync(join(tmpdir(), 'baton-cli-')), 'demo.db');
    expect(baton(['tokens', 'create', '--app', 'demo', '--create'], { EVENT_STORE_URL: `sqlite:${made}` }).code).toBe(0);
    demoStore = made;
  }
  copyFileSync(demoStore, file);
}

const DISPATCH = 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }';

const VERSION = (await import('../../package.json', { with: { type: 'json' } })).default.version;

describe('baton CLI', () => {
  it('answers --help and --version on every command', () => {
    const commands = [[], ['tokens'], ['tokens', 'create'], ['tokens', 'list'], ['tokens', 'revoke'], ['worker'], ['history'], ['replay'], ['backup'], ['rebuild']];
    const helps = new Map<string, string>();
    for (const c of commands) {
      const help = baton([...c, '--help']);
      helps.set(c.join(' '), help.stdout);
      expect({ c, code: help.code }).toEqual({ c, code: 0 });
      expect(help.stdout).toMatch(new RegExp(`^Usage: baton${c.length ? ` ${c.join(' ')}` : ''}`));
      const version = baton([...c, '--version']);
      expect({ c, code: version.code, out: version.stdout.trim() }).toEqual({ c, code: 0, out: VERSION });
    }
    expect(helps.get('history')).not.toMatch(/no workflow/);
  });

  it('refuses a SQLite store path that does not exist unless --create is given', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'baton-cli-')), 'typo.db');
    const refused = baton(['tokens', 'list'], { EVENT_STORE_URL: `sqlite:${file}` });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`no event store at ${file}`);
    expect(refused.stderr).toContain('--create');
    expect(existsSync(file)).toBe(false);
    const created = baton(['tokens', 'create', '--app', 'demo', '--store', `sqlite:${file}`, '--create']);
    expect(created.code).toBe(0);
    expect(created.stdout.trim().split('\n').pop()).toMatch(/^baton_/);
    expect(baton(['tokens', 'list', '--store', `sqlite:${file}`]).stdout).toMatch(/active +role=admin +apps=demo/);
  });

  it('tokens: refuses an app or environment the API would refuse, and names an unknown token (exit 2)', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'baton-cli-')), 'baton.db');
    const env = { EVENT_STORE_URL: `sqlite:${file}` };
    storeWithDemoToken(file);
    for (const [args, option] of [
      [['--app', ''], '--app'],
      [['--app', 'x'.repeat(129)], '--app'],
      [['--app', 'de\nmo'], '--app'],
      [['--app', 'demo', '--env', ''], '--env'],
      [['--app', 'demo', '--env', 'prod\u0007'], '--env'],
    ] as const) {
      const refused = baton(['tokens', 'create', ...args], env);
      expect({ args, code: refused.code }).toEqual({ args, code: 2 });
      expect(refused.stderr).toContain(option);
      expect(refused.stderr).toMatch(/1 to 128 characters, no control characters/);
    }
    expect(baton(['tokens', 'list'], env).stdout.trim().split('\n')).toHaveLength(1);
    const unknown = baton(['tokens', 'revoke', 'no-such-token'], env);
    expect(unknown).toMatchObject({ code: 2, stderr: 'error: no token no-such-token in this store (baton tokens list shows them)\n' });
  });

  it('worker: refuses a flag value it cannot use, naming the flag (exit 2, before connecting)', () => {
    const worker = (...flags: string[]) => baton(['worker', FIXTURES_MODULE, '--url', 'http://127.0.0.1:9', '--token', 'x', '--app', 'demo', '--env', 'dev', ...flags]);
    for (const [flag, value] of [
      ['--heartbeat-ms', '0'],
      ['--heartbeat-ms', 'abc'],
      ['--heartbeat-ms', '-5'],
      ['--shutdown-grace-ms', '-5'],
      ['--shutdown-grace-ms', '1e99'],
      ['--max-cached-workflows', 'abc'],
      ['--max-cached-workflows', '-1'],
      ['--url', 'notaurl'],
      ['--url', 'ftp://example.com'],
    ]) {
      const refused = worker(flag, value);
      expect({ flag, value, code: refused.code }).toEqual({ flag, value, code: 2 });
      expect(refused.stderr).toContain(`${flag} `);
      expect(refused.stderr).toContain(JSON.stringify(value));
      expect(refused.stdout).not.toContain('BATON_WORKER_READY');
    }
  });

  it('refuses a SQLite store path that is a directory, or under a file, naming it (exit 2)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-cli-'));
    for (const command of [['tokens', 'list'], ['history', 'some-id'], ['events'], ['backup', join(dir, 'copy.db')], ['rebuild']]) {
      const refused = baton(command, { EVENT_STORE_URL: `sqlite:${dir}` });
      expect({ command, code: refused.code }).toEqual({ command, code: 2 });
      expect(refused.stderr).toContain(`${dir} is a directory, not an event store`);
    }
    writeFileSync(join(dir, 'plain'), 'a file');
    const created = baton(['tokens', 'create', '--app', 'demo', '--create'], { EVENT_STORE_URL: `sqlite:${join(dir, 'plain', 'x.db')}` });
    expect(created.code).toBe(2);
    expect(created.stderr).toContain(`${join(dir, 'plain')} is not a directory`);
    expect(created.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('baton backup, restored into a fresh instance', () => {
  const stopped: Array<Service | FixtureWorker> = [];
  afterAll(async () => {
    for (const s of stopped) await s.stop();
  });

  it('copies a running store online; a new instance on the copy has every workflow in the same state', async () => {
    const service = await startService();
    stopped.push(service);
    const environment = unique('backup');
    const worker = await startWorker({ url: service.url, token: service.token, environment });
    stopped.push(worker);
    const engine = new Engine(service, environment);
    const done = await Promise.all(Array.from({ length: 8 }, (_, i) => engine.dispatch('Sequential', [`b${i}`])));
    for (const id of done) await engine.waitForState(id);
    const waiting = await engine.dispatch('Waiter', ['never', 600_000]);
    await engine.waitForHistory(waiting, (h) => h.some((e) => e.type === 'DecisionCompleted'), 'the waiter to park');
    await worker.stop();

    const target = join(mkdtempSync(join(tmpdir(), 'baton-backup-')), 'copy.db');
    const backup = baton(['backup', target], { EVENT_STORE_URL: service.storeUrl });
    expect(backup).toMatchObject({ code: 0, stdout: expect.stringMatching(/^backup of .* written to .*copy\.db: \d+ events up to position \d+/) });
    expect(baton(['backup', target], { EVENT_STORE_URL: service.storeUrl }).stderr).toMatch(/exists; pass --force/);

    const restored = await startService({ storeUrl: `sqlite:${target}` });
    stopped.push(restored);
    const fresh = new Engine(restored, environment, service.token);
    for (const id of [...done, waiting]) {
      const [a, b] = await Promise.all([engine.workflow(id), fresh.workflow(id)]);
      expect(b).toEqual(a);
      expect((await fresh.history(id)).length).toBe((await engine.history(id)).length);
    }
    expect((await fresh.workflow(waiting)).state).toBe('RUNNING');

    // The restored store replays against the code that made it.
    const replay = baton(['replay', FIXTURES_MODULE, '--all', '--name', 'Sequential'], { EVENT_STORE_URL: `sqlite:${target}` });
    expect(replay.stdout).toMatch(/replayed \d+ workflows: \d+ OK, 0 NON_DETERMINISTIC/);
    expect(replay.code).toBe(0);
  });
});

describe('baton backup onto the store itself', () => {
  it('refuses, even with --force, and the store is intact', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-cli-'));
    const file = join(dir, 'baton.db');
    storeWithDemoToken(file);
    for (const target of [file, `${file}-wal`, `${file}-shm`, join(dir, '.', 'baton.db')]) {
      const refused = baton(['backup', target, '--force'], { EVENT_STORE_URL: `sqlite:${file}` });
      expect({ target, code: refused.code }).toEqual({ target, code: 2 });
      expect(refused.stderr).toMatch(/is the store itself/);
    }
    expect(baton(['tokens', 'list'], { EVENT_STORE_URL: `sqlite:${file}` }).stdout).toMatch(/active +role=admin +apps=demo/);
  });

  it('keeps the old copy when a --force backup fails', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-cli-'));
    const file = join(dir, 'baton.db');
    storeWithDemoToken(file);
    const old = join(dir, 'old-copy.db');
    expect(baton(['backup', old], { EVENT_STORE_URL: `sqlite:${file}` }).code).toBe(0);
    // The store is not a database: the backup fails, and the copy it was to replace stays.
    const broken = join(dir, 'broken.db');
    writeFileSync(broken, 'not a database, but long enough to be read as one '.repeat(200));
    const failed = baton(['backup', old, '--force'], { EVENT_STORE_URL: `sqlite:${broken}` });
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).not.toMatch(/\n\s+at /);
    expect(baton(['tokens', 'list'], { EVENT_STORE_URL: `sqlite:${old}` }).stdout).toMatch(/active +role=admin +apps=demo/);
  });
});

describe('baton backup leaves the backup alone beside it', () => {
  it('no -wal, -shm or .partial files after a backup, a --force backup or a failed one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-cli-'));
    const file = join(dir, 'baton.db');
    storeWithDemoToken(file);
    const out = join(dir, 'backups');
    mkdirSync(out);
    const target = join(out, 'copy.db');
    expect(baton(['backup', target], { EVENT_STORE_URL: `sqlite:${file}` }).code).toBe(0);
    expect(readdirSync(out)).toEqual(['copy.db']);
    expect(baton(['backup', target, '--force'], { EVENT_STORE_URL: `sqlite:${file}` }).code).toBe(0);
    expect(readdirSync(out)).toEqual(['copy.db']);
    const broken = join(dir, 'broken.db');
    writeFileSync(broken, 'not a database, but long enough to be read as one '.repeat(200));
    expect(baton(['backup', target, '--force'], { EVENT_STORE_URL: `sqlite:${broken}` }).code).not.toBe(0);
    expect(readdirSync(out)).toEqual(['copy.db']);
  });

  it('a --force backup is not read through the write-ahead log the copy it replaces left behind', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-cli-'));
    const file = join(dir, 'baton.db');
    const env = { EVENT_STORE_URL: `sqlite:${file}` };
    storeWithDemoToken(file);
    const target = join(dir, 'copy.db');
    expect(baton(['backup', target], env).code).toBe(0);
    // Someone opened the old copy and wrote to it; its -wal outlived them (a crash, a copy of the directory).
    const old = new Database(target);
    old.pragma('journal_mode = WAL');
    old.pragma('wal_autocheckpoint = 0');
    old.exec("CREATE TABLE scribbles (x TEXT); INSERT INTO scribbles VALUES ('old copy')");
    copyFileSync(`${target}-wal`, join(dir, 'stale-wal'));
    old.close();
    copyFileSync(join(dir, 'stale-wal'), `${target}-wal`);
    expect(baton(['tokens', 'create', '--app', 'other'], env).code).toBe(0);
    expect(baton(['backup', target, '--force'], env).code).toBe(0);
    const copy = new Database(target, { readonly: true });
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(copy.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'scribbles'").get()).toEqual({ n: 0 });
      expect(copy.prepare('SELECT count(*) AS n FROM events').get()).toEqual({ n: 2 });
    } finally {
      copy.close();
    }
  });
});

describe('baton backup --force onto a database in use', () => {
  it('refuses (exit 2) and leaves it, and the -wal it is writing, as they were', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-cli-'));
    const file = join(dir, 'baton.db');
    const env = { EVENT_STORE_URL: `sqlite:${file}` };
    storeWithDemoToken(file);
    // Another store (or an instance's read models), open and writing in another process (this one).
    const other = join(dir, 'other.db');
    expect(baton(['tokens', 'create', '--app', 'other', '--create'], { EVENT_STORE_URL: `sqlite:${other}` }).code).toBe(0);
    const live = new Database(other);
    try {
      live.pragma('wal_autocheckpoint = 0');
      live.exec("CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('kept')");
      const refused = baton(['backup', other, '--force'], env);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/in use/);
      expect(live.prepare('SELECT x FROM notes').all()).toEqual([{ x: 'kept' }]);
    } finally {
      live.close();
    }
    const reopened = new Database(other, { readonly: true });
    try {
      expect(reopened.prepare('SELECT x FROM notes').all()).toEqual([{ x: 'kept' }]);
    } finally {
      reopened.close();
    }
  });
});

describe('baton backup beside a busy instance', () => {
  const stopped: Service[] = [];
  afterAll(async () => {
    for (const s of stopped) await s.stop();
  });

  it('finishes while the instance keeps writing (an online backup restarted at every write never did)', async () => {
    // A store of some size (100 MB: a table of filler next to Baton's) that the instance keeps writing to.
    const storeUrl = freshStoreUrl();
    const filler = new Database(storeUrl.slice('sqlite:'.length));
    filler.exec('CREATE TABLE filler (data BLOB)');
    const insert = filler.prepare('INSERT INTO filler VALUES (?)');
    filler.transaction(() => {
      for (let i = 0; i < 25_000; i++) insert.run(Buffer.alloc(4000, i % 251));
    })();
    filler.close();
    const service = await startService({ storeUrl });
    stopped.push(service);
    const environment = unique('busy-backup');
    let dispatched = 0;
    let stop = false;
    const writers = Array.from({ length: 32 }, async () => {
      while (!stop) {
        const { body } = await service.gql(DISPATCH, { input: { appId: APP, environment, name: 'Busy', input: '[]' } });
        if (body.data?.dispatchWorkflow.id) dispatched++;
      }
    });
    await waitFor(() => dispatched >= 50, { timeoutMs: 20_000, description: 'the instance writing' });

    const target = join(mkdtempSync(join(tmpdir(), 'baton-backup-')), 'copy.db');
    const backup = await batonAsync(['backup', target], { EVENT_STORE_URL: storeUrl }, 40_000);
    const duringBackup = dispatched;
    stop = true;
    await Promise.all(writers);

    expect(backup).toMatchObject({ code: 0, stdout: expect.stringMatching(/^backup of .* written to .*copy\.db: \d+ events up to position \d+/) });
    expect(duringBackup).toBeGreaterThan(50);
  }, 90_000);
});

describe('baton rebuild', () => {
  const stopped: Array<Service | FixtureWorker> = [];
  afterAll(async () => {
    for (const s of stopped) await s.stop();
  });

  it('drops the read models and folds the log again into the same rows; an instance then resumes from the rebuilt checkpoint', async () => {
    const service = await startService();
    stopped.push(service);
    const environment = unique('rebuild');
    const worker = await startWorker({ url: service.url, token: service.token, environment });
    stopped.push(worker);
    const engine = new Engine(service, environment);
    const done = await Promise.all(Array.from({ length: 6 }, (_, i) => engine.dispatch('Sequential', [`r${i}`])));
    for (const id of done) await engine.waitForState(id);
    // A standalone task too: its events are the only ones of a task stream, while a workflow's
    // tasks write the same types into the workflow's stream (a rebuild decodes only the former
    // for the tasks read model).
    const task = await engine.client.dispatchTask({ appId: APP, environment, name: 'echo', input: ['standalone'] });
    const taskState = () =>
      engine.client.request<{ task: { state: string } | null }>('query($appId: String!, $environment: String!, $id: ID!) { task(appId: $appId, environment: $environment, id: $id) { state } }', {
        appId: APP,
        environment,
        id: task,
      });
    await waitFor(async () => (await taskState()).task?.state === 'COMPLETED', { timeoutMs: 15_000, description: 'the standalone task to complete' });
    const waiting = await engine.dispatch('Waiter', ['never', 600_000]);
    await engine.waitForHistory(waiting, (h) => h.some((e) => e.type === 'DecisionCompleted'), 'the waiter to park');
    await worker.stop();
    const before = await engine.workflow(waiting);
    await service.stop();

    const rows = readModelRows(service.storeUrl);
    expect(rows.rm_workflows.length).toBeGreaterThanOrEqual(7);
    expect(rows.rm_tasks).toEqual([expect.objectContaining({ id: task, status: 'completed' })]);
    const rebuild = baton(['rebuild'], { EVENT_STORE_URL: service.storeUrl });
    expect(rebuild).toMatchObject({ code: 0, stderr: '' });
    const [, events, head] = /rebuilt from (\d+) events \(up to position (\d+)\) in \d+ ms: \d+ events\/s/.exec(rebuild.stdout) ?? [];
    expect(Number(events)).toBeGreaterThan(50);
    expect(Number(head)).toBe(Number(events));
    expect(readModelRows(service.storeUrl)).toEqual(rows);

    const restarted = await startService({ storeUrl: service.storeUrl });
    stopped.push(restarted);
    const health = (await (await fetch(`${restarted.url}/health`)).json()) as { details: { projections: { resumedFrom: string; replayedEvents: number } } };
    expect(health.details.projections.resumedFrom).toBe(head);
    expect(health.details.projections.replayedEvents).toBe(0);
    expect(await new Engine(restarted, environment, service.token).workflow(waiting)).toEqual(before);
  });

  it('refuses to run while an instance has the store open, and leaves its read models alone', async () => {
    const service = await startService();
    stopped.push(service);
    await waitFor(() => (readModelRows(service.storeUrl).rm_tokens ?? []).length > 0, { timeoutMs: 15_000, description: 'the bootstrap token in the read models' });
    const before = readModelRows(service.storeUrl);

    const refused = baton(['rebuild'], { EVENT_STORE_URL: service.storeUrl });

    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/in use by another process.*stop every instance/s);
    expect(refused.stderr).not.toMatch(/\n\s+at /);
    expect(refused.stdout).toBe('');
    expect(readModelRows(service.storeUrl)).toEqual(before);
    expect((await fetch(`${service.url}/health/ready`)).status).toBe(200);
    await service.stop();
    // Stopped, it runs.
    expect(baton(['rebuild'], { EVENT_STORE_URL: service.storeUrl })).toMatchObject({ code: 0, stderr: '' });
  });

  it('explains that EventStoreDB read models are rebuilt by the instance', () => {
    const refused = baton(['rebuild', '--store', 'esdb://localhost:2113?tls=false']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/READ_MODEL_PATH/);
  });
});
