/**
 * Review (rev-engine): engine semantics at the edges. A real service and an in-process worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RetryableError, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'review-rev-engine';
const DAY = 24 * 3_600_000;

const rateLimited = defineTask(
  'revRateLimited',
  (ctx, delayMs: number) => {
    if (ctx.attempt === 1) throw new RetryableError('rate limited', { retryAfterMs: delayMs });
    return `attempt ${ctx.attempt}`;
  },
  { retry: { maxAttempts: 2 } },
);
const calls = defineWorkflow('RevCalls', async (ctx, delayMs: number) => ctx.run(rateLimited, delayMs));

let baton: InProcessWorker;
beforeAll(async () => {
  baton = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [rateLimited], workflows: [calls] }, { env: { LEASE_MS: '2000' } });
});
afterAll(() => baton?.stop());

type Failed = { reason: string; error: { message: string }; retryAt: string | null };

describe('RetryableError asking for a delay past 24.8 days (the SDK said it took 365 days)', () => {
  it('records the attempt failed with its error and the delay asked, not lapsed by its lease', async () => {
    const before = Date.now();
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevCalls', input: [30 * DAY] });
    const failed = await waitFor(
      async () => {
        const events = (await baton.client.workflowHistory(APP, ENV, id)).filter((e) => e.type === 'TaskAttemptFailed');
        return events.length > 0 ? (events[0].data as Failed) : undefined;
      },
      { timeoutMs: 30_000, description: 'the first attempt failed' },
    );
    expect(failed.reason).toBe('error');
    expect(failed.error.message).toBe('rate limited');
    // Capped at what the protocol carries (a GraphQL Int of ms, about 24.8 days).
    expect(Date.parse(failed.retryAt!)).toBeGreaterThanOrEqual(before + 2 ** 31 - 1);
  });
});
