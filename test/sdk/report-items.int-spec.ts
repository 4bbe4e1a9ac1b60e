/**
 * A worker whose outcomes outnumber what the service takes in one request (`MAX_REPORT_ITEMS`,
 * 1,000 by default) sends them in several. Reports were cut by bytes only: a worker with many
 * slots whose tasks finished together (released by one event, one timer) sent them all in one
 * report, which the service refused as a whole (BAD_USER_INPUT, "split it"); the worker sent the
 * same report again until the leases ended, then dropped every outcome, and each task ran again.
 * Heartbeats are cut the same way. A real service with MAX_REPORT_ITEMS=20 and an in-process
 * worker of 40 slots (LEASE_MS=2000).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'report-items';
const TASKS = 40;

const warnings: string[] = [];
const logger = { info() {}, warn: (...a: unknown[]) => warnings.push(a.join(' ')), error: (...a: unknown[]) => warnings.push(a.join(' ')) };

let open!: () => void;
const gate = new Promise<void>((resolve) => (open = resolve));
let started = 0;
let ran = 0;
const held = defineTask('held', async (ctx, n: number) => {
  started++;
  await gate;
  ran++;
  return n;
});
const fanOut = defineWorkflow('FanOut', async (ctx, count: number) => {
  const results = await Promise.all(Array.from({ length: count }, (_, i) => ctx.run(held, i)));
  return results.length;
});

let baton: InProcessWorker;
beforeAll(async () => {
  baton = await startInProcessWorker(
    { appId: APP, environment: ENV, tasks: [held], workflows: [fanOut], concurrency: TASKS, heartbeatIntervalMs: 200, logger },
    { env: { MAX_REPORT_ITEMS: '20', LEASE_MS: '2000' } },
  );
});
afterAll(() => baton?.stop());

describe('more outcomes at once than MAX_REPORT_ITEMS', () => {
  it('40 tasks that finish together are all recorded, each run once, and heartbeats of 40 attempts are taken', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'FanOut', input: [TASKS] });
    await waitFor(() => started === TASKS, { timeoutMs: 15_000, description: 'every task running' });
    // Heartbeats of all 40 attempts keep their leases (LEASE_MS=2000: recorded once half is gone).
    await waitFor(
      async () => new Set((await baton.client.workflowHistory(APP, ENV, id)).filter((e) => e.type === 'TaskLeaseExtended').map((e) => (e.data as { seq: number }).seq)).size === TASKS,
      { timeoutMs: 15_000, intervalMs: 100, description: "every task's lease extended by a heartbeat" },
    );
    open();
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 20_000 })).toBe(TASKS);
    expect(ran).toBe(TASKS);
    expect(started).toBe(TASKS);
    expect(warnings.filter((w) => /MAX_REPORT_ITEMS/.test(w))).toEqual([]);
  });
});
