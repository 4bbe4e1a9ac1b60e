/**
 * Memory amplification with a valid (read-only capable) token: the response limit
 * (MAX_RESPONSE_BYTES) was checked only once the whole answer was built, so a query of many
 * aliases over pages of big stored values read and held every page first. Here the service runs
 * with a 160 MB heap, where 40 aliases over 4 MB of stored inputs (or history data) were enough
 * to abort the process (V8 "heap out of memory", every tenant's requests cut); with the default
 * 4 GB heap the same query over 500 workflows of 256 KiB inputs did it.
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { type Service, startService } from '../support/service.js';
import { Client, type Response, expectData, expectError, post, unique } from './api-helpers.js';

const WORKFLOWS = 20;
const ALIASES = 40;
/** A workflow input (or event data) of about 200 KB, within MAX_JSON_STRING_LENGTH. */
const BIG = JSON.stringify(['x'.repeat(100_000), 'y'.repeat(100_000)]);

/** A fresh service (one crash must not fail the next case) with 20 workflows of big inputs, the last one with 20 big events. */
async function given(): Promise<{ service: Service; name: string; workflowId: string }> {
  const service = await startService({ env: { NODE_OPTIONS: '--max-old-space-size=160' } });
  const api = new Client(service, 'demo', 'dev');
  const name = unique('Heavy');
  let workflowId = '';
  for (let i = 0; i < WORKFLOWS; i++) workflowId = await api.dispatchWorkflow(name, { input: BIG });
  for (let i = 0; i < WORKFLOWS; i++) await api.act('send', { id: workflowId }, { name: 'Big', data: BIG });
  return { service, name, workflowId };
}

/** The answer, or how the request failed (the socket closed: the process died). */
const ask = (service: Service, query: string): Promise<Response | { failed: string }> =>
  post(service, JSON.stringify({ query })).catch((error: Error) => ({ failed: `${error.message} (${String((error.cause as Error | undefined)?.message)})` }));

const aliases = (field: string) => `{ ${Array.from({ length: ALIASES }, (_, i) => `a${i}: ${field}`).join(' ')} }`;

describe('many aliases over big stored values (a 160 MB heap)', () => {
  let service: Service | undefined;

  afterEach(async () => {
    await service?.stop();
    service = undefined;
  });

  /** The process is alive and answers. */
  const stillServes = async (s: Service) => {
    expect({ exitCode: s.process.exitCode, signal: s.process.signalCode }).toEqual({ exitCode: null, signal: null });
    expect(expectData(await post(s, JSON.stringify({ query: '{ viewer { role } }' }))).viewer.role).toBe('admin');
  };

  it('workflows { nodes { input } } 40 times over 4 MB of inputs → PAYLOAD_TOO_LARGE (limit response), and the service stays up', async () => {
    const { service: s, name } = await given();
    service = s;
    const response = await ask(s, aliases(`workflows(first: ${WORKFLOWS}, filter: { appId: "demo", environment: "dev", name: "${name}" }) { nodes { input } }`));
    expect('failed' in response ? response.failed : 'answered').toBe('answered');
    if ('failed' in response) return;
    expect(expectError(response, 'PAYLOAD_TOO_LARGE').extensions?.limit).toBe('response');
    expect(response.text.length).toBeLessThan(1024);
    await stillServes(s);
  }, 90_000);

  it('the same aliases asking only for ids are answered: inputs read and not asked for are not held for the whole answer', async () => {
    const { service: s, name } = await given();
    service = s;
    const response = await ask(s, aliases(`workflows(first: ${WORKFLOWS}, filter: { appId: "demo", environment: "dev", name: "${name}" }) { nodes { id } }`));
    expect('failed' in response ? response.failed : 'answered').toBe('answered');
    if ('failed' in response) return;
    const data = expectData(response);
    expect(data.a0.nodes).toHaveLength(WORKFLOWS);
    expect(data[`a${ALIASES - 1}`].nodes).toHaveLength(WORKFLOWS);
    await stillServes(s);
  }, 90_000);

  it('decisionHistory (worker protocol) 40 times over a claimed decision of a 4 MB run → PAYLOAD_TOO_LARGE, and the service stays up', async () => {
    const { service: s, name, workflowId } = await given();
    service = s;
    const worker = { appId: 'demo', environment: 'dev', workerId: 'hoarder' };
    // The last workflow's decision (its input and 20 big events), claimed as any worker of the app may.
    let item: { ref: string; decisionId: string } | undefined;
    for (let tries = 0; !item && tries < WORKFLOWS + 5; tries++) {
      const polled = expectData(
        await post(s, JSON.stringify({ query: 'mutation($input: PollWorkInput!) { pollWork(input: $input) { ref decisionId workflowId } }', variables: { input: { ...worker, workflows: [name], tasks: [], maxItems: 10, waitMs: 0 } } })),
      );
      item = polled.pollWork.find((w: { workflowId: string }) => w.workflowId === workflowId);
    }
    expect(item).toBeDefined();
    const input = JSON.stringify({ ...worker, ref: item!.ref, decisionId: item!.decisionId }).replace(/"(\w+)":/g, '$1:');
    const response = await ask(s, aliases(`decisionHistory(input: ${input})`));
    expect('failed' in response ? response.failed : 'answered').toBe('answered');
    if ('failed' in response) return;
    expect(expectError(response, 'PAYLOAD_TOO_LARGE').extensions?.limit).toBe('response');
    await stillServes(s);
  }, 90_000);

  it('workflowHistory { data } 40 times over 4 MB of events → PAYLOAD_TOO_LARGE, and the service stays up', async () => {
    const { service: s, workflowId } = await given();
    service = s;
    const response = await ask(s, aliases(`workflowHistory(appId: "demo", environment: "dev", id: "${workflowId}", first: 1000) { data }`));
    expect('failed' in response ? response.failed : 'answered').toBe('answered');
    if ('failed' in response) return;
    expect(expectError(response, 'PAYLOAD_TOO_LARGE').extensions?.limit).toBe('response');
    await stillServes(s);
  }, 90_000);
});

describe('pollWork aliases claiming the same tasks again as their leases lapse (a 160 MB heap, LEASE_MS=200)', () => {
  let service: Service | undefined;

  afterAll(async () => {
    await service?.stop();
  });

  it('40 aliases, each answering 20 tasks of 200 KB arguments → PAYLOAD_TOO_LARGE once the answer is full, and the service stays up', async () => {
    service = await startService({ env: { NODE_OPTIONS: '--max-old-space-size=160', LEASE_MS: '200' } });
    const s = service;
    const api = new Client(s, 'demo', 'dev');
    const name = unique('Fat');
    for (let i = 0; i < 20; i++) await api.dispatchTask(name, BIG);
    // The worker picks its retry policy: at once, a thousand times; each lapsed lease makes the task claimable again.
    const retry = '{ maxAttempts: 1000, initialDelayMs: 0, backoffFactor: 1, maxDelayMs: 0 }';
    const poll = `pollWork(input: { appId: "demo", environment: "dev", workerId: "hoarder", workflows: [], tasks: [{ name: "${name}", retry: ${retry} }], maxItems: 100, waitMs: 5000 }) { input }`;
    const response = await ask(s, `mutation ${aliases(poll)}`);
    expect('failed' in response ? response.failed : 'answered').toBe('answered');
    if ('failed' in response) return;
    expect(expectError(response, 'PAYLOAD_TOO_LARGE').extensions?.limit).toBe('response');
    expect({ exitCode: s.process.exitCode, signal: s.process.signalCode }).toEqual({ exitCode: null, signal: null });
    expect(expectData(await post(s, JSON.stringify({ query: '{ viewer { role } }' }))).viewer.role).toBe('admin');
  }, 120_000);
});
