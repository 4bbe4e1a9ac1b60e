/**
 * A task's `ctx.heartbeat()` is cheap to call often. A task that heartbeats once per row it
 * processes (`for (const row of rows) { if (await ctx.heartbeat()) break; ... }`) sent one
 * `heartbeat` request per call, each naming every attempt the worker runs: 5,000 rows were 5,000
 * requests in a few seconds, which spent the token's rate limit (RATE_LIMIT_PER_MINUTE), so the
 * worker's polls and reports, and every other client of that token, were refused RATE_LIMITED.
 * Now the calls share the worker's heartbeats (at most one request in flight, and a task's call
 * sends one only when none went out for a while) and still answer whether the attempt must stop.
 * A real service and an in-process worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'heartbeats';

const warnings: string[] = [];
const logger = { info() {}, warn: (...args: unknown[]) => warnings.push(args.join(' ')), error: (...args: unknown[]) => warnings.push(args.join(' ')) };

/** Heartbeats once per row; counts the calls that said stop. */
const rows = defineTask(
  'rows',
  async (ctx, count: number) => {
    let stops = 0;
    for (let row = 0; row < count; row++) if (await ctx.heartbeat()) stops++;
    return { rows: count, stops };
  },
  { retry: { maxAttempts: 1 } },
);
let looped = 0;
let toldToStop = false;
/** Heartbeats in a loop, without waiting between calls, until told to stop. */
const untilStopped = defineTask(
  'untilStopped',
  async (ctx) => {
    for (;;) {
      looped++;
      if (await ctx.heartbeat()) {
        toldToStop = true;
        return 'stopped';
      }
    }
  },
  { retry: { maxAttempts: 1 } },
);
const perRow = defineWorkflow('PerRow', async (ctx, count: number) => ctx.run(rows, count));
const stoppable = defineWorkflow('Stoppable', async (ctx) => ctx.run(untilStopped));

let baton: InProcessWorker;
beforeAll(async () => {
  baton = await startInProcessWorker(
    { appId: APP, environment: ENV, tasks: [rows, untilStopped], workflows: [perRow, stoppable], heartbeatIntervalMs: 200, logger },
    { env: { RATE_LIMIT_PER_MINUTE: '600', LEASE_MS: '5000' } },
  );
});
afterAll(() => baton?.stop());

describe('ctx.heartbeat() called in a loop', () => {
  it('5,000 calls from one task do not spend the token rate limit: the workflow completes and the worker is never refused', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'PerRow', input: [5000] });
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 30_000 })).toEqual({ rows: 5000, stops: 0 });
    expect(warnings.filter((line) => /RATE_LIMITED|rate limit/.test(line))).toEqual([]);
  });

  it('still answers true once the workflow is terminated, to a task that calls it without pause', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'Stoppable' });
    await waitFor(() => looped > 100, { timeoutMs: 10_000, description: 'the task looping' });
    await baton.client.terminateWorkflows({ appId: APP, environment: ENV, selector: { id }, reason: 'test' });
    await waitFor(() => toldToStop, { timeoutMs: 15_000, description: 'ctx.heartbeat() to answer true' });
    expect(warnings.filter((line) => /RATE_LIMITED|rate limit/.test(line))).toEqual([]);
  });
});
