/**
 * DESIGN §3 with a worker running: pause, resume and terminate of running, paused and finished
 * workflows, and what happens to their tasks, timers and events meanwhile.
 *
 * "Nothing happened while paused/terminated" is checked after a barrier: a Noop workflow
 * dispatched afterwards ran to completion, so the worker was polling and would have taken any
 * claimable decision.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { Engine, HistoryEntry, after, freshLogFile, ofType, readLog, unique } from './engine-helpers.js';

const ENV = 'control';

describe('pause, resume and terminate with a worker running (DESIGN §3)', () => {
  let service: Service;
  let engine: Engine;
  const log = freshLogFile();
  const executions = (workflowId: string, task?: string) => readLog(log).filter((e) => e.workflowId === workflowId && (task === undefined || e.task === task));
  const decisionsAfter = (events: HistoryEntry[], type: string) => ofType(after(events, type), 'DecisionStarted');

  beforeAll(async () => {
    service = await startService({ env: { LEASE_MS: '2000' } });
    await startWorker({ url: service.url, token: service.token, environment: ENV, env: { FIXTURE_LOG: log } });
    engine = new Engine(service, ENV);
  });

  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  describe('running → paused → running', () => {
    it('records events sent while paused and delivers them, in order, after resume', async () => {
      const tag = unique('collect');
      const id = await engine.dispatch('Collector', [3], tag);
      await engine.waitForEventType(id, 'DecisionCompleted');

      expect(await engine.pause({ name: 'Collector', tag })).toMatchObject({ status: 'OK', matched: 1, changed: 1 });
      expect(await engine.pause({ id })).toMatchObject({ matched: 1, changed: 0 }); // paused + pause: no change
      for (const item of ['a', 'b', 'c']) {
        expect(await engine.send({ name: 'Collector', tag }, 'item', item)).toMatchObject({ matched: 1, changed: 1 });
      }
      await engine.barrier();

      const events = await engine.history(id);
      expect(ofType(after(events, 'WorkflowPaused'), 'WorkflowEventReceived').map((e) => e.data.data)).toEqual([['a'], ['b'], ['c']]);
      expect(decisionsAfter(events, 'WorkflowPaused')).toHaveLength(0);
      expect((await engine.workflow(id)).state).toBe('PAUSED');

      expect(await engine.resume({ name: 'Collector', tag })).toMatchObject({ matched: 1, changed: 1 });
      const done = await engine.waitForState(id);
      expect(done.result).toEqual(['a', 'b', 'c']);
      expect(await engine.resume({ id })).toMatchObject({ matched: 1, changed: 0 });
    });

    it('lets a task that was running finish, records its result, and acts on it only after resume', async () => {
      const id = await engine.dispatch('NapThenEcho', [600]);
      await engine.waitForEventType(id, 'TaskStarted');
      expect(await engine.pause({ id })).toMatchObject({ matched: 1, changed: 1 });

      await engine.waitForHistory(id, (events) => ofType(after(events, 'WorkflowPaused'), 'TaskCompleted').length === 1, 'TaskCompleted after WorkflowPaused');
      await engine.barrier();
      const paused = await engine.history(id);
      expect(decisionsAfter(paused, 'WorkflowPaused')).toHaveLength(0);
      expect(ofType(paused, 'TaskScheduled')).toHaveLength(1);
      expect(executions(id, 'echo')).toHaveLength(0);

      await engine.resume({ id });
      const done = await engine.waitForState(id);
      expect(done.result).toBe('after first');
      expect(executions(id, 'nap').filter((e) => e.phase === 'end')).toHaveLength(1);
    });

    it('fires a timer that comes due while paused, and acts on it after resume', async () => {
      const id = await engine.dispatch('SleepThenEcho', [300]);
      await engine.waitForEventType(id, 'TimerStarted');
      await engine.pause({ id });
      await engine.waitForEventType(id, 'TimerFired');
      await engine.barrier();
      const paused = await engine.history(id);
      expect(decisionsAfter(paused, 'WorkflowPaused')).toHaveLength(0);
      expect((await engine.workflow(id)).state).toBe('PAUSED');

      await engine.resume({ id });
      expect((await engine.waitForState(id)).result).toBe('woke');
    });

    it('resume of a running workflow changes nothing', async () => {
      const id = await engine.dispatch('Waiter', ['x', 60_000]);
      expect(await engine.resume({ id })).toMatchObject({ matched: 1, changed: 0 });
      expect((await engine.workflow(id)).state).toBe('RUNNING');
      await engine.terminate({ id });
    });
  });

  describe('terminate', () => {
    it('stops a running task at its next heartbeat, takes no new decision, records late results and ignores them', async () => {
      const tag = unique('long');
      const id = await engine.dispatch('LongRunner', [20_000], tag);
      await engine.waitForEventType(id, 'TaskStarted');
      expect(await engine.terminate({ name: 'LongRunner', tag }, 'ops said so')).toMatchObject({ matched: 1, changed: 1 });
      expect((await engine.workflow(id)).state).toBe('TERMINATED');

      // the task body observed the stop (ctx.heartbeat() → true / ctx.signal aborted)
      const stopped = await engine.waitForHistory(
        id,
        (events) => after(events, 'WorkflowTerminated').some((e) => ['TaskCompleted', 'TaskAttemptFailed', 'TaskResultIgnored'].includes(e.type)),
        'the late outcome of the running task',
      );
      const runs = executions(id, 'longHeartbeat');
      expect(runs.map((e) => e.phase)).toEqual(['start', 'aborted']);
      expect(runs[1].detail).toMatch(/^signal\.aborted=true; heartbeat said stop=true; .*terminated/);
      expect(runs[1].at - runs[0].at).toBeLessThan(5_000);

      await engine.barrier();
      const events = await engine.history(id);
      expect(events.find((e) => e.type === 'WorkflowTerminated')!.data).toEqual({ reason: 'ops said so' });
      expect(decisionsAfter(events, 'WorkflowTerminated')).toHaveLength(0);
      expect(ofType(events, 'TaskScheduled')).toHaveLength(1);
      expect(executions(id, 'echo')).toHaveLength(0);
      expect(ofType(stopped, 'TaskStarted')).toHaveLength(1);
    });

    it('does not deliver events to a terminated workflow', async () => {
      const tag = unique('waiter');
      const id = await engine.dispatch('Waiter', ['late', 60_000], tag);
      await engine.waitForEventType(id, 'DecisionCompleted');
      await engine.terminate({ id });

      expect(await engine.send({ id }, 'late', 1)).toMatchObject({ status: 'OK', matched: 1, changed: 0 });
      expect(await engine.send({ name: 'Waiter', tag }, 'late', 2)).toMatchObject({ status: 'NO_MATCH', matched: 0, changed: 0 });
      await engine.barrier();
      const events = await engine.history(id);
      expect(ofType(events, 'WorkflowEventReceived')).toHaveLength(0);
      expect(decisionsAfter(events, 'WorkflowTerminated')).toHaveLength(0);
      expect((await engine.workflow(id)).state).toBe('TERMINATED');
    });

    it('terminates a paused workflow for good (resume afterwards changes nothing)', async () => {
      const id = await engine.dispatch('Waiter', ['x', 60_000]);
      await engine.waitForEventType(id, 'DecisionCompleted');
      await engine.pause({ id });
      expect(await engine.terminate({ id })).toMatchObject({ matched: 1, changed: 1 });
      expect(await engine.resume({ id })).toMatchObject({ matched: 1, changed: 0 });
      expect(await engine.pause({ id })).toMatchObject({ matched: 1, changed: 0 });
      expect(await engine.terminate({ id })).toMatchObject({ matched: 1, changed: 0 });
      expect((await engine.workflow(id)).state).toBe('TERMINATED');
    });
  });

  describe('finished workflows', () => {
    it.each([
      ['completed', 'Sequential', ['x'], 'COMPLETED'],
      ['failed', 'Thrower', ['boom'], 'FAILED'],
    ])('a %s workflow is unchanged by pause, resume and terminate', async (_label, name, input, state) => {
      const tag = unique('done');
      const id = await engine.dispatch(name, input, tag);
      await engine.waitForState(id, state);
      const before = await engine.history(id);

      for (const action of ['pause', 'resume', 'terminate'] as const) {
        expect(await engine[action]({ id })).toMatchObject({ status: 'OK', matched: 1, changed: 0 });
        // selectors by name and tag pick only workflows that are not final
        expect(await engine[action]({ name, tag })).toMatchObject({ status: 'NO_MATCH', matched: 0, changed: 0 });
      }
      expect((await engine.workflow(id)).state).toBe(state);
      expect(await engine.history(id)).toEqual(before);
    });
  });
});
