/**
 * Query answers (`ctx.onQuery`) are read-only side data of a decision. A handler whose
 * answer breaks a JSON limit of the service (the workflow's state grown past MAX_PAYLOAD_BYTES,
 * a string past MAX_JSON_STRING_LENGTH, nested past MAX_JSON_DEPTH) must not stop the workflow:
 * the decision carrying it was refused whole (BAD_USER_INPUT on decisions.queries), the SDK
 * recorded it failed (DECISION_REJECTED), made it again after a backoff, and so on for ever, the
 * workflow RUNNING and never moving. A real service and an in-process worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { defineWorkflow } from '../../src/sdk/index.js';
import { type InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';

const APP = 'demo';
const ENV = 'query-limits';

const bigState = defineWorkflow('BigState', async (ctx, kind: string) => {
  ctx.onQuery('state', () => (kind === 'long' ? 'x'.repeat(200_000) : kind === 'deep' ? JSON.parse('['.repeat(70) + ']'.repeat(70)) : Array.from({ length: 20_000 }, (_, i) => i)));
  ctx.onQuery('fine', () => 'ok');
  return 'done';
});

let baton: InProcessWorker;
beforeAll(async () => {
  baton = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [], workflows: [bigState] }, { env: { LEASE_MS: '2000' } });
});
afterAll(() => baton?.stop());

describe('a query handler whose answer breaks a JSON limit', () => {
  it.each(['long', 'deep', 'wide'])('(%s) does not keep the workflow from completing', async (kind) => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'BigState', input: [kind] });
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 15_000 })).toBe('done');
    // The other answers are read as usual; the one over the limit says why it is missing.
    expect(await baton.client.queryWorkflow(APP, ENV, id, 'fine')).toBe('ok');
    expect(await baton.client.queryWorkflow(APP, ENV, id, 'state')).toEqual({ error: expect.stringContaining('the answer was not recorded') });
  });
});
