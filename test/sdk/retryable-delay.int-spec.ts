/**
 * A task's `RetryableError` with a delay the service does not take (negative: a reset time that
 * has just passed, `resetAt - Date.now()`; or past a year) is sent within bounds (0 to 365 days).
 * Before, the service refused the whole report for that one field (with every outcome sent
 * alongside), the worker resent it until the leases ended and dropped it: the attempt lapsed
 * (`lease_expired`), and the task's error was lost. A real service and an in-process worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RetryableError, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';

const APP = 'demo';
const ENV = 'retryable-delay';

const rateLimited = defineTask(
  'rateLimited',
  (ctx, delayMs: number) => {
    if (ctx.attempt === 1) throw new RetryableError('rate limited', { retryAfterMs: delayMs });
    return `attempt ${ctx.attempt}`;
  },
  { retry: { maxAttempts: 2 } },
);
const calls = defineWorkflow('Calls', async (ctx, delayMs: number) => ctx.run(rateLimited, delayMs));

let baton: InProcessWorker;
beforeAll(async () => {
  baton = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [rateLimited], workflows: [calls] }, { env: { LEASE_MS: '2000' } });
});
afterAll(() => baton?.stop());

describe('RetryableError with a delay out of bounds', () => {
  it('a negative delay retries at once: the attempt failed with its error, not by a lapsed lease', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'Calls', input: [-250] });
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 20_000 })).toBe('attempt 2');
    const failed = (await baton.client.workflowHistory(APP, ENV, id)).filter((e) => e.type === 'TaskAttemptFailed');
    expect(failed.map((e) => (e.data as { reason: string; error: { message: string } }).error.message)).toEqual(['rate limited']);
    expect(failed.map((e) => (e.data as { reason: string }).reason)).toEqual(['error']);
  });
});
