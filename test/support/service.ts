import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from './wait-for.js';

const ROOT = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

export interface GqlResponse<T = any> {
  status: number;
  body: { data?: T; errors?: Array<{ message: string; extensions?: Record<string, any>; path?: string[] }> };
}

export interface Service {
  url: string;
  /** The token `npm start` created for app `demo` on a fresh store. */
  token: string;
  storeUrl: string;
  process: ChildProcess;
  output: () => string;
  /** What the service logged, one message a line (the `msg` of each JSON log line, or the raw line). */
  messages: () => string;
  /**
   * Waits until its output holds `pattern` and returns that output. The logger writes
   * asynchronously: a line logged before `BATON_READY` (or before an answer) may reach the
   * output after it.
   */
  logged(pattern: RegExp | string, timeoutMs?: number): Promise<string>;
  gql<T = any>(query: string, variables?: Record<string, unknown>, token?: string | null): Promise<GqlResponse<T>>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
}

export const freshStoreUrl = (): string => `sqlite:${join(mkdtempSync(join(tmpdir(), 'baton-test-')), 'baton.db')}`;

/** How `startService` starts one: on which store, with which environment, how long it may take to be ready. */
export interface ServiceOptions {
  storeUrl?: string;
  env?: Record<string, string>;
  readyTimeoutMs?: number;
}

/**
 * Starts the real service (`node dist/src/main.js`, built by `npm test`) on an ephemeral port
 * and waits until it listens. Pass the same `storeUrl` to restart on the same store.
 */
export async function startService(options: ServiceOptions = {}): Promise<Service> {
  const storeUrl = options.storeUrl ?? freshStoreUrl();
  const child = spawn(process.execPath, [join(ROOT, 'dist/src/main.js')], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      EVENT_STORE_URL: storeUrl,
      LOG_LEVEL: 'warn',
      BATON_EXAMPLE_WORKER: 'false',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const url = await new Promise<string>((resolve, reject) => {
    const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
    const timer = setTimeout(() => reject(new Error(`service did not start within ${readyTimeoutMs / 1000}s:\n${out}`)), readyTimeoutMs);
    const check = () => {
      const match = /BATON_READY (\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before it was ready:\n${out}`));
    });
  });
  const token = /BATON_BOOTSTRAP_TOKEN=(\S+)/.exec(out)?.[1] ?? '';

  const gql = async <T>(query: string, variables?: Record<string, unknown>, tok: string | null = token) => {
    const response = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(tok ? { authorization: `Bearer ${tok}` } : {}) },
      body: JSON.stringify({ query, variables }),
    });
    return { status: response.status, body: await response.json() } as GqlResponse<T>;
  };
  const signal = async (sig: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    await exited;
  };
  const logged = (pattern: RegExp | string, timeoutMs = 10_000) =>
    waitFor(() => ((typeof pattern === 'string' ? out.includes(pattern) : pattern.test(out)) ? out : null), {
      timeoutMs,
      intervalMs: 25,
      description: `${pattern} in the service's output`,
    });
  return { url, token, storeUrl, process: child, output: () => out, messages: () => logMessages(out), logged, gql, stop: () => signal('SIGTERM'), kill: () => signal('SIGKILL') };
}

/** `baton tokens create --create` against a store (made if new); returns the token (the last line printed). */
export async function createTokenViaCli(storeUrl: string, apps: string[], environments: string[] = [], role?: string): Promise<string> {
  const args = [
    join(ROOT, 'dist/src/cli/baton.js'),
    'tokens',
    'create',
    '--create',
    ...apps.flatMap((a) => ['--app', a]),
    ...environments.flatMap((e) => ['--env', e]),
    ...(role ? ['--role', role] : []),
  ];
  const { stdout } = await run(process.execPath, args, { cwd: ROOT, env: { ...process.env, EVENT_STORE_URL: storeUrl } });
  return stdout.trim().split('\n').pop()!;
}

export { ROOT };

/**
 * Runs the mutations `calls` (root field, its input type, its input) in order, `perRequest`
 * aliased fields a request: GraphQL runs a mutation's fields one after another, so each does what a
 * request of its own would have done. Throws on a request that answers errors; returns the `id`
 * each field answered. For the many set-up writes a test needs before what it checks.
 */
export async function mutateInOrder(service: Service, calls: Array<[field: string, inputType: string, input: Record<string, unknown>]>, perRequest = 100): Promise<string[]> {
  const ids: string[] = [];
  for (let first = 0; first < calls.length; first += perRequest) {
    const chunk = calls.slice(first, first + perRequest);
    const query = `mutation(${chunk.map(([, type], k) => `$i${k}: ${type}!`).join(', ')}) { ${chunk.map(([field], k) => `m${k}: ${field}(input: $i${k}) { id }`).join(' ')} }`;
    const answer = await service.gql(query, Object.fromEntries(chunk.map(([, , input], k) => [`i${k}`, input])));
    if (answer.status !== 200 || answer.body.errors || !answer.body.data) throw new Error(`mutateInOrder: ${answer.status} ${JSON.stringify(answer.body.errors ?? answer.body)}`);
    ids.push(...chunk.map((_, k) => answer.body.data[`m${k}`].id as string));
  }
  return ids;
}

/** The `msg` of every JSON log line (the raw line for anything else), one a line. */
export function logMessages(output: string): string {
  return output
    .split('\n')
    .map((line) => {
      if (!line.startsWith('{')) return line;
      try {
        const parsed = JSON.parse(line) as { msg?: unknown };
        return typeof parsed.msg === 'string' ? parsed.msg : line;
      } catch {
        return line;
      }
    })
    .join('\n');
}
