// Jest's globalSetup: every temporary file of the run (stores, logs, worker projects, backups,
// the browser's profile) goes under one folder of this run, removed by temp-dir-teardown.mjs.
// Tests and the services and workers they spawn make their folders with os.tmpdir(), which reads
// TMPDIR: a run used to leave hundreds of SQLite stores in /tmp, and every run added more.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PREFIX = 'baton-tests-';

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

export default function setup() {
  const parent = tmpdir();
  // Folders of runs that were killed before their teardown (Ctrl-C, a CI timeout): their process is gone.
  for (const name of readdirSync(parent)) {
    if (!name.startsWith(PREFIX)) continue;
    let pid;
    try {
      pid = Number(readFileSync(join(parent, name, 'owner.pid'), 'utf8'));
    } catch {
      continue; // not one of ours, or still being made
    }
    if (Number.isInteger(pid) && pid > 0 && !alive(pid)) rmSync(join(parent, name), { recursive: true, force: true });
  }
  const dir = mkdtempSync(join(parent, PREFIX));
  writeFileSync(join(dir, 'owner.pid'), String(process.pid));
  process.env.BATON_TEST_TMPDIR = dir;
  process.env.TMPDIR = dir;
}
