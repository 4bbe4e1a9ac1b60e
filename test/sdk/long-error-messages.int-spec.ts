/**
 * Errors with long messages (an HTTP client's error carrying the whole response body, a
 * stringified payload) are recorded cut to what the service takes, instead of never being
 * recorded. The service takes a task error's message up to 16,384 characters (its name up to 256)
 * and any string in a decision up to MAX_JSON_STRING_LENGTH (128 KiB by default). Before:
 * - workflow code that threw such an error never failed: its decision was refused
 *   (DECISION_REJECTED), made again after a backoff, refused again, the workflow RUNNING for ever;
 * - a task that threw one had its whole report refused (with every other outcome sent alongside),
 *   resent until the leases ended, then dropped: the attempt lapsed (`lease_expired`) and its error
 *   was lost;
 * - a step (`ctx.step`) that threw one had its decision refused, as workflow code's.
 * A real service and an in-process worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WorkflowEndedError, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';

const APP = 'demo';
const ENV = 'long-errors';
const LONG = 300_000;
// An emoji (a surrogate pair) across the cut: half of one is a string the service refuses.
const longMessage = () => `${'x'.repeat(16_000)}${'😀'.repeat(LONG)}`;

const failsLoudly = defineTask('failsLoudly', () => {
  throw new Error(longMessage());
}, { retry: { maxAttempts: 1 } });
const fine = defineTask('fine', (_ctx, n: number) => n);

const throwsLong = defineWorkflow('ThrowsLong', async () => {
  throw new Error(longMessage());
});
const catchesLong = defineWorkflow('CatchesLong', async (ctx) => {
  const [failed, ...others] = await Promise.allSettled([ctx.run(failsLoudly), ctx.run(fine, 1), ctx.run(fine, 2)]);
  const step = await ctx.step('loud step', () => {
    throw new Error(longMessage());
  }).catch((error: Error) => error.message);
  return {
    task: failed.status === 'rejected' ? (failed.reason as Error).message : null,
    others: others.map((o) => (o.status === 'fulfilled' ? o.value : null)),
    step,
  };
});

let baton: InProcessWorker;
beforeAll(async () => {
  baton = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [failsLoudly, fine], workflows: [throwsLong, catchesLong] }, { env: { LEASE_MS: '2000' } });
});
afterAll(() => baton?.stop());

/** The start of the message as thrown, and a note of how long it was; no half of a surrogate pair. */
function expectCut(message: string, most: number) {
  expect(message.length).toBeLessThanOrEqual(most);
  expect(message.startsWith('x'.repeat(16_000 > most ? most - 200 : 16_000))).toBe(true);
  expect(message).toMatch(/cut; \d+ characters in all/);
  expect(() => encodeURIComponent(message)).not.toThrow(); // throws on a lone surrogate
}

describe('an error with a very long message', () => {
  it('thrown by workflow code fails the workflow, with the start of the message', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'ThrowsLong' });
    const error = await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkflowEndedError);
    expect((error as WorkflowEndedError).state).toBe('FAILED');
    expectCut((error as WorkflowEndedError).message, 16_384);
  });

  it('thrown by a task or a step fails it with the start of the message, and the outcomes sent alongside are recorded', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'CatchesLong' });
    const result = await baton.client.workflowResult<{ task: string; others: unknown[]; step: string }>(APP, ENV, id, { timeoutMs: 20_000 });
    expect(result.others).toEqual([1, 2]);
    expectCut(result.task, 16_384);
    expectCut(result.step, 16_384);
    const history = await baton.client.workflowHistory(APP, ENV, id);
    expect(history.filter((e) => e.type === 'TaskAttemptFailed').map((e) => (e.data as { reason: string }).reason)).toEqual(['error']);
  });
});
