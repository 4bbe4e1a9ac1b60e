/**
 * Review of the operator CLI (`baton`): what an operator or an auditor meets at its edges.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/service.js';

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
