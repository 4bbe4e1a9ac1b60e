/*
 * The FAKE EventStoreDB server (test/support/fake-esdb-server.ts, an in-memory model of the
 * server's gRPC Streams service, not EventStoreDB) started as a process of its own, for real
 * Baton processes to connect to. Built with the server (`npm run build:server`).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './service.js';

export interface FakeEsdbProcessOptions {
  /** `--stats-period-ms`: a `$statsCollected` event in `$all` this often. */
  statsPeriodMs?: number;
  /** `--standard-projections`: the standard projections' link events in `$all`. */
  standardProjections?: boolean;
  readyTimeoutMs?: number;
}

export interface FakeEsdbProcess {
  /** Its connection string, `esdb://127.0.0.1:<port>?tls=false`. */
  url: string;
  process: ChildProcess;
  output: () => string;
  /** SIGTERM and wait for the exit (nothing if it already exited). */
  stop(): Promise<void>;
}

/** Starts `node dist/test/support/fake-esdb-server.js --port 0` and waits for `FAKE_ESDB_READY <url>`. */
export async function startFakeEsdb(options: FakeEsdbProcessOptions = {}): Promise<FakeEsdbProcess> {
  const args = [join(ROOT, 'dist/test/support/fake-esdb-server.js'), '--port', '0'];
  if (options.statsPeriodMs !== undefined) args.push('--stats-period-ms', String(options.statsPeriodMs));
  if (options.standardProjections) args.push('--standard-projections');
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the fake EventStoreDB did not start within ${readyTimeoutMs / 1000} s:\n${out}`)), readyTimeoutMs);
      child.stdout!.on('data', (d) => {
        out += d;
        const match = /FAKE_ESDB_READY (\S+)/.exec(out);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the fake EventStoreDB exited with ${code}:\n${out}`));
      });
    });
    return { url, process: child, output: () => out, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
