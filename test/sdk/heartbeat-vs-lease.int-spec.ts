/**
 * A worker whose heartbeats are too far apart for the leases the service grants (a service run
 * with LEASE_MS=2000 and a worker left at a heartbeat every 1.5 s, or LEASE_MS lowered under the
 * default 5 s) says so, once, naming both: before, every task longer than the lease lapsed
 * (`lease_expired`) and ran again, with nothing on the worker's side saying why. A real service
 * and in-process workers.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Worker, defineTask } from '../../src/sdk/index.js';
import { type Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';

let service: Service;
beforeAll(async () => {
  service = await startService({ env: { LEASE_MS: '2000' } });
});
afterAll(() => service?.stop());

async function warningsOf(environment: string, heartbeatIntervalMs: number): Promise<string[]> {
  const warnings: string[] = [];
  const quick = defineTask('quick', () => 'done');
  const worker = new Worker({
    url: service.url,
    token: service.token,
    appId: APP,
    environment,
    tasks: [quick],
    heartbeatIntervalMs,
    pollWaitMs: 1000,
    logger: { info() {}, warn: (...a: unknown[]) => warnings.push(a.join(' ')), error: (...a: unknown[]) => warnings.push(a.join(' ')) },
  });
  const running = worker.run();
  const { Client } = await import('../../src/sdk/index.js');
  const client = new Client({ url: service.url, token: service.token });
  for (let i = 0; i < 2; i++) {
    const taskId = await client.dispatchTask({ appId: APP, environment, name: 'quick' });
    await waitFor(
      async () => {
        const { task } = await client.request<{ task: { state: string } | null }>('query($appId: String!, $environment: String!, $id: ID!) { task(appId: $appId, environment: $environment, id: $id) { state } }', { appId: APP, environment, id: taskId });
        return task?.state === 'COMPLETED';
      },
      { timeoutMs: 10_000, intervalMs: 20, description: `task ${taskId} to complete` },
    );
  }
  await worker.shutdown();
  await running;
  return warnings;
}

describe('heartbeats and the leases the service grants', () => {
  it('a heartbeat interval over half the lease is warned of once, naming both', async () => {
    const warnings = await warningsOf('lease-warned', 1500);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/heartbeatIntervalMs \(1500 ms\).*lease.*about 2 s.*LEASE_MS/);
  });

  it('one well under the lease is not', async () => {
    expect(await warningsOf('lease-fine', 200)).toEqual([]);
  });
});
