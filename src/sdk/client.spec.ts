import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { BatonRequestError, Client } from './client.js';

/** A GraphQL endpoint stand-in: answers `{ data: { n } }` with the request count, counts connections. */
function endpoint(options: { keepAliveTimeout?: number } = {}) {
  let requests = 0;
  let connections = 0;
  let open = 0;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests++;
      const { query } = JSON.parse(body) as { query: string };
      res.setHeader('content-type', 'application/json');
      if (query === 'fail') res.end(JSON.stringify({ errors: [{ message: 'no', extensions: { code: 'BAD_USER_INPUT', field: 'x' } }] }));
      else if (query === 'garbage') res.end('<html>');
      else res.end(JSON.stringify({ data: { n: requests, auth: req.headers.authorization } }));
    });
  });
  if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
  server.on('connection', (socket) => {
    connections++;
    open++;
    socket.on('close', () => open--);
  });
  return new Promise<{ server: Server; url: string; stats: () => { requests: number; connections: number; open: number } }>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stats: () => ({ requests, connections, open }) })),
  );
}

describe('Client transport', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('sends the token and reuses one kept-alive connection for consecutive requests', async () => {
    const e = await endpoint();
    server = e.server;
    const client = new Client({ url: `${e.url}/`, token: 'baton_x' });
    for (let i = 1; i <= 5; i++) expect(await client.request<{ n: number; auth: string }>('{ n }')).toEqual({ n: i, auth: 'Bearer baton_x' });
    expect(e.stats().connections).toBe(1);
    server.closeAllConnections();
  });

  it('goes on after the server closed an idle connection', async () => {
    const e = await endpoint({ keepAliveTimeout: 20 });
    server = e.server;
    const client = new Client({ url: e.url, token: 't' });
    await client.request('{ n }');
    // Once the server has closed the idle connection, the next request must not fail on it.
    const deadline = Date.now() + 5_000;
    while (e.stats().open > 0) {
      if (Date.now() > deadline) throw new Error('the server never closed the idle connection');
      await new Promise((resolve) => setImmediate(resolve));
    }
    await expect(client.request('{ n }')).resolves.toEqual(expect.objectContaining({ n: 2 }));
    server.closeAllConnections();
  });

  it('throws the GraphQL error with its code, and a readable error for a non-JSON answer', async () => {
    const e = await endpoint();
    server = e.server;
    const client = new Client({ url: e.url, token: 't' });
    await expect(client.request('fail')).rejects.toEqual(expect.objectContaining({ code: 'BAD_USER_INPUT', extensions: { code: 'BAD_USER_INPUT', field: 'x' } }));
    await expect(client.request('garbage')).rejects.toBeInstanceOf(BatonRequestError);
    server.closeAllConnections();
  });

  it('gives up at its deadline', async () => {
    const silent = createServer(() => undefined);
    server = silent;
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const client = new Client({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, token: 't', timeoutMs: 100 });
    // A server that never answers: the request fails at the client's deadline (not the test's).
    await expect(client.request('{ n }')).rejects.toBeDefined();
    silent.closeAllConnections();
  });
});

describe('Client URL', () => {
  // `localhost:3000` parses as a URL of protocol `localhost:`: every request then failed with
  // "Protocol not supported", and a Worker retried it for ever, logging.
  it.each(['localhost:3000', 'ftp://baton.example.com', '127.0.0.1:3000', 'not a url'])('%s is refused when the client is made, saying what is expected', (url) => {
    expect(() => new Client({ url, token: 't' })).toThrow(TypeError);
    expect(() => new Client({ url, token: 't' })).toThrow(/http:\/\/ or https:\/\//);
  });

  it.each(['http://localhost:3000', 'https://baton.example.com/', 'HTTP://127.0.0.1:3000'])('%s is taken', (url) => {
    expect(() => new Client({ url, token: 't' })).not.toThrow();
  });
});
