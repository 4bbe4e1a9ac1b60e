import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/service.js';

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
