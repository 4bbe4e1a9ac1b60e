/**
 * The SDK features the original service's users had (issue 17), each with a real worker process:
 * ids of fire-and-forget dispatches, a catch-all event handler, async handlers that finish before
 * the workflow completes, queries, schedules created by a workflow, waiting for a result, and
 * attempts released by a worker that shuts down.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { WorkflowEndedError } from '../../src/sdk/index.js';
import { waitFor } from '../support/wait-for.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { type Service, startService } from '../support/service.js';
import { APP, Engine, ofType, unique } from './engine-helpers.js';

let service: Service;
let engine: Engine;
let env: string;

beforeAll(async () => {
  service = await startService();
  env = unique('sdk');
  engine = new Engine(service, env);
  await startWorker({ url: service.url, token: service.token, environment: env });
});

afterAll(async () => {
  await killAllWorkers();
  await service?.stop();
});

describe('SDK features', () => {
  it('ctx.dispatch answers the id of the child workflow or task it starts', async () => {
    const { result } = await engine.waitForState(await engine.dispatch('Dispatcher'));
    expect((await engine.waitForState(result.child)).result).toBe('noop');
    const task = await waitFor(
      async () => {
        const data = await engine.client.request<{ task: { state: string } | null }>('query($id: ID!) { task(appId: "demo", environment: "' + env + '", id: $id) { state } }', { id: result.task });
        return data.task?.state === 'COMPLETED' ? data.task : null;
      },
      { timeoutMs: 15_000, description: 'the dispatched task to complete' },
    );
    expect(task.state).toBe('COMPLETED');
  });

  it("onEvent('*') receives every event that nothing else takes, with its name", async () => {
    const id = await engine.dispatch('CatchAll');
    await engine.waitForEventType(id, 'DecisionCompleted');
    await engine.send({ id }, 'a', 1);
    await engine.send({ id }, 'b', 'two', 3);
    await engine.send({ id }, 'done');
    expect((await engine.waitForState(id)).result).toEqual([['a', 1], ['b', 'two', 3]]);
  });

  it('a workflow completes only after the async event handlers it started have finished', async () => {
    const id = await engine.dispatch('AsyncHandler', [400]);
    await engine.waitForEventType(id, 'DecisionCompleted');
    await engine.send({ id }, 'charge', 'order-1');
    await engine.send({ id }, 'go');
    const done = await engine.waitForState(id);
    expect(done.result).toEqual(['charge order-1']);
    const history = await engine.history(id);
    const handlerTask = history.findIndex((e) => e.type === 'TaskCompleted');
    expect(handlerTask).toBeGreaterThan(-1);
    expect(handlerTask).toBeLessThan(history.findIndex((e) => e.type === 'WorkflowCompleted'));
  });

  it('answers a running workflow\'s queries from its state as of its last decision', async () => {
    const id = await engine.dispatch('Queried');
    await waitFor(async () => (await engine.client.queryWorkflow(APP, env, id, 'step')) === 'waiting', { timeoutMs: 15_000, description: 'step waiting' });
    const progress = await engine.client.queryWorkflow<{ step: string; at: string }>(APP, env, id, 'progress');
    expect(progress?.step).toBe('waiting');
    expect(await engine.client.queryWorkflow(APP, env, id, 'no-such-query')).toBeUndefined();
    await engine.send({ id }, 'go');
    await engine.waitForState(id);
    expect(await engine.client.queryWorkflow(APP, env, id, 'step')).toBe('done');
  });

  it('ctx.schedule creates a schedule once, visible through the schedule queries', async () => {
    const id = await engine.dispatch('Scheduler', ['30 8 * * 1', 'Europe/Paris']);
    const { result: scheduleId } = await engine.waitForState(id);
    const schedule = await waitFor(
      async () => {
        const data = await engine.client.request<{ schedule: { cron: string; timezone: string; tag: string; name: string; nextFireAt: string } | null }>(
          `query($id: ID!) { schedule(appId: "demo", environment: "${env}", id: $id) { cron timezone tag name nextFireAt } }`,
          { id: scheduleId },
        );
        return data.schedule;
      },
      { timeoutMs: 15_000, description: 'the schedule the workflow asked for' },
    );
    expect(schedule).toMatchObject({ cron: '30 8 * * 1', timezone: 'Europe/Paris', tag: 'from-a-workflow', name: 'Noop' });
    const local = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Paris', weekday: 'long', hour: '2-digit', minute: '2-digit' }).format(new Date(schedule.nextFireAt));
    expect(local).toBe('Monday 08:30');
    expect(ofType(await engine.history(id), 'ScheduleRequested')).toHaveLength(1);
  });

  it('client.dispatchWorkflow(...).result() waits for the result, and rejects when the workflow fails', async () => {
    const dispatched = engine.client.dispatchWorkflow({ appId: APP, environment: env, name: 'Sequential', input: ['x'] });
    expect(typeof (await dispatched)).toBe('string');
    expect(await dispatched.result()).toEqual(['x', 3, 'x-3']);
    const failing = engine.client.dispatchWorkflow({ appId: APP, environment: env, name: 'Thrower', input: ['boom'] });
    await expect(failing.result({ timeoutMs: 30_000 })).rejects.toBeInstanceOf(WorkflowEndedError);
  }, 60_000);
});

describe('a worker that shuts down', () => {
  it('gives its running attempts back: another worker runs them at once, and they do not count as failed attempts', async () => {
    const releaseEnv = unique('release');
    const releasing = new Engine(service, releaseEnv);
    const first = await startWorker({ url: service.url, token: service.token, environment: releaseEnv, env: { BATON_SHUTDOWN_GRACE_MS: '200' } });
    const id = await releasing.dispatch('LongRunner', [60_000]);
    await releasing.waitForEventType(id, 'TaskStarted');
    await first.stop();
    const released = await releasing.waitForEventType(id, 'TaskAttemptFailed', (d) => d.reason === 'released', 10_000);
    expect(ofType(released, 'TaskAttemptFailed')[0].data.released).toBe(true);
    await startWorker({ url: service.url, token: service.token, environment: releaseEnv });
    const again = await releasing.waitForHistory(id, (events) => ofType(events, 'TaskStarted').length >= 2, 'a second TaskStarted', 10_000);
    // Still the first attempt: a release is not a failure.
    expect(ofType(again, 'TaskStarted').map((e) => e.data.attempt)).toEqual([1, 1]);
    await releasing.terminate({ id });
  }, 60_000);
});
