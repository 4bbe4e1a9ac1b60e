/**
 * The SDK as a developer uses it, against the real service on a fresh store and
 * an in-process SDK worker; no mocks.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';

const APP = 'demo';
const ENV = 'sdk-edges';

let runs = 0;
/** A task whose result JSON cannot write: `JSON.stringify(fn)` is undefined, as for `undefined` itself. */
const givesFunction = defineTask('givesFunction', async () => {
  runs++;
  return () => 1;
});
const takesFunction = defineWorkflow('TakesFunction', async (ctx) => ({ got: await ctx.run(givesFunction) }));
let badStepRuns = 0;
/** A step whose name the service refuses (empty): its decision can never be recorded. */
const badStepName = defineWorkflow('BadStepName', async (ctx) => ctx.step('', () => ++badStepRuns));
const noQueries = defineWorkflow('NoQueries', async (ctx) => {
  await ctx.waitForEvent('never');
});

let baton: InProcessWorker;
beforeAll(async () => {
  baton = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [givesFunction], workflows: [takesFunction, noQueries, badStepName] });
}, 60_000);
afterAll(() => baton?.stop(), 60_000);

describe('a task whose result JSON writes as nothing', () => {
  // The worker sent `result: undefined` (JSON.stringify of a function), a report with no outcome at
  // all: the service rejected it (BAD_USER_INPUT, "this report has none"), the worker only logged
  // that, and the attempt lapsed with its lease (LEASE_MS, 30 s by default) and ran again, and again,
  // until its retries were spent with a lease error that says nothing of the cause. A result that
  // JSON writes as nothing is null, as `undefined` is (and as a step's is).
  it('completes with null at once, run once', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'TakesFunction' });
    expect(await baton.client.workflowResult(APP, ENV, id, { timeoutMs: 15_000 })).toEqual({ got: null });
    expect(runs).toBe(1);
  }, 30_000);
});

describe('Client.queryWorkflow', () => {
  // "undefined when it has no such query": the answers are a parsed JSON object, and a name that
  // Object.prototype has (`constructor`, `toString`, `hasOwnProperty`) answered the prototype's function.
  it('answers undefined for a query named like an Object.prototype member', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'NoQueries' });
    for (const name of ['constructor', 'toString', 'hasOwnProperty']) {
      expect(await baton.client.queryWorkflow(APP, ENV, id, name)).toBeUndefined();
    }
  });
});

describe('a step whose name the service refuses', () => {
  // The service refuses a RecordStep whose name is empty, longer than 256 characters or holds
  // control characters. The SDK ran the step first and only then sent the decision: refused, it
  // was recorded failed (DECISION_REJECTED) and made again after a backoff, running the step's side
  // effect again every time, for as long as the workflow ran (4 runs in 15 s here). The bad name is a bad argument: the
  // call throws in the workflow's code, before anything runs.
  it('never runs the step, and fails the workflow saying why', async () => {
    const id = await baton.client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'BadStepName' });
    const ended = await baton.client.awaitWorkflow(APP, ENV, id, { timeoutMs: 15_000 });
    expect(badStepRuns).toBe(0);
    expect(ended?.state).toBe('FAILED');
    expect(ended?.error).toMatch(/step name/);
  }, 30_000);
});
