// Every process and temporary folder the benchmark creates is registered here, so that a normal
// end, an error, SIGINT/SIGTERM or the run's own deadline all leave nothing behind.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const children = new Set();
const syncCleanups = [];
let cleaningUp = false;

/** Spawns a child in its own process group (so the whole tree can be signalled) and tracks it. */
export function spawnTracked(command, args, options = {}) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options, detached: true });
  children.add(child);
  child.output = '';
  const keep = (d) => {
    child.output += d;
    if (child.output.length > 200_000) child.output = child.output.slice(-100_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  child.once('exit', () => children.delete(child));
  child.once('error', () => children.delete(child));
  return child;
}

const alive = (child) => child.exitCode === null && child.signalCode === null;

function signalGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* already gone */
    }
  }
}

/** SIGTERM (or `signal`), then SIGKILL after `graceMs`; resolves once the child has exited. */
export async function stopChild(child, { signal = 'SIGTERM', graceMs = 5000 } = {}) {
  if (!child || !alive(child)) return;
  signalGroup(child, signal);
  const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timer);
  // Grandchildren that outlived their parent (same group) go too.
  signalGroup(child, 'SIGKILL');
}

/** Resolves with the first match of `pattern` in the child's output (or rejects on exit / timeout). */
export function waitForOutput(child, pattern, timeoutMs, what = 'process') {
  return new Promise((resolve, reject) => {
    const check = () => {
      const match = pattern.exec(child.output);
      if (match) {
        done();
        resolve(match);
      }
    };
    const onExit = () => {
      check();
      done();
      reject(new Error(`${what} exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}:\n${child.output.slice(-3000)}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${what} did not print ${pattern} within ${timeoutMs} ms:\n${child.output.slice(-3000)}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      child.stderr?.off('data', check);
      child.off('exit', onExit);
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.once('exit', onExit);
    check();
  });
}

/** A temporary folder removed at the end of the run. */
export function tempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onCleanupSync(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Registers a synchronous cleanup (it also runs from the process 'exit' handler). */
export function onCleanupSync(fn) {
  syncCleanups.push(fn);
}

/** Stops every tracked child, then runs the registered cleanups (last registered first). */
export async function cleanupAll() {
  if (cleaningUp) return;
  cleaningUp = true;
  await Promise.all([...children].map((c) => stopChild(c, { graceMs: 3000 })));
  runSyncCleanups();
}

function runSyncCleanups() {
  while (syncCleanups.length > 0) {
    const fn = syncCleanups.pop();
    try {
      fn();
    } catch (error) {
      process.stderr.write(`cleanup: ${error.message}\n`);
    }
  }
}

/** Last resort from the 'exit' handler: no awaiting possible, so SIGKILL. */
function cleanupSyncOnExit() {
  for (const child of children) signalGroup(child, 'SIGKILL');
  runSyncCleanups();
}

export function installCleanupHandlers() {
  process.once('exit', cleanupSyncOnExit);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.once(sig, () => {
      process.stderr.write(`\n${sig}: stopping every process the benchmark started…\n`);
      void cleanupAll().finally(() => process.exit(130));
    });
  }
}

/** Runs a command to completion (synchronously); throws with its output on failure. */
export function runSync(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: 120_000, ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  }
  return result.stdout;
}
