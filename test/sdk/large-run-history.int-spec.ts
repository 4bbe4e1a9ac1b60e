/**
 * A decision's history reaches its worker however large the run is. A claim hands a worker the
 * whole run when that worker does not hold it, and only what followed its previous decision when
 * it does; either was sent inline in the poll's (or report's) answer, so a run larger than
 * MAX_RESPONSE_BYTES made every answer carrying it a PAYLOAD_TOO_LARGE error after the claim was
 * recorded, and the workflow never moved again (seen: 180 task results of 100 KB, a restarted
 * worker, 8 decisions started and lost in 40 s). Now a history the answer has no room for is left
 * out of the claim and the worker pages it in with `decisionHistory`. A real service with a
 * 256 KiB response limit and in-process workers.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const RESPONSE_LIMIT = 256 * 1024;
const RESULT_BYTES = 10_000;
const quiet = { info() {}, warn() {}, error() {} };

const big = defineTask('big', (_ctx, i: number) => `${i}:`.padEnd(RESULT_BYTES, 'x'));
/** `n` tasks one after the other (each result 10 KB), then a wait for `go`. */
const sequential = defineWorkflow('Sequential', async (ctx, n: number) => {
  let total = 0;
  for (let i = 0; i < n; i++) total += (await ctx.run(big, i)).length;
  await ctx.waitForEvent('go');
  return total;
});
/** A task with large arguments: it answers their length. */
const measure = defineTask('measure', (_ctx, text: string) => text.length);
/** `n` tasks at once, each with 10 KB of arguments. */
const wideArgs = defineWorkflow('WideArgs', async (ctx, n: number) => {
  const lengths = await Promise.all(Array.from({ length: n }, (_, i) => ctx.run(measure, `${i}:`.padEnd(10_000, 'y'))));
  return lengths.reduce((sum, l) => sum + l, 0);
});

/** Tasks that finish once the test opens the gate. */
let openGate: () => void = () => {};
let gate = new Promise<void>((resolve) => (openGate = resolve));
const gated = defineTask('gated', async (_ctx, i: number) => {
  await gate;
  return `${i}:`.padEnd(RESULT_BYTES, 'x');
});
/** `n` gated tasks at once. */
const parallel = defineWorkflow('Parallel', async (ctx, n: number) => {
  const results = await Promise.all(Array.from({ length: n }, (_, i) => ctx.run(gated, i)));
  return results.reduce((sum, r) => sum + r.length, 0);
});

let service: Service;
let client: Client;
beforeAll(async () => {
  // Every stored value still fits an answer on its own (configWarnings): a decision's commands up to 120,000 bytes.
  service = await startService({ env: { MAX_RESPONSE_BYTES: String(RESPONSE_LIMIT), MAX_DECISION_BYTES: '120000', MAX_PAYLOAD_BYTES: '32768' } });
  client = new Client({ url: service.url, token: service.token });
});
afterAll(() => service?.stop());

/** A worker whose answers' sizes and errors are recorded, and whose decisionHistory requests are counted. */
function recordingWorker(environment: string) {
  const worker = new Worker({ url: service.url, token: service.token, appId: APP, environment, tasks: [big, gated, measure], workflows: [sequential, parallel, wideArgs], logger: quiet, pollWaitMs: 1_000, concurrency: 100 });
  const seen = { pages: 0, errors: [] as string[] };
  const inner = (worker as unknown as { client: { request: (query: string, ...rest: unknown[]) => Promise<unknown> } }).client;
  const request = inner.request.bind(inner);
  inner.request = async (query, ...rest) => {
    if (query.includes('decisionHistory')) seen.pages++;
    try {
      return await request(query, ...rest);
    } catch (error) {
      // A poll cut short by the worker's shutdown is not a failure.
      if ((error as Error).name !== 'AbortError') seen.errors.push((error as Error).message);
      throw error;
    }
  };
  return { worker, seen };
}

async function runUntil<T>(worker: Worker, until: () => Promise<T>): Promise<T> {
  const running = worker.run();
  try {
    return await until();
  } finally {
    await worker.shutdown();
    await running;
  }
}

/** The history in pages of 10 events (a default page of these runs is over the response limit). */
async function history(environment: string, id: string): Promise<Array<{ revision: number; type: string }>> {
  const events: Array<{ revision: number; type: string }> = [];
  for (let from = 0; ; ) {
    const page = await client.workflowHistory(APP, environment, id, { fromRevision: from, first: 10 });
    events.push(...page);
    if (page.length < 10) return events;
    from = page[page.length - 1].revision + 1;
  }
}

/** Once every task of a `Sequential` of `n` completed and the decision after the last one did too (it waits for `go`). */
const waiting = (environment: string, id: string, n: number) =>
  waitFor(
    async () => {
      const events = await history(environment, id);
      return events.filter((e) => e.type === 'TaskCompleted').length === n && events[events.length - 1].type === 'DecisionCompleted' ? true : undefined;
    },
    { timeoutMs: 60_000, description: `workflow ${id} waiting for its event` },
  );

describe('a run larger than the response limit', () => {
  it('reaches a worker that does not hold it: one run of 40 results of 10 KB (about 400 KB), a new worker, an event', async () => {
    const environment = 'large-run';
    const id = await client.dispatchWorkflow({ appId: APP, environment, name: 'Sequential', input: [40] });
    await runUntil(recordingWorker(environment).worker, () => waiting(environment, id, 40));

    const { worker, seen } = recordingWorker(environment);
    const result = await runUntil(worker, async () => {
      await client.sendEventToWorkflows({ appId: APP, environment, selector: { id }, name: 'go', data: [] });
      return client.awaitWorkflow(APP, environment, id, { timeoutMs: 60_000 });
    });
    expect(result).toMatchObject({ state: 'COMPLETED', output: String(40 * RESULT_BYTES) });
    // The run came in pages, each within the limit; no answer was refused.
    expect(seen.pages).toBeGreaterThan(1);
    expect(seen.errors).toEqual([]);
    // The client reads the whole history too: its default page of 1,000 events is over the limit here, so it asks for shorter ones.
    const whole = await client.workflowHistory(APP, environment, id);
    expect(whole.map((e) => e.revision)).toEqual(whole.map((_, i) => i));
    expect(whole.filter((e) => e.type === 'TaskCompleted')).toHaveLength(40);
    expect(whole[whole.length - 1].type).toBe('WorkflowCompleted');
  }, 120_000);

  it('reaches a new worker for several runs claimed in one poll, each fitting an answer alone but not together', async () => {
    const environment = 'large-runs';
    const ids = await Promise.all([0, 1, 2, 3].map(() => client.dispatchWorkflow({ appId: APP, environment, name: 'Sequential', input: [10] })));
    await runUntil(recordingWorker(environment).worker, () => Promise.all(ids.map((id) => waiting(environment, id, 10))));

    // The events first, so that the new worker's first poll claims the four decisions together.
    for (const id of ids) await client.sendEventToWorkflows({ appId: APP, environment, selector: { id }, name: 'go', data: [] });
    const { worker, seen } = recordingWorker(environment);
    const results = await runUntil(worker, () => Promise.all(ids.map((id) => client.awaitWorkflow(APP, environment, id, { timeoutMs: 60_000 }))));
    for (const result of results) expect(result).toMatchObject({ state: 'COMPLETED', output: String(10 * RESULT_BYTES) });
    expect(seen.errors).toEqual([]);
  }, 120_000);

  it('reaches the worker that holds it when what followed its last decision is too large: 40 results of 10 KB recorded while paused', async () => {
    const environment = 'large-delta';
    const id = await client.dispatchWorkflow({ appId: APP, environment, name: 'Parallel', input: [40] });
    const count = async (type: string) => (await history(environment, id)).filter((e) => e.type === type).length;
    const { worker, seen } = recordingWorker(environment);
    const result = await runUntil(worker, async () => {
      await waitFor(async () => ((await count('TaskStarted')) === 40 ? true : undefined), { timeoutMs: 60_000, description: '40 tasks started' });
      // Paused, the workflow takes the 40 results without a decision in between: the next one follows them all.
      await client.pauseWorkflows({ appId: APP, environment, selector: { id } });
      openGate();
      await waitFor(async () => ((await count('TaskCompleted')) === 40 ? true : undefined), { timeoutMs: 60_000, description: '40 tasks completed' });
      await client.resumeWorkflows({ appId: APP, environment, selector: { id } });
      return client.awaitWorkflow(APP, environment, id, { timeoutMs: 60_000 });
    });
    expect(result).toMatchObject({ state: 'COMPLETED', output: String(40 * RESULT_BYTES) });
    expect(seen.errors).toEqual([]);
    // One decision followed the 40 results, and none failed or timed out on the way.
    const types = (await history(environment, id)).map((e) => e.type);
    expect(types.filter((t) => t === 'DecisionStarted')).toHaveLength(2);
    expect(types.filter((t) => t === 'DecisionFailed' || t === 'DecisionTimedOut')).toEqual([]);
  }, 120_000);

  it('hands a worker with 100 free slots 40 tasks of 10 KB arguments (400 KB) over several answers, each within the limit', async () => {
    const environment = 'large-args';
    // Four decisions of 10 tasks (100 KB each): their tasks are claimed together, in the answer to the report of the decisions.
    const ids = await Promise.all([0, 1, 2, 3].map(() => client.dispatchWorkflow({ appId: APP, environment, name: 'WideArgs', input: [10] })));
    const { worker, seen } = recordingWorker(environment);
    const results = await runUntil(worker, () => Promise.all(ids.map((id) => client.awaitWorkflow(APP, environment, id, { timeoutMs: 60_000 }))));
    for (const result of results) expect(result).toMatchObject({ state: 'COMPLETED', output: String(10 * 10_000) });
    expect(seen.errors).toEqual([]);
    // Every task ran once: none lost its lease in an answer the service refused.
    for (const id of ids) expect((await history(environment, id)).filter((e) => e.type === 'TaskStarted')).toHaveLength(10);
  }, 120_000);
});
