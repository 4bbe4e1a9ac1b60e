/**
 * Inline steps (`ctx.step`) with real worker processes: a workflow of steps completes in one
 * decision with no task; a recorded step is not run again when another worker replays the run;
 * a failing step is recorded and reaches the code as a catchable error; a decision whose step
 * outlasts the lease keeps it with heartbeats; an attempt past its timeout fails and is retried.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { type Service, startService } from '../support/service.js';
import { Engine, ofType, unique } from './engine-helpers.js';

let service: Service;

beforeAll(async () => {
  service = await startService();
});

afterAll(async () => {
  await killAllWorkers();
  await service?.stop();
});

describe('ctx.step', () => {
  it('completes a workflow of two steps in one decision: no task, each outcome in its own event', async () => {
    const env = unique('steps');
    const engine = new Engine(service, env);
    await startWorker({ url: service.url, token: service.token, environment: env });
    const id = await engine.dispatch('InlineSteps', [2, 3]);
    expect((await engine.waitForState(id)).result).toEqual({ sum: 5, doubled: 10 });
    const history = await engine.history(id);
    expect(history.map((e) => e.type)).toEqual(['WorkflowDispatched', 'DecisionStarted', 'DecisionCompleted', 'StepCompleted', 'StepCompleted', 'WorkflowCompleted']);
    expect(ofType(history, 'StepCompleted').map((e) => e.data)).toEqual([
      { seq: 0, name: 'add', result: 5 },
      { seq: 1, name: 'double', result: 10 },
    ]);
  });

  it('hands a recorded step back to a worker that replays the run, without running it again', async () => {
    const env = unique('steps-replay');
    const engine = new Engine(service, env);
    const first = await startWorker({ url: service.url, token: service.token, environment: env });
    const id = await engine.dispatch('StepThenWait');
    await engine.waitForHistory(id, (events) => ofType(events, 'DecisionCompleted').length === 1, 'the first decision');
    await first.kill();
    const second = await startWorker({ url: service.url, token: service.token, environment: env });
    await engine.send({ id }, 'go');
    const { result } = await engine.waitForState(id);
    // The second worker replayed the first decision (it never held the run) from the record.
    expect(result).toEqual({ first: first.process.pid, last: second.process.pid, failure: 'card declined' });
    const history = await engine.history(id);
    expect(ofType(history, 'StepFailed').map((e) => e.data)).toEqual([{ seq: 2, name: 'refuses', error: { message: 'card declined' } }]);
    expect(ofType(history, 'StepCompleted').map((e) => e.data.seq)).toEqual([0, 3]);
    expect(new Set(ofType(history, 'DecisionStarted').map((e) => e.data.workerId))).toEqual(new Set([first.workerId, second.workerId]));
  });

  it('fails an attempt past its timeout, aborting its signal, retries it, and records the failure', async () => {
    const env = unique('steps-timeout');
    const engine = new Engine(service, env);
    await startWorker({ url: service.url, token: service.token, environment: env });
    const id = await engine.dispatch('StepTimeout', [200]);
    const { result } = await engine.waitForState(id);
    expect(result).toEqual({ failure: 'step hangs timed out after 200 ms', ends: ['attempt 1 aborted', 'attempt 2 aborted'] });
    const history = await engine.history(id);
    expect(ofType(history, 'StepFailed').map((e) => e.data)).toEqual([{ seq: 0, name: 'hangs', error: { message: 'step hangs timed out after 200 ms' } }]);
    expect(ofType(history, 'DecisionStarted')).toHaveLength(1);
  });

  it('keeps the lease of a decision whose step outlasts it (heartbeats): the step runs once', async () => {
    const short = await startService({ env: { LEASE_MS: '1000' } });
    try {
      const env = unique('steps-lease');
      const engine = new Engine(short, env);
      await startWorker({ url: short.url, token: short.token, environment: env, heartbeatMs: 150 });
      const id = await engine.dispatch('SlowStep', [2500]);
      expect((await engine.waitForState(id)).result).toBe(2500);
      const types = (await engine.history(id)).map((e) => e.type);
      expect(types.filter((t) => t === 'DecisionLeaseExtended').length).toBeGreaterThanOrEqual(2);
      expect(types).not.toContain('DecisionTimedOut');
      expect(types.filter((t) => t === 'DecisionStarted')).toHaveLength(1);
      expect(types.filter((t) => t === 'StepCompleted')).toHaveLength(1);
    } finally {
      await short.stop();
    }
  });
});
