/**
 * `dispatchWorkflow(...).result()`, `workflowResult` and `awaitWorkflow` wait out a service that
 * is restarting or refusing for a while. They long-poll for as long as the workflow runs (hours,
 * days), and the first request that failed ended the wait: a rolling deploy of the service, or a
 * 429 of the token's rate limit, rejected every caller waiting on a workflow with ECONNRESET,
 * ECONNREFUSED or RATE_LIMITED, though the workflow went on and completed. Now such failures are
 * retried with backoff (honouring Retry-After) within the caller's `timeoutMs`; other errors
 * (NOT_FOUND, UNAUTHENTICATED, ...) still end the wait at once. A real service, restarted on the
 * same store and port.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from '@jest/globals';
import { BatonRequestError, Client, Worker, defineWorkflow } from '../../src/sdk/index.js';
import { type Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'await-restart';
const quiet = { info() {}, warn() {}, error() {} };

const approval = defineWorkflow('Approval', async (ctx) => {
  const event = await ctx.waitForEvent('approved');
  return { approvedBy: event?.[1] ?? null };
});

let service: Service | undefined;
let worker: Worker | undefined;
afterAll(async () => {
  await worker?.shutdown();
  await service?.stop();
});

describe('a client waiting for a workflow while the service restarts', () => {
  it('result() resolves once the workflow completes after the restart, instead of rejecting with the connection error', async () => {
    service = await startService();
    const { storeUrl, token } = service;
    const port = new URL(service.url).port;
    worker = new Worker({ url: service.url, token, appId: APP, environment: ENV, workflows: [approval], logger: quiet, pollWaitMs: 1000 });
    void worker.run();
    const client = new Client({ url: service.url, token });
    const dispatched = client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'Approval' });
    const id = await dispatched;
    await waitFor(async () => (await client.workflowHistory(APP, ENV, id)).some((e) => e.type === 'DecisionCompleted'), { timeoutMs: 10_000, description: 'the workflow waiting' });
    let settled = false;
    const result = dispatched.result<{ approvedBy: string }>({ timeoutMs: 60_000 }).finally(() => (settled = true));
    result.catch(() => undefined);

    await service.kill();
    service = await startService({ storeUrl, env: { PORT: port } });
    expect(settled).toBe(false);
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'approved', data: ['ada'] });
    await expect(result).resolves.toEqual({ approvedBy: 'ada' });
  });

  it('still rejects at once for what retrying cannot change (an unknown token)', async () => {
    const client = new Client({ url: service!.url, token: 'baton_nobody_0000' });
    const error = await client.awaitWorkflow(APP, ENV, '01900000-0000-7000-8000-000000000000', { timeoutMs: 30_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BatonRequestError);
    expect((error as BatonRequestError).code).toBe('UNAUTHENTICATED');
  });

  it('a 429 answer is waited out after its Retry-After, and carried on the error as retryAfterMs', async () => {
    // A stand-in for a service over the token's rate limit once, then answering.
    const answers = [
      { status: 429, headers: { 'retry-after': '1' }, body: { errors: [{ message: 'rate limit exceeded; retry after 1s', extensions: { code: 'RATE_LIMITED' } }] } },
      {
        status: 200,
        headers: {},
        body: { data: { awaitWorkflow: { id: 'w', name: 'Approval', version: 'Approval', tag: null, state: 'COMPLETED', input: '[]', output: '{"approvedBy":"bob"}', error: null, queries: null, createdAt: '', updatedAt: '' } } },
      },
    ];
    let requests = 0;
    const fake = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        const answer = answers[Math.min(requests++, answers.length - 1)];
        response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
        response.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const client = new Client({ url: `http://127.0.0.1:${(fake.address() as AddressInfo).port}`, token: 't' });
      const refused = await client.workflow(APP, ENV, 'w').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(BatonRequestError);
      expect(refused).toMatchObject({ code: 'RATE_LIMITED', status: 429, retryAfterMs: 1000 });
      requests = 0;
      await expect(client.workflowResult(APP, ENV, 'w', { timeoutMs: 30_000 })).resolves.toEqual({ approvedBy: 'bob' });
      expect(requests).toBe(2);
    } finally {
      fake.close();
    }
  });
});
