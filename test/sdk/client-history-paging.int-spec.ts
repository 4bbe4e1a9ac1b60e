/**
 * `Client.workflowHistory` answers a whole history however long it is: it pages through the
 * `workflowHistory` query (1,000 events a request, the server's default page) instead of answering
 * the first page only. Real service on the embedded store, an in-process SDK worker, and the SDK
 * client over GraphQL; no mocks.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BatonRequestError, Client, Worker, defineWorkflow } from '../../src/sdk/index.js';
import { type Service, startService } from '../support/service.js';

const APP = 'demo';
const ENV = 'history-paging';
/** More inline steps than one page of history holds: each is one `StepCompleted` event. */
const STEPS = 1_100;

/** One decision of STEPS inline steps, so the history passes 1,000 events without a round trip per step. */
const manySteps = defineWorkflow('ManySteps', async (ctx, n: number) => {
  let total = 0;
  for (let i = 0; i < n; i++) total += await ctx.step('count', () => i);
  return total;
});

let service: Service;
let worker: Worker;
let running: Promise<void>;
let client: Client;
let id: string;

beforeAll(async () => {
  service = await startService();
  const quiet = { info() {}, warn() {}, error() {} };
  worker = new Worker({ url: service.url, token: service.token, appId: APP, environment: ENV, workflows: [manySteps], logger: quiet });
  running = worker.run();
  client = new Client({ url: service.url, token: service.token });
  const dispatched = client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'ManySteps', input: [STEPS] });
  id = await dispatched;
  // Long-polls until the workflow completes (or fails the test at the deadline): no fixed sleep.
  expect(await dispatched.result({ timeoutMs: 60_000 })).toBe((STEPS * (STEPS - 1)) / 2);
}, 90_000);

afterAll(async () => {
  await worker?.shutdown();
  await running;
  await service?.stop();
});

/** Counts the requests the client sends while `fn` runs. */
async function counting<T>(fn: () => Promise<T>): Promise<{ value: T; requests: number }> {
  const request = client.request.bind(client);
  let requests = 0;
  client.request = ((...args: Parameters<Client['request']>) => {
    requests++;
    return request(...args);
  }) as Client['request'];
  try {
    return { value: await fn(), requests };
  } finally {
    client.request = request;
  }
}

/** The history in one request of the largest page the API allows, straight over GraphQL. */
async function rawHistory(): Promise<Array<{ revision: number; type: string }>> {
  const response = await service.gql<{ workflowHistory: Array<{ revision: number; type: string }> }>(
    'query($id: ID!) { workflowHistory(appId: "demo", environment: "history-paging", id: $id, first: 10000) { revision type } }',
    { id },
  );
  expect(response.body.errors).toBeUndefined();
  return response.body.data!.workflowHistory;
}

describe('Client.workflowHistory', () => {
  it('answers the whole of a history longer than one page, reading it page by page', async () => {
    const { value: history, requests } = await counting(() => client.workflowHistory(APP, ENV, id));
    const raw = await rawHistory();
    expect(raw.length).toBeGreaterThan(1_000);
    expect(raw.length).toBeLessThan(10_000);

    expect(history).toHaveLength(raw.length);
    expect(history.map((e) => [e.revision, e.type])).toEqual(raw.map((e) => [e.revision, e.type]));
    expect(history.map((e) => e.revision)).toEqual(Array.from({ length: raw.length }, (_, i) => i));
    // Pages of 1,000 until a short one (an empty one when the length is a multiple of 1,000).
    expect(requests).toBe(Math.floor(raw.length / 1_000) + 1);

    const steps = history.filter((e) => e.type === 'StepCompleted');
    expect(steps).toHaveLength(STEPS);
    // `data` is parsed; the last page's events are there too.
    expect((steps[STEPS - 1].data as { result: number }).result).toBe(STEPS - 1);
    expect(history.at(-1)).toEqual(expect.objectContaining({ type: 'WorkflowCompleted', data: { result: (STEPS * (STEPS - 1)) / 2 } }));
    expect(Number.isNaN(Date.parse(history.at(-1)!.recordedAt))).toBe(false);
  });

  it('answers the rest of the history from `fromRevision`', async () => {
    const whole = await client.workflowHistory(APP, ENV, id);
    const { value: rest, requests } = await counting(() => client.workflowHistory(APP, ENV, id, { fromRevision: 500 }));
    expect(rest).toEqual(whole.slice(500));
    expect(requests).toBe(Math.floor((whole.length - 500) / 1_000) + 1);
  });

  it('answers one page of `first` events from `fromRevision` in one request', async () => {
    const whole = await client.workflowHistory(APP, ENV, id);
    const { value: page, requests } = await counting(() => client.workflowHistory(APP, ENV, id, { fromRevision: 990, first: 20 }));
    expect(requests).toBe(1);
    expect(page).toEqual(whole.slice(990, 1_010));
    expect(await client.workflowHistory(APP, ENV, id, { first: 5 })).toEqual(whole.slice(0, 5));
    expect(await client.workflowHistory(APP, ENV, id, { fromRevision: whole.length, first: 5 })).toEqual([]);
  });

  it('throws NOT_FOUND for an unknown workflow and BAD_USER_INPUT for a page larger than the API allows', async () => {
    const unknown = client.workflowHistory(APP, ENV, '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b');
    await expect(unknown).rejects.toBeInstanceOf(BatonRequestError);
    await expect(unknown).rejects.toEqual(expect.objectContaining({ code: 'NOT_FOUND' }));
    await expect(client.workflowHistory(APP, ENV, id, { first: 10_001 })).rejects.toEqual(expect.objectContaining({ code: 'BAD_USER_INPUT' }));
  });
});
