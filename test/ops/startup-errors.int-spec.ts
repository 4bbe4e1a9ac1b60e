import { afterAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, logMessages } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

/** Starts the service and waits for it to exit (a bad setting stops it at once). */
function start(env: Record<string, string>) {
  const result = spawnSync(process.execPath, [join(ROOT, 'dist/src/main.js')], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', BATON_EXAMPLE_WORKER: 'false', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: result.status, signal: result.signal, out: `${result.stdout}${result.stderr}` };
}

describe('start-up with a store path that cannot be a database file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-paths-'));
  const aFile = join(dir, 'a-file');
  writeFileSync(aFile, 'not a directory');

  it.each([
    ['EVENT_STORE_URL', { EVENT_STORE_URL: `sqlite:${dir}` }, dir, /is a directory/],
    ['EVENT_STORE_URL', { EVENT_STORE_URL: `sqlite:${join(aFile, 'baton.db')}` }, aFile, /not a directory/],
    ['READ_MODEL_PATH', { EVENT_STORE_URL: `sqlite:${join(dir, 'ok.db')}`, READ_MODEL_PATH: dir }, dir, /is a directory/],
    ['READ_MODEL_PATH', { EVENT_STORE_URL: `sqlite:${join(dir, 'ok.db')}`, READ_MODEL_PATH: join(aFile, 'rm.db') }, aFile, /not a directory/],
  ])('%s %j: exit 2 naming the variable and the path, no stack trace', (name, env, path, reason) => {
    const { code, out } = start(env);
    expect({ code, out }).toEqual({ code: 2, out: expect.stringContaining(`${name}=`) });
    expect(out).toContain(path);
    expect(out).toMatch(reason);
    expect(out).not.toMatch(/\n\s+at /);
  });
});

describe('start-up on a port or host this machine cannot listen on', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-listen-'));
  const taken = createServer();
  afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

  it('a port another process listens on: exit 2 naming PORT, no stack trace', async () => {
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    const { code, out } = start({ EVENT_STORE_URL: `sqlite:${join(dir, 'port.db')}`, PORT: String(port) });
    expect({ code, out }).toEqual({ code: 2, out: expect.stringContaining(`PORT=${port}: another process listens on 127.0.0.1:${port}`) });
    expect(out).not.toMatch(/\n\s+at /);
  });

  it('a host that does not resolve: exit 2 naming HOST, no stack trace', () => {
    const { code, out } = start({ EVENT_STORE_URL: `sqlite:${join(dir, 'host.db')}`, HOST: 'no-such-host.invalid' });
    expect({ code, out }).toEqual({ code: 2, out: expect.stringContaining('HOST="no-such-host.invalid": the name does not resolve') });
    expect(out).not.toMatch(/\n\s+at /);
  });
});

describe('start-up while the read models cannot catch up (EventStoreDB not answering)', () => {
  const children: Array<ReturnType<typeof spawn>> = [];
  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  it('listens at once: live, not ready with the reason, GraphQL 503 until caught up, and SIGTERM exits 0', async () => {
    // A port nothing listens on: every call to the store fails, and the catch-up never ends.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const dir = mkdtempSync(join(tmpdir(), 'baton-esdb-down-'));
    const child = spawn(process.execPath, [join(ROOT, 'dist/src/main.js')], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        BATON_EXAMPLE_WORKER: 'false',
        EVENT_STORE_URL: `esdb://127.0.0.1:${port}?tls=false`,
        READ_MODEL_PATH: join(dir, 'read-models.db'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const url = await waitFor(() => /listening on (http:\/\/\S+)/.exec(logMessages(out))?.[1], { timeoutMs: 20_000, description: `the service listening:\n${out}` });

    expect((await fetch(`${url}/health/live`)).status).toBe(200);
    const ready = await fetch(`${url}/health/ready`);
    expect(ready.status).toBe(503);
    const body = (await ready.json()) as { details: { projections: { status: string; live: boolean; reason: string } } };
    expect(body.details.projections).toMatchObject({ status: 'down', live: false, reason: 'read models are catching up with the log' });
    const graphql = await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ __typename }' }) });
    expect(graphql.status).toBe(503);
    expect(graphql.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await graphql.json()).toMatchObject({ errors: [{ extensions: { code: 'STORE_UNAVAILABLE' } }] });
    expect(out).not.toContain('BATON_READY');

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 60_000);
});
