/**
 * What a task's outcome does to its workflow when the service refuses to record it: a result over
 * the service's input limits (MAX_PAYLOAD_BYTES, MAX_JSON_ARRAY_LENGTH, ...). A real service and
 * an in-process SDK worker; the lease is long (60 s), so an outcome that is not reported would
 * only show after it lapsed, long past these tests' deadlines.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Client, Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { quietLogger as quiet, startInProcessWorker } from '../support/in-process-worker.js';
import type { Service } from '../support/service.js';

const APP = 'demo';
const ENV = 'task-outcomes';

let runs = 0;
/** Returns `n` rows: past MAX_JSON_ARRAY_LENGTH (10,000) the service cannot record the result. */
const listRows = defineTask('listRows', (_ctx, n: number) => {
  runs++;
  return Array.from({ length: n }, (_, i) => i);
});

const rows = defineWorkflow('Rows', async (ctx, n: number) => {
  try {
    const result = await ctx.run<[number], number[]>(listRows, n);
    return { rows: result.length };
  } catch (error) {
    return { caught: (error as Error).name, message: (error as Error).message };
  }
});

let stepRuns = 0;
/** The same rows from an inline step. */
const rowsInline = defineWorkflow('RowsInline', async (ctx, n: number) => {
  try {
    const result = await ctx.step('list rows', () => {
      stepRuns++;
      return Array.from({ length: n }, (_, i) => i);
    });
    return { rows: result.length };
  } catch (error) {
    return { caught: (error as Error).name, message: (error as Error).message };
  }
});

/** Takes a moment (a few turns of the event loop), under a 30-day start-to-close timeout. */
const longJob = defineTask('longJob', async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return 'done';
}, { timeout: '30d' });
const longStep = defineWorkflow('LongStep', async (ctx) => {
  const step = await ctx
    .step('long step', async () => {
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
      return 'done';
    }, { timeout: '30d' })
    .catch((e: Error) => `step failed: ${e.message}`);
  return { step };
});

let service: Service;
let client: Client;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ service, client, stop } = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [listRows], workflows: [rows, rowsInline, longStep] }, { env: { LEASE_MS: '60000' } }));
});

afterAll(async () => {
  await stop?.();
});

describe('a task result the service refuses to record', () => {
  it('fails the attempt at once with the service\'s reason (not a lease that lapses and runs the task again)', async () => {
    const id = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'Rows', input: [10_001] });
    const done = await client.awaitWorkflow(APP, ENV, id, { timeoutMs: 15_000 });
    expect(done).toMatchObject({ state: 'COMPLETED' });
    const output = JSON.parse(done!.output!);
    expect(output).toMatchObject({ caught: 'TaskFailedError', message: expect.stringContaining('tasks.result') });
    expect(output.message).toMatch(/10000/);
    // Run once: the refusal would be the same on every attempt.
    expect(runs).toBe(1);
    const history = await client.workflowHistory(APP, ENV, id);
    expect(history.filter((e) => e.type === 'TaskStarted')).toHaveLength(1);
  });

  it('a result within the limits is recorded as before', async () => {
    const id = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'Rows', input: [10_000] });
    const done = await client.awaitWorkflow(APP, ENV, id, { timeoutMs: 15_000 });
    expect(JSON.parse(done!.output!)).toEqual({ rows: 10_000 });
  });
});

describe('a step result the service refuses to record', () => {
  it('fails the step (TaskFailedError with the service\'s reason) instead of failing its decision again and again, running the step each time', async () => {
    const id = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RowsInline', input: [10_001] });
    const done = await client.awaitWorkflow(APP, ENV, id, { timeoutMs: 15_000 });
    expect(done).toMatchObject({ state: 'COMPLETED' });
    const output = JSON.parse(done!.output!);
    expect(output).toMatchObject({ caught: 'TaskFailedError', message: expect.stringMatching(/result.*10000/) });
    expect(stepRuns).toBe(1);
  });
});

describe('a timeout longer than a Node timer can wait (about 24.8 days)', () => {
  it('does not stop a step at once', async () => {
    const id = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'LongStep', input: [] });
    const done = await client.awaitWorkflow(APP, ENV, id, { timeoutMs: 15_000 });
    expect(JSON.parse(done!.output!)).toEqual({ step: 'done' });
  });

  it('is refused for a task when the worker is made, naming the task (the protocol carries at most 2^31 - 1 ms; past it every poll failed)', () => {
    expect(() => new Worker({ url: service.url, token: service.token, appId: APP, environment: ENV, tasks: [longJob], logger: quiet })).toThrow(
      /task longJob: timeout must be at most 2147483647 ms/,
    );
    const forever = defineTask('forever', () => null, { retry: { maxAttempts: Infinity } });
    expect(() => new Worker({ url: service.url, token: service.token, appId: APP, environment: ENV, tasks: [forever], logger: quiet })).toThrow(
      /task forever: retry.maxAttempts must be a whole number from 1 to 1000/,
    );
  });
});
