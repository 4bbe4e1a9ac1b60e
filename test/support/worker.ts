import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/**
 * The repository root: the nearest folder above this file with a package.json (so this also
 * works when compiled elsewhere), else the current directory.
 */
function findRoot(): string {
  for (let dir = import.meta.dirname; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) return resolve(process.cwd());
  }
}

export const ROOT = findRoot();
export const FIXTURES_MODULE = 'dist/test/support/fixtures/workflows.js';

export interface WorkerOptions {
  url: string;
  token: string;
  appId?: string;
  environment: string;
  /** Extra environment of the worker process (FIXTURE_LOG, FIXTURE_VARIANT, FIXTURE_NO_V2...). */
  env?: Record<string, string>;
  heartbeatMs?: number;
  concurrency?: number;
  /** Module with the definitions, relative to the repository root. */
  module?: string;
}

export interface FixtureWorker {
  /** The id the worker claims work under (`TaskStarted.workerId`, `DecisionStarted.workerId`). */
  workerId: string;
  process: ChildProcess;
  output(): string;
  /** SIGTERM (graceful shutdown) and wait for the exit. */
  stop(): Promise<void>;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
}

const running = new Set<FixtureWorker>();

/**
 * Starts `baton worker <fixtures module>` as a real process and waits for BATON_WORKER_READY.
 * @example
 * const worker = await startWorker({ url: service.url, token: service.token, environment: 'test' });
 */
export async function startWorker(options: WorkerOptions): Promise<FixtureWorker> {
  const args = [
    join(ROOT, 'dist/src/cli/baton.js'),
    'worker',
    join(ROOT, options.module ?? FIXTURES_MODULE),
    '--url',
    options.url,
    '--token',
    options.token,
    '--app',
    options.appId ?? 'demo',
    '--env',
    options.environment,
    '--heartbeat-ms',
    String(options.heartbeatMs ?? 200),
    '--concurrency',
    String(options.concurrency ?? 10),
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));

  const workerId = await new Promise<string>((ready, fail) => {
    const timer = setTimeout(() => fail(new Error(`worker did not start within 20s:\n${out}`)), 20_000);
    const check = () => {
      const match = /worker (\S+) serving[\s\S]*BATON_WORKER_READY/.exec(out);
      if (match) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        ready(match[1]);
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`worker exited with ${code} before it was ready:\n${out}`));
    });
  });

  const signal = async (sig: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    await exited;
    running.delete(worker);
  };
  const worker: FixtureWorker = { workerId, process: child, output: () => out, stop: () => signal('SIGTERM'), kill: () => signal('SIGKILL') };
  running.add(worker);
  return worker;
}

/** Kills every worker started by this module that is still running (for afterAll). */
export async function killAllWorkers(): Promise<void> {
  await Promise.all([...running].map((w) => w.kill()));
}
