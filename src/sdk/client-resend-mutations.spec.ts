/**
 * Which requests the SDK client sends again.
 *
 * A request that fails on a reused kept-alive connection (ECONNRESET, EPIPE) is sent once more on
 * a new one, unless it is a mutation: the service may have read and applied it before the
 * connection was cut (a dispatch made twice). Whether a document is a mutation was read from its
 * first word alone: a mutation after a comment line (`# retry the failed ones`), or after the
 * fragments it uses, both valid GraphQL, was taken for a query and sent again, and applied twice.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { Client } from './client.js';

/** Answers the first request; reads every later one, counts it, and cuts the connection without answering (a service killed, a proxy). */
async function cutsAfterFirst(): Promise<{ server: Server; url: string; received: string[] }> {
  const received: string[] = [];
  let answered = false;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (!answered) {
        answered = true;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ data: { ok: true } }));
        return;
      }
      received.push((JSON.parse(body) as { query: string }).query);
      req.socket.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

describe('a mutation whose connection is cut after the service read it', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? (server.closeAllConnections(), server.close(() => resolve())) : resolve())));

  it.each([
    ['a plain mutation', 'mutation { retryWorkflows(input: {}) { changed } }'],
    ['a mutation after a comment line', '# retry every failed Onboarding\nmutation { retryWorkflows(input: {}) { changed } }'],
    ['a mutation after its fragments', 'fragment Changed on SelectorActionResult { changed }\nmutation { retryWorkflows(input: {}) { ...Changed } }'],
  ])('%s is sent once, and fails with the error', async (_what, query) => {
    const e = await cutsAfterFirst();
    server = e.server;
    const client = new Client({ url: e.url, token: 't' });
    await client.request('{ ok }'); // the connection is now kept alive, and reused next
    await expect(client.request(query)).rejects.toBeDefined();
    expect(e.received).toEqual([query]);
  });
});
