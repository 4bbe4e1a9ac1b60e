/**
 * A worker's reports stay within the service's body limit (BODY_LIMIT_BYTES). Decisions that each
 * fit, reported together, made one request the service refused with HTTP 413 every time it was
 * sent, so none of them was ever recorded (seen: two decisions of 8,000 `ctx.dispatch` each, 413
 * every 2 s, the workflows stuck). The SDK now sends at most `maxReportBytes` a request, splits a
 * report the service refuses for its size, and records a decision that alone is over the limit as
 * failed (`DECISION_REJECTED`). A real service with a 128 KiB body limit and an in-process worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, NonRetryableError, Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const BODY_LIMIT = 128 * 1024;
const quiet = { info() {}, warn() {}, error() {} };

const noop = defineTask('noop', () => null);
/** One decision of `n` fire-and-forget tasks: about 60 bytes of commands each. */
const fanOut = defineWorkflow('FanOut', async (ctx, n: number) => {
  for (let i = 0; i < n; i++) ctx.dispatch(noop, i);
  return n;
});

/** A task failing with a 16 KB message (the most the service keeps), and a workflow running `n` of them at once and counting the failures. */
const failing = defineTask('failing', (_ctx, i: number) => {
  throw new NonRetryableError(`${i}:`.padEnd(16_000, 'e'));
});
const manyFailures = defineWorkflow('ManyFailures', async (ctx, n: number) => {
  const outcomes = await Promise.all(Array.from({ length: n }, (_, i) => ctx.run(failing, i).then(() => 'ok', () => 'failed')));
  return outcomes.filter((o) => o === 'failed').length;
});

let service: Service;
let client: Client;
beforeAll(async () => {
  service = await startService({ env: { BODY_LIMIT_BYTES: String(BODY_LIMIT) } });
  client = new Client({ url: service.url, token: service.token });
});
afterAll(() => service?.stop());

/** A worker whose reportWork request bodies (bytes) and answers' HTTP statuses are recorded. */
function recordingWorker(environment: string, options: { maxReportBytes?: number; concurrency?: number } = {}) {
  const worker = new Worker({ url: service.url, token: service.token, appId: APP, environment, tasks: [noop, failing], workflows: [fanOut, manyFailures], logger: quiet, ...options });
  const reports: Array<{ bytes: number; decisions: number; tasks: number; status: number }> = [];
  const inner = (worker as unknown as { client: { request: (query: string, variables: { input?: { decisions?: unknown[]; tasks?: unknown[] } }, ...rest: unknown[]) => Promise<unknown> } }).client;
  const request = inner.request.bind(inner);
  inner.request = async (query, variables, ...rest) => {
    if (!query.includes('reportWork')) return request(query, variables, ...rest);
    const entry = {
      bytes: Buffer.byteLength(JSON.stringify({ query, variables })),
      decisions: variables.input?.decisions?.length ?? 0,
      tasks: (variables.input as { tasks?: unknown[] } | undefined)?.tasks?.length ?? 0,
      status: 200,
    };
    reports.push(entry);
    try {
      return await request(query, variables, ...rest);
    } catch (error) {
      entry.status = (error as { status?: number }).status ?? 0;
      throw error;
    }
  };
  return { worker, reports };
}

/** Dispatches the workflows first, so that one poll brings all their decisions and they are reported together. */
async function dispatchAll(environment: string, sizes: number[]): Promise<string[]> {
  return Promise.all(sizes.map((n) => client.dispatchWorkflow({ appId: APP, environment, name: 'FanOut', input: [n] })));
}

describe('a worker reporting decisions larger together than the service takes', () => {
  it('splits a report the service refuses for its size: four decisions of 1,000 tasks (about 75 KiB each) are all recorded', async () => {
    const environment = 'report-split';
    const ids = await dispatchAll(environment, [1_000, 1_000, 1_000, 1_000]);
    const { worker, reports } = recordingWorker(environment);
    const running = worker.run();
    try {
      for (const id of ids) expect(await client.awaitWorkflow(APP, environment, id, { timeoutMs: 30_000 })).toMatchObject({ state: 'COMPLETED' });
      // At least one report was over the limit, and was answered by splitting it, not by sending it again.
      const refused = reports.filter((r) => r.status === 413);
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.every((r) => r.decisions > 1)).toBe(true);
    } finally {
      await worker.shutdown();
      await running;
    }
  }, 90_000);

  it('keeps each report within maxReportBytes, so none is refused', async () => {
    const environment = 'report-budget';
    const ids = await dispatchAll(environment, [1_000, 1_000, 1_000, 1_000]);
    const { worker, reports } = recordingWorker(environment, { maxReportBytes: 100_000 });
    const running = worker.run();
    try {
      for (const id of ids) expect(await client.awaitWorkflow(APP, environment, id, { timeoutMs: 30_000 })).toMatchObject({ state: 'COMPLETED' });
      expect(reports.filter((r) => r.status === 413)).toEqual([]);
      const withDecisions = reports.filter((r) => r.decisions > 0);
      expect(withDecisions.length).toBeGreaterThanOrEqual(4);
      expect(withDecisions.every((r) => r.decisions === 1)).toBe(true);
    } finally {
      await worker.shutdown();
      await running;
    }
  }, 90_000);

  it('records a decision that alone is over the limit as failed (DECISION_REJECTED), instead of sending it again and again', async () => {
    const environment = 'report-too-large';
    const [id] = await dispatchAll(environment, [3_000]);
    const { worker, reports } = recordingWorker(environment);
    const running = worker.run();
    try {
      const failed = await waitFor(
        async () => (await client.workflowHistory(APP, environment, id)).find((e) => e.type === 'DecisionFailed'),
        { timeoutMs: 30_000, description: 'the decision recorded as failed' },
      );
      expect(failed.data).toMatchObject({ code: 'DECISION_REJECTED', message: expect.stringContaining('BODY_LIMIT_BYTES') });
      expect(reports.filter((r) => r.status === 413 && r.decisions === 1).length).toBeGreaterThan(0);
    } finally {
      await worker.shutdown();
      await running;
    }
  }, 90_000);

  it('counts task errors in maxReportBytes: 40 failures of 16 KB messages go in reports the service takes', async () => {
    const environment = 'report-errors';
    const [id] = await Promise.all([client.dispatchWorkflow({ appId: APP, environment, name: 'ManyFailures', input: [40] })]);
    const { worker, reports } = recordingWorker(environment, { maxReportBytes: 100_000, concurrency: 100 });
    const running = worker.run();
    try {
      expect(await client.awaitWorkflow(APP, environment, id, { timeoutMs: 30_000 })).toMatchObject({ state: 'COMPLETED', output: '40' });
      expect(reports.filter((r) => r.status === 413)).toEqual([]);
      expect(reports.filter((r) => r.tasks > 0).every((r) => r.bytes <= 100_000 + 20_000)).toBe(true);
    } finally {
      await worker.shutdown();
      await running;
    }
  }, 90_000);
});
