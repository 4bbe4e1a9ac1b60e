/**
 * One heartbeat request that the network loses (sent, never answered: a dropped connection, a
 * proxy that stalls) must not stop the worker's heartbeats. Ticks share the request in flight
 * (07c4c1a); a request in flight for longer than the heartbeat interval is not shared, or one
 * lost request held every heartbeat back for the client's whole request timeout (30 s), past
 * the service's lease (LEASE_MS, 30 s by default): every running task lost its lease and ran
 * again. A real service (LEASE_MS=3000) behind a stand-in proxy that holds the first heartbeat
 * request unanswered; the task runs until the service has been heartbeated over more than a lease
 * after it.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Worker, defineTask } from '../../src/sdk/index.js';
import { type Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'heartbeat-stalled';
const LEASE_MS = 3000;

let service: Service;
let proxy: Server;
let proxyUrl: string;
/** Heartbeat requests the proxy passed on, with when, after the one it holds. */
const forwarded: number[] = [];
let held = 0;

beforeAll(async () => {
  service = await startService({ env: { LEASE_MS: String(LEASE_MS) } });
  const target = new URL(service.url);
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const isHeartbeat = body.toString('utf8').includes('heartbeat(input');
      if (isHeartbeat && held === 0) {
        held++;
        return; // lost: never answered
      }
      if (isHeartbeat) forwarded.push(Date.now());
      const out = httpRequest(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      out.on('error', () => res.destroy());
      out.end(body);
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  proxy?.close();
  proxy?.closeAllConnections();
  await service?.stop();
});

describe('a heartbeat request that is never answered', () => {
  it('does not hold back the heartbeats after it: the task keeps its lease and runs once', async () => {
    let attempts = 0;
    const long = defineTask('longRunning', async () => {
      attempts++;
      // Runs until heartbeats (after the lost one) have covered more than a lease.
      await waitFor(() => held > 0 && forwarded.length >= 2 && forwarded[forwarded.length - 1] - forwarded[0] > LEASE_MS * 1.5, {
        timeoutMs: 20_000,
        description: 'heartbeats going on after the lost one',
      });
      return 'done';
    });
    const worker = new Worker({ url: proxyUrl, token: service.token, appId: APP, environment: ENV, tasks: [long], heartbeatIntervalMs: 200, pollWaitMs: 1000, logger: { info() {}, warn() {}, error() {} } });
    const running = worker.run();
    try {
      const client = new Client({ url: service.url, token: service.token });
      const taskId = await client.dispatchTask({ appId: APP, environment: ENV, name: 'longRunning' });
      const state = await waitFor(
        async () => {
          const { task } = await client.request<{ task: { state: string } | null }>(
            'query($appId: String!, $environment: String!, $id: ID!) { task(appId: $appId, environment: $environment, id: $id) { state } }',
            { appId: APP, environment: ENV, id: taskId },
          );
          return task && task.state !== 'RUNNING' && task.state !== 'PENDING' && task.state !== 'SCHEDULED' ? task.state : null;
        },
        { timeoutMs: 60_000, intervalMs: 50, description: 'the task to end' },
      );
      expect(held).toBe(1);
      expect(state).toBe('COMPLETED');
      expect(attempts).toBe(1);
    } finally {
      await worker.shutdown();
      await running;
    }
  }, 90_000);
});
