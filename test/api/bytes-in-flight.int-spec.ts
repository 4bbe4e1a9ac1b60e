/**
 * MAX_BYTES_IN_FLIGHT: one bound on what this instance's GraphQL requests hold together. Each
 * request was bounded alone (BODY_LIMIT_BYTES, MAX_RESPONSE_BYTES), so a token holder could open
 * thousands of requests each sending a large body slowly and hold gigabytes. Here the bound is
 * 128 KiB and the body limit 64 KiB: one request that declared 100,000 bytes and sent ten holds
 * most of it; a small request is still admitted, one that would pass the bound is answered 503
 * RATE_LIMITED (limit MAX_BYTES_IN_FLIGHT, Retry-After) with nothing run, and once the slow
 * request is cut off its bytes are given back.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { DISPATCH_WORKFLOW, expectData, expectError, gql, post, unique } from './api-helpers.js';

const BOUND = 128 * 1024;
const BODY_LIMIT = 64 * 1024;

const metric = async (service: Service, name: string): Promise<number> => {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const line = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!line) throw new Error(`no ${name} in /metrics`);
  return Number(line[1]);
};

/** A POST to /graphql that declares `length` bytes and sends only `sent` of them, left open. */
function slowBody(service: Service, length: number, sent: number): { request: ClientRequest; closed: Promise<void> } {
  const url = new URL(`${service.url}/graphql`);
  const request = httpRequest({
    host: url.hostname,
    port: url.port,
    path: '/graphql',
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': String(length), authorization: `Bearer ${service.token}` },
  });
  const closed = new Promise<void>((resolve) => {
    request.on('error', () => resolve());
    request.on('close', () => resolve());
  });
  request.write('{"query":"'.padEnd(sent, ' '));
  return { request, closed };
}

describe('MAX_BYTES_IN_FLIGHT bounds what the requests in flight hold together', () => {
  let service: Service;

  beforeAll(async () => {
    service = await startService({ env: { MAX_BYTES_IN_FLIGHT: String(BOUND), BODY_LIMIT_BYTES: String(BODY_LIMIT), MAX_PAYLOAD_BYTES: '16384' } });
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('admits while the bound holds, refuses past it with 503 RATE_LIMITED and nothing run, and admits again once bytes are given back', async () => {
    expect(await metric(service, 'baton_http_bytes_in_flight')).toBe(0);
    const slow = [slowBody(service, 60_000, 10), slowBody(service, 60_000, 10)];
    // Both admitted: 120,000 bytes held of 131,072.
    await waitFor(async () => (await metric(service, 'baton_http_bytes_in_flight')) >= 120_000, { timeoutMs: 10_000, description: 'the slow bodies held' });

    // A small request fits in what is left.
    const name = unique('Admitted');
    expectData(await gql(service, DISPATCH_WORKFLOW, { input: { appId: 'demo', environment: 'dev', name, input: '[]' } }));

    // One of about 15,000 bytes does not, and nothing of it runs.
    const refusedName = unique('Refused');
    const body = JSON.stringify({ query: DISPATCH_WORKFLOW, variables: { input: { appId: 'demo', environment: 'dev', name: refusedName, input: JSON.stringify(['x'.repeat(15_000)]) } } });
    const refused = await post(service, body);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(expectError(refused, 'RATE_LIMITED').extensions?.limit).toBe('MAX_BYTES_IN_FLIGHT');
    expect(await metric(service, 'baton_http_bytes_in_flight_refusals_total')).toBe(1);

    // Cut the slow requests off: their bytes are given back, and the same request is admitted.
    for (const s of slow) s.request.destroy();
    await Promise.all(slow.map((s) => s.closed));
    await waitFor(async () => (await metric(service, 'baton_http_bytes_in_flight')) === 0, { timeoutMs: 10_000, description: 'the bytes given back' });
    expectData(await post(service, body));

    const listed = expectData(
      await gql(service, '{ workflows(filter: { appId: "demo", environment: "dev" }, first: 50) { nodes { name } } }'),
    ) as { workflows: { nodes: Array<{ name: string }> } };
    const names = listed.workflows.nodes.map((n) => n.name);
    expect(names.filter((n) => n === name)).toHaveLength(1);
    // Dispatched once: by the request admitted after the bytes were given back, not by the refused one.
    expect(names.filter((n) => n === refusedName)).toHaveLength(1);
  }, 60_000);

  it('gives an answer\'s bytes back once it is sent', async () => {
    const big = 'y'.repeat(12_000);
    const name = unique('Big');
    for (let i = 0; i < 3; i++) {
      expectData(await gql(service, DISPATCH_WORKFLOW, { input: { appId: 'demo', environment: 'dev', name, input: JSON.stringify([big]) } }));
    }
    const answered = expectData(
      await gql(service, `{ workflows(filter: { appId: "demo", environment: "dev", name: "${name}" }, first: 10) { nodes { input } } }`),
    ) as { workflows: { nodes: Array<{ input: string }> } };
    expect(answered.workflows.nodes).toHaveLength(3);
    await waitFor(async () => (await metric(service, 'baton_http_bytes_in_flight')) === 0, { timeoutMs: 10_000, description: 'the answer given back' });
  }, 60_000);
});
