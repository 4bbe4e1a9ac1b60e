/**
 * A worker's heartbeat requests end with the worker: once `shutdown()` and `run()` have resolved,
 * none is left open. A heartbeat request the service does not answer (stalled, or a network that
 * lost the answer) stayed open for the client's request timeout (30 s) after the worker had
 * stopped, and kept its process alive for that long. A stand-in HTTP server plays the service:
 * it hands over one task, answers polls and reports, and never answers a heartbeat.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from '@jest/globals';
import { Worker, defineTask } from '../../src/sdk/index.js';
import { waitFor } from '../support/wait-for.js';

describe('a heartbeat request the service never answers', () => {
  it('is not left open once the worker has shut down', async () => {
    let polls = 0;
    const held = new Set<ServerResponse>();
    let heartbeats = 0;
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const json = (data: unknown) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ data }));
        };
        if (body.includes('heartbeat(input')) {
          heartbeats++;
          held.add(res);
          res.on('close', () => held.delete(res));
          return;
        }
        if (body.includes('reportWork(')) return json({ reportWork: { rejected: [], items: [], decided: [] } });
        if (body.includes('pollWork(')) {
          const items =
            polls++ === 0
              ? [{ kind: 'TASK', ref: 'ta:0190aaaa-0000-7000-8000-000000000001', workflowId: null, taskId: '0190aaaa-0000-7000-8000-000000000001', name: 'waits', version: null, decisionId: null, attemptId: 'a1', attempt: 1, input: '[]', history: null, historyFrom: null, runFrom: null, leaseExpiresAt: new Date(Date.now() + 60_000).toISOString() }]
              : [];
          setTimeout(() => json({ pollWork: items }), 50);
          return;
        }
        json({});
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    let started = false;
    const waits = defineTask('waits', async (ctx) => {
      started = true;
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      throw new Error('stopped');
    });
    const worker = new Worker({ url, token: 't', appId: 'demo', environment: 'hb-stop', tasks: [waits], heartbeatIntervalMs: 100, shutdownGraceMs: 0, pollWaitMs: 0, logger: { info() {}, warn() {}, error() {} } });
    const running = worker.run();
    try {
      await waitFor(() => started && heartbeats > 0, { timeoutMs: 10_000, description: 'the task running and a heartbeat held' });
      await worker.shutdown();
      await running;
      await waitFor(() => held.size === 0, { timeoutMs: 5_000, description: 'no heartbeat request left open after the worker stopped' });
      expect(held.size).toBe(0);
    } finally {
      server.close();
      server.closeAllConnections();
    }
  }, 30_000);
});
