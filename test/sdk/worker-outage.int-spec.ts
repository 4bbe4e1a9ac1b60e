/**
 * A worker whose service is unreachable, restarting or refusing for a while says so once, keeps
 * trying (with backoff, after the service's Retry-After), and says when it answers again. Before,
 * every failed poll and heartbeat logged a line of its own, a dozen a minute per kind of work for
 * as long as the outage lasted, with nothing saying it had passed; and a 429's Retry-After was
 * ignored (polls came back after 100 ms, 200 ms, ... while the service asked for seconds). A
 * stand-in HTTP server plays the service: a load balancer answering 503 during a deploy, a
 * service over the token's rate limit.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Worker, defineTask } from '../../src/sdk/index.js';
import { waitFor } from '../support/wait-for.js';

type Answer = { status: number; headers?: Record<string, string>; body: string };

/** A stand-in service: the n-th request (from 0) gets `answer(n, query)`. */
async function standIn(answer: (n: number, query: string) => Answer): Promise<{ url: string; requests: () => number; server: Server }> {
  let n = 0;
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const a = answer(n++, (JSON.parse(body) as { query: string }).query);
      response.writeHead(a.status, { 'content-type': a.body.startsWith('{') ? 'application/json' : 'text/html', ...a.headers });
      response.end(a.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => n, server };
}

const noWork: Answer = { status: 200, body: JSON.stringify({ data: { pollWork: [] } }) };
const task = defineTask('noop', () => null);

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

function worker(url: string) {
  const lines = { warn: [] as string[], info: [] as string[], error: [] as string[] };
  const logger = {
    info: (...a: unknown[]) => lines.info.push(a.join(' ')),
    warn: (...a: unknown[]) => lines.warn.push(a.join(' ')),
    error: (...a: unknown[]) => lines.error.push(a.join(' ')),
  };
  const w = new Worker({ url, token: 't', appId: 'demo', environment: 'outage', tasks: [task], logger, pollWaitMs: 0 });
  const running = w.run();
  return { lines, stop: async () => { await w.shutdown(); await running; } };
}

describe('a worker facing an outage', () => {
  it('logs one line when polls start failing and one when the service answers again, not a line per failed poll', async () => {
    const fake = await standIn((n) => (n < 6 ? { status: 503, body: '<html><body>503 Service Temporarily Unavailable</body></html>' } : noWork));
    const w = worker(fake.url);
    stop = async () => {
      await w.stop();
      fake.server.close();
      fake.server.closeAllConnections();
    };
    await waitFor(() => fake.requests() >= 8, { timeoutMs: 30_000, description: 'polls going on after the outage' });
    expect(w.lines.warn).toHaveLength(1);
    expect(w.lines.warn[0]).toMatch(/poll failed.*503/);
    expect(w.lines.info.join('\n')).toMatch(/answers again.*6 failed requests/);
    expect(w.lines.error).toEqual([]);
  });

  it('does not log a pair of lines per request when the service fails every other request (flapping)', async () => {
    const fake = await standIn((n) => (n % 2 === 0 ? { status: 503, body: '<html><body>503 Service Temporarily Unavailable</body></html>' } : noWork));
    const w = worker(fake.url);
    stop = async () => {
      await w.stop();
      fake.server.close();
      fake.server.closeAllConnections();
    };
    await waitFor(() => fake.requests() >= 30, { timeoutMs: 30_000, description: 'polls failing and passing in turn' });
    // Once a minute at most: the first failure, and the recovery after it.
    expect(w.lines.warn.length).toBeLessThanOrEqual(1);
    expect(w.lines.info.length).toBeLessThanOrEqual(1);
  });

  it("waits for a 429's Retry-After before polling again", async () => {
    const limited: Answer = {
      status: 429,
      headers: { 'retry-after': '2' },
      body: JSON.stringify({ errors: [{ message: 'rate limit of 600 requests per minute exceeded; retry after 2s', extensions: { code: 'RATE_LIMITED' } }] }),
    };
    const fake = await standIn((n) => (n === 0 ? limited : noWork));
    const w = worker(fake.url);
    stop = async () => {
      await w.stop();
      fake.server.close();
      fake.server.closeAllConnections();
    };
    await waitFor(() => fake.requests() >= 3, { timeoutMs: 30_000, description: 'polls going on after the refusal' });
    expect(w.lines.warn[0]).toMatch(/poll failed \(rate limit .*\); retrying in 2000 ms/);
  });

  it('stops at once when shut down while it waits to poll again', async () => {
    const fake = await standIn(() => ({
      status: 429,
      headers: { 'retry-after': '3600' },
      body: JSON.stringify({ errors: [{ message: 'rate limit exceeded; retry after 3600s', extensions: { code: 'RATE_LIMITED' } }] }),
    }));
    const w = worker(fake.url);
    stop = async () => {
      fake.server.close();
      fake.server.closeAllConnections();
    };
      fake.server.closeAllConnections();
    await waitFor(() => w.lines.warn.length > 0, { timeoutMs: 10_000, description: 'the refused poll' });
    await w.stop();
    expect(fake.requests()).toBe(1);
  });
});
