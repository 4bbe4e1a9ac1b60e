/**
 * docs/SECURITY.md: "Baton makes its own files owner-only": the store and its -wal/-shm are 0600,
 * and so is a read-model file of its own, which "holds every app's inputs and outputs and the
 * tokens' hashes: it was created with the process umask (0644, readable by every local user)".
 * `baton backup` writes a full copy of the store (events, read models, token hashes) and left it
 * with the umask's mode: 0644 under the usual 022.
 */
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../support/service.js';

const run = promisify(execFile);
const cli = (args: string[]) => run(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), ...args], { env: { ...process.env, EVENT_STORE_URL: '' } });

describe('baton backup', () => {
  it('writes the copy owner-only, as the store itself', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-backup-mode-'));
    const store = `sqlite:${join(dir, 'store', 'baton.db')}`;
    await cli(['tokens', 'create', '--app', 'demo', '--store', store, '--create']);
    const first = join(dir, 'copy.db');
    await cli(['backup', first, '--store', store]);
    expect((statSync(first).mode & 0o777).toString(8)).toBe('600');
    // Replacing an earlier copy too.
    await cli(['backup', first, '--store', store, '--force']);
    expect((statSync(first).mode & 0o777).toString(8)).toBe('600');
  });
});
