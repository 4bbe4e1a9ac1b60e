/**
 * A schedule a workflow asks for (`ctx.schedule`) whose arguments are over
 * MAX_PAYLOAD_BYTES but within the decision's own limit (MAX_DECISION_BYTES). The decision is
 * checked and recorded (ScheduleRequested), the workflow gets the schedule's id and goes on; the
 * effects reactor then creates the schedule through `ScheduleCreator.createFor`, which parses the
 * recorded arguments again against MAX_PAYLOAD_BYTES, refuses them (BAD_USER_INPUT) and the
 * effect is "skipped": the schedule never exists, silently. worker-input-limits.ts says of this
 * command "a schedule that cannot be created is refused now, not skipped later"; a child workflow
 * or a task with the same arguments is started (their dispatchers do not re-check the size).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Client, defineWorkflow } from '../../src/sdk/index.js';
import { startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';
import { Schedules } from './schedule-helpers.js';

const APP = 'demo';
const ENV = 'schedule-args';
const PAYLOAD = 4096;

const noop = defineWorkflow('RevSchedNoop', async () => 'ok');
/** Asks for a yearly schedule of RevSchedNoop with `size` characters of argument; answers its id. */
const asksForSchedule = defineWorkflow('RevSchedAsks', async (ctx, size: number) =>
  ctx.schedule('0 0 1 1 *').workflow(noop, 'x'.repeat(size)),
);

let client: Client;
let api: Schedules;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  let service;
  ({ client, stop, service } = await startInProcessWorker(
    { appId: APP, environment: ENV, workflows: [noop, asksForSchedule] },
    { env: { MAX_PAYLOAD_BYTES: String(PAYLOAD) } },
  ));
  api = new Schedules(service, ENV);
});

afterAll(async () => {
  await stop?.();
});

async function scheduleAskedFor(size: number): Promise<{ scheduleId: string; exists: () => Promise<boolean> }> {
  const workflowId = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevSchedAsks', input: [size] });
  const done = await waitFor(
    async () => {
      const w = await client.workflow(APP, ENV, workflowId);
      return w?.state === 'COMPLETED' ? w : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 50, description: 'the workflow that asks for a schedule to complete' },
  );
  const scheduleId = JSON.parse(done.output!) as string;
  return { scheduleId, exists: async () => (await api.schedule(scheduleId)) !== null };
}

describe('a schedule a workflow asks for', () => {
  it('with small arguments exists once the workflow completed (control)', async () => {
    const { exists } = await scheduleAskedFor(10);
    await waitFor(exists, { timeoutMs: 15_000, intervalMs: 50, description: 'the schedule asked for' });
  }, 60_000);

  it('with arguments over MAX_PAYLOAD_BYTES that the decision took is created too, not silently skipped', async () => {
    const { scheduleId, exists } = await scheduleAskedFor(PAYLOAD + 1000);
    expect(typeof scheduleId).toBe('string');
    await waitFor(exists, { timeoutMs: 15_000, intervalMs: 50, description: `schedule ${scheduleId}, which the workflow was told it created` });
  }, 60_000);
});
