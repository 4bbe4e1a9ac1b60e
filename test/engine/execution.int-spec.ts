/**
 * What workflow code can do, end to end: the real service (embedded store), a real worker
 * process running test/support/fixtures/workflows.ts, dispatch and observation through the SDK
 * Client. One service and one worker for the whole file; each test uses its own workflows.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { FixtureWorker, killAllWorkers, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';
import { Engine, HistoryEntry, freshLogFile, ms, ofType, readLog, unique } from './engine-helpers.js';

const ENV = 'exec';

describe('workflow execution (service + worker processes)', () => {
  let service: Service;
  let worker: FixtureWorker;
  let engine: Engine;
  const log = freshLogFile();
  const executions = (workflowId: string, task?: string) => readLog(log).filter((e) => e.workflowId === workflowId && (task === undefined || e.task === task));

  beforeAll(async () => {
    service = await startService({ env: { LEASE_MS: '2000' } });
    worker = await startWorker({ url: service.url, token: service.token, environment: ENV, env: { FIXTURE_LOG: log } });
    engine = new Engine(service, ENV);
  });

  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  const taskEvents = (events: HistoryEntry[], type: string, seq: number) => events.filter((e) => e.type === type && e.data.seq === seq);

  it('runs tasks one after the other, each scheduled once the previous result is in', async () => {
    const id = await engine.dispatch('Sequential', ['x']);
    const done = await engine.waitForState(id);
    expect(done.result).toEqual(['x', 3, 'x-3']);
    expect(done.version).toBe('Sequential');

    const events = await engine.history(id);
    const rev = (type: string, seq: number) => taskEvents(events, type, seq)[0].revision;
    expect(ofType(events, 'TaskScheduled').map((e) => [e.data.seq, e.data.name])).toEqual([
      [0, 'echo'],
      [1, 'add'],
      [2, 'echo'],
    ]);
    expect(rev('TaskScheduled', 1)).toBeGreaterThan(rev('TaskCompleted', 0));
    expect(rev('TaskScheduled', 2)).toBeGreaterThan(rev('TaskCompleted', 1));
    expect(events[0].type).toBe('WorkflowDispatched');
    expect(events.at(-1)!.type).toBe('WorkflowCompleted');
    expect(executions(id).map((e) => e.task)).toEqual(['echo', 'add', 'echo']);
  });

  it('runs tasks in parallel (Promise.all): scheduled by one decision, running at the same time', async () => {
    const id = await engine.dispatch('Parallel', [3, 400]);
    const done = await engine.waitForState(id);
    expect(done.result).toEqual(['p0', 'p1', 'p2']);

    const events = await engine.history(id);
    const scheduled = ofType(events, 'TaskScheduled');
    expect(scheduled).toHaveLength(3);
    // one decision scheduled all three: nothing but TaskScheduled between them
    expect(scheduled[2].revision - scheduled[0].revision).toBe(2);
    const lastStart = Math.max(...ofType(events, 'TaskStarted').map((e) => e.revision));
    const firstEnd = Math.min(...ofType(events, 'TaskCompleted').map((e) => e.revision));
    expect(lastStart).toBeLessThan(firstEnd);
    const naps = executions(id, 'nap');
    const lastStartAt = Math.max(...naps.filter((e) => e.phase === 'start').map((e) => e.at));
    const firstEndAt = Math.min(...naps.filter((e) => e.phase === 'end').map((e) => e.at));
    expect(lastStartAt).toBeLessThan(firstEndAt);
  });

  it('retries a failing task with growing delays until it succeeds', async () => {
    const id = await engine.dispatch('Retrying', [2]);
    const done = await engine.waitForState(id);
    expect(done.result).toEqual({ succeededOnAttempt: 3 });

    const events = await engine.history(id);
    const failures = ofType(events, 'TaskAttemptFailed');
    expect(failures.map((e) => [e.data.attempt, e.data.reason])).toEqual([
      [1, 'error'],
      [2, 'error'],
    ]);
    expect(failures[0].data.error.message).toBe('flaky attempt 1 failed');
    // policy: 200 ms, then 400 ms (backoff factor 2), counted from when the failure was decided
    const gaps = failures.map((e) => ms(e.data.retryAt) - ms(e.metadata.at));
    expect(gaps[0]).toBeGreaterThan(100);
    expect(gaps[0]).toBeLessThanOrEqual(200);
    expect(gaps[1]).toBeGreaterThan(300);
    expect(gaps[1]).toBeLessThanOrEqual(400);
    expect(gaps[1]).toBeGreaterThan(gaps[0]);
    const starts = ofType(events, 'TaskStarted');
    expect(starts.map((e) => e.data.attempt)).toEqual([1, 2, 3]);
    expect(ms(starts[1].data.startedAt)).toBeGreaterThanOrEqual(ms(failures[0].data.retryAt));
    expect(ms(starts[2].data.startedAt)).toBeGreaterThanOrEqual(ms(failures[1].data.retryAt));
    expect(ofType(events, 'TaskFailed')).toHaveLength(0);
    expect(executions(id, 'flaky').map((e) => [e.attempt, e.phase])).toEqual([
      [1, 'fail'],
      [2, 'fail'],
      [3, 'end'],
    ]);
  });

  it('fails a task for good once its attempts are exhausted; ctx.run rejects and the workflow catches it', async () => {
    const id = await engine.dispatch('Exhausted', ['nope']);
    const done = await engine.waitForState(id);
    expect(done.result).toEqual({ caught: 'TaskFailedError', message: 'nope (attempt 3)' });

    const events = await engine.history(id);
    const failures = ofType(events, 'TaskAttemptFailed');
    expect(failures.map((e) => e.data.attempt)).toEqual([1, 2, 3]);
    expect(failures[2].data.retryAt).toBeNull();
    const gaps = failures.slice(0, 2).map((e) => ms(e.data.retryAt) - ms(e.metadata.at));
    expect(gaps[1]).toBeGreaterThan(gaps[0]);
    expect(ofType(events, 'TaskFailed').map((e) => e.data)).toEqual([{ seq: 0, attempts: 3, error: { message: 'nope (attempt 3)', name: 'Error' } }]);
    expect(executions(id, 'alwaysFails')).toHaveLength(3);
  });

  it('does not retry a NonRetryableError', async () => {
    const id = await engine.dispatch('NonRetryable', ['no such user']);
    const done = await engine.waitForState(id);
    expect(done.result).toEqual({ caught: 'TaskFailedError', message: 'no such user' });
    const events = await engine.history(id);
    expect(ofType(events, 'TaskAttemptFailed').map((e) => [e.data.attempt, e.data.retryAt, e.data.error.nonRetryable])).toEqual([[1, null, true]]);
    expect(ofType(events, 'TaskFailed').map((e) => e.data.attempts)).toEqual([1]);
    expect(executions(id, 'rejectsForGood')).toHaveLength(1);
  });

  it('stops an attempt at its start-to-close timeout (the task sees ctx.signal abort) and retries it', async () => {
    const id = await engine.dispatch('TimesOut', [5000]);
    const done = await engine.waitForState(id);
    expect(done.result).toMatchObject({ caught: 'TaskFailedError' });

    const events = await engine.history(id);
    const starts = ofType(events, 'TaskStarted');
    const failures = ofType(events, 'TaskAttemptFailed');
    expect(starts).toHaveLength(2);
    expect(failures).toHaveLength(2);
    for (const [i, start] of starts.entries()) {
      expect(ms(start.data.deadlineAt) - ms(start.data.startedAt)).toBe(300);
      // failed at the deadline, far before the 5 s the body would have taken
      expect(ms(failures[i].recordedAt) - ms(start.data.startedAt)).toBeGreaterThanOrEqual(290);
      expect(ms(failures[i].recordedAt) - ms(start.data.startedAt)).toBeLessThan(1500);
    }
    const runs = executions(id, 'overrunsTimeout');
    expect(runs.filter((e) => e.phase === 'start').map((e) => e.attempt)).toEqual([1, 2]);
    expect(runs.filter((e) => e.phase === 'aborted').map((e) => e.attempt)).toEqual([1, 2]);
    expect(runs.some((e) => e.phase === 'end')).toBe(false);
  });

  it('sleeps on a durable timer', async () => {
    const id = await engine.dispatch('Sleeper', [500]);
    const done = await engine.waitForState(id);
    const events = await engine.history(id);
    const [started] = ofType(events, 'TimerStarted');
    const [firstDecision] = ofType(events, 'DecisionStarted');
    const [fired] = ofType(events, 'TimerFired');
    expect(ms(started.data.fireAt) - ms(firstDecision.data.startedAt)).toBe(500);
    expect(ms(fired.recordedAt)).toBeGreaterThanOrEqual(ms(started.data.fireAt));
    expect(ofType(events, 'DecisionStarted')).toHaveLength(2);
    expect(done.result.before).toBe(firstDecision.data.startedAt);
  });

  // Regression (fixed in 161f239): code after an await saw the clock of the decision that made
  // the awaited call (see src/sdk/workflow-replay.spec.ts).
  it('ctx.now() after a sleep is the time of the decision that runs after the timer fired', async () => {
    const id = await engine.dispatch('Sleeper', [500]);
    const done = await engine.waitForState(id);
    const [, secondDecision] = ofType(await engine.history(id), 'DecisionStarted');
    expect(done.result.after).toBe(secondDecision.data.startedAt);
    expect(ms(done.result.after) - ms(done.result.before)).toBeGreaterThanOrEqual(500);
  });

  it('waitForEvent resolves with the event sent to the workflow by name and tag, and cancels its timer', async () => {
    const tag = unique('approval');
    const id = await engine.dispatch('Waiter', ['approved', 30_000], tag);
    await engine.waitForEventType(id, 'TimerStarted');
    const sent = await engine.send({ name: 'Waiter', tag }, 'approved', 'bob', { level: 2 });
    expect(sent).toMatchObject({ status: 'OK', matched: 1, changed: 1, workflowIds: [id] });
    const done = await engine.waitForState(id);
    expect(done.result).toEqual(['approved', 'bob', { level: 2 }]);
    const events = await engine.history(id);
    expect(ofType(events, 'TimerCanceled')).toHaveLength(1);
    expect(ofType(events, 'TimerFired')).toHaveLength(0);
  });

  it('waitForEvent resolves null when its timeout passes first', async () => {
    const id = await engine.dispatch('Waiter', ['never-sent', 300]);
    const done = await engine.waitForState(id);
    expect(done.result).toBeNull();
    expect(ofType(await engine.history(id), 'TimerFired')).toHaveLength(1);
  });

  it('an event sent before the first decision answers a timed waitForEvent and its timer is cancelled', async () => {
    const environment = unique('early');
    const early = new Engine(service, environment);
    const id = await early.dispatch('WaitTwice', [500]);
    expect(await early.send({ id }, 'first', 'x')).toMatchObject({ matched: 1, changed: 1 });
    await startWorker({ url: service.url, token: service.token, environment, env: { FIXTURE_LOG: log } });

    const [timer] = ofType(await early.waitForEventType(id, 'TimerStarted'), 'TimerStarted');
    await waitFor(() => Date.now() > ms(timer.data.fireAt) + 100, { timeoutMs: 5_000, description: 'the timeout to pass' });
    await early.barrier();
    const events = await early.history(id);
    expect(ofType(events, 'TimerCanceled').map((e) => e.data.seq)).toEqual([timer.data.seq]);
    expect(ofType(events, 'TimerFired')).toHaveLength(0);
    expect(ofType(events, 'DecisionStarted')).toHaveLength(1);

    await early.send({ id }, 'second');
    expect((await early.waitForState(id)).result).toEqual([['first', 'x'], ['second']]);
  });

  it('onEvent calls its handler for every event of that name', async () => {
    const id = await engine.dispatch('Listener');
    await engine.waitForEventType(id, 'DecisionCompleted');
    await engine.send({ id }, 'ping', 1);
    await engine.send({ id }, 'other', 'ignored');
    await engine.send({ id }, 'ping', 2, 'two');
    await engine.send({ id }, 'stop');
    const done = await engine.waitForState(id);
    expect(done.result).toEqual([[1], [2, 'two']]);
  });

  it("runs a tagged child workflow, reachable by { name, tag }; the parent gets the child's result", async () => {
    const tag = unique('order');
    const parentId = await engine.dispatch('Parent', [tag]);
    const sent = await waitFor(
      async () => {
        const result = await engine.send({ name: 'Child', tag }, 'release', 'ok');
        return result.matched === 1 ? result : null;
      },
      { timeoutMs: 10_000, intervalMs: 50, description: 'the child to be reachable by its tag' },
    );
    const childId = sent.workflowIds[0];
    const done = await engine.waitForState(parentId);
    expect(done.result).toEqual({ parentGot: { label: `child of ${parentId}`, released: 'ok', childId } });
    const child = await engine.waitForState(childId);
    expect(child).toMatchObject({ name: 'Child', tag, state: 'COMPLETED' });

    const events = await engine.history(parentId);
    expect(ofType(events, 'ChildWorkflowStarted').map((e) => e.data)).toEqual([
      { seq: 0, childId, name: 'Child', args: [`child of ${parentId}`], tag, wait: true },
    ]);
    expect(ofType(events, 'ChildWorkflowCompleted').map((e) => e.data.childId)).toEqual([childId]);
    const childHistory = await engine.history(childId);
    expect(childHistory[0].data.parent).toEqual({ workflowId: parentId, seq: 0 });
  });

  it("fails the parent's ctx.workflow call when its child is terminated", async () => {
    const tag = unique('doomed-child');
    const parentId = await engine.dispatch('Parent', [tag]);
    const terminated = await waitFor(
      async () => {
        const result = await engine.terminate({ name: 'Child', tag });
        return result.changed === 1 ? result : null;
      },
      { timeoutMs: 10_000, intervalMs: 50, description: 'the child to be terminated' },
    );
    const failed = await engine.waitForState(parentId, 'FAILED');
    expect(failed.error).toBe(`child workflow ${terminated.workflowIds[0]} was terminated`);
    expect(ofType(await engine.history(parentId), 'ChildWorkflowFailed')).toHaveLength(1);
  });

  describe('child workflows end with a parent that ends without them', () => {
    const terminatedReason = async (id: string) => ofType(await engine.history(id), 'WorkflowTerminated').map((e) => e.data.reason);

    it('terminating a workflow terminates the children it awaits (ctx.workflow), down the tree', async () => {
      const tag = unique('tree');
      const rootId = await engine.dispatch('Grandparent', [tag]);
      const parentId = await engine.childOf(rootId);
      const childId = await engine.childOf(parentId);
      await engine.waitForState(childId, 'RUNNING');

      expect(await engine.terminate({ id: rootId }, 'tree cut')).toMatchObject({ matched: 1, changed: 1 });
      await engine.waitForState(parentId, 'TERMINATED');
      await engine.waitForState(childId, 'TERMINATED');
      expect(await terminatedReason(rootId)).toEqual(['tree cut']);
      expect(await terminatedReason(parentId)).toEqual([`its parent workflow ${rootId} was terminated`]);
      expect(await terminatedReason(childId)).toEqual([`its parent workflow ${parentId} was terminated`]);
    });

    it('a workflow that completes without waiting for its child any longer terminates it', async () => {
      const tag = unique('raced');
      const parentId = await engine.dispatch('ChildOrTimeout', [tag, 300]);
      const childId = await engine.childOf(parentId);
      expect((await engine.waitForState(parentId)).result).toBe('timed out');
      await engine.waitForState(childId, 'TERMINATED');
      expect(await terminatedReason(childId)).toEqual([`its parent workflow ${parentId} completed without waiting for it`]);
    });

    it('a child started by the decision that completes its parent is terminated once it exists', async () => {
      const tag = unique('left-behind');
      const parentId = await engine.dispatch('ChildThenDone', [tag]);
      expect((await engine.waitForState(parentId)).result).toBe('done');
      const childId = await engine.childOf(parentId);
      await engine.waitForState(childId, 'TERMINATED');
      expect(await terminatedReason(childId)).toEqual([`its parent workflow ${parentId} completed without waiting for it`]);
    });

    it('a workflow that continues as new terminates the children its old run awaited (the new run cannot await them)', async () => {
      const tag = unique('continued');
      const parentId = await engine.dispatch('ChildOrContinue', [tag, 300, 0]);
      const childId = await engine.childOf(parentId);
      await engine.waitForState(childId, 'RUNNING');
      expect((await engine.waitForState(parentId)).result).toBe('second run done');
      await engine.waitForState(childId, 'TERMINATED');
      expect(await terminatedReason(childId)).toEqual([`its parent workflow ${parentId} continued as new without waiting for it`]);
      // The continue-as-new names them (for the effect, and for an auditor); the child's end reaches no run.
      expect(ofType(await engine.history(parentId), 'WorkflowContinuedAsNew').map((e) => e.data.awaitedChildren)).toEqual([[childId]]);
      await engine.effectsCaughtUp();
      expect(ofType(await engine.history(parentId), 'ChildWorkflowFailed')).toEqual([]);
    });

    it('a child started by the decision that continues its parent as new is terminated once it exists', async () => {
      const tag = unique('continued-at-once');
      const parentId = await engine.dispatch('ChildThenContinue', [tag, 0]);
      expect((await engine.waitForState(parentId)).result).toBe('second run done');
      const childId = await engine.childOf(parentId);
      await engine.waitForState(childId, 'TERMINATED');
      expect(await terminatedReason(childId)).toEqual([`its parent workflow ${parentId} continued as new without waiting for it`]);
    });

    it('the child of a failed workflow goes on (a retry may want its result)', async () => {
      const tag = unique('kept');
      const parentId = await engine.dispatch('ChildOrGiveUp', [tag, 300]);
      const childId = await engine.childOf(parentId);
      expect((await engine.waitForState(parentId, 'FAILED')).error).toBe('gave up on the child');
      // Released by a workflow's ControlRequested, whose effect starts once every effect its app
      // recorded before has been carried out (the parent's end among them).
      await engine.dispatch('Releaser', [childId]);
      expect((await engine.waitForState(childId)).result).toEqual({ label: 'kept', released: 'from a releaser', childId });
    });

    it('a child the workflow dispatched (ctx.dispatch) goes on when it is terminated', async () => {
      const tag = unique('detached');
      const parentId = await engine.dispatch('DispatchThenWait', [tag]);
      const childId = await engine.childOf(parentId);
      await engine.waitForState(childId, 'RUNNING');
      await engine.terminate({ id: parentId });
      await engine.dispatch('Releaser', [childId]);
      expect((await engine.waitForState(childId)).result).toEqual({ label: 'detached', released: 'from a releaser', childId });
    });
  });

  it('fails the workflow with the error its code throws', async () => {
    const id = await engine.dispatch('Thrower', ['bad thing']);
    const failed = await engine.waitForState(id, 'FAILED');
    expect(failed.error).toBe('bad thing');
    const events = await engine.history(id);
    expect(events.at(-1)).toMatchObject({ type: 'WorkflowFailed', data: { error: { message: 'bad thing', name: 'RangeError' } } });
  });

  it('runs the highest Name_vN for a dispatch of Name', async () => {
    const id = await engine.dispatch('Versioned');
    await engine.waitForEventType(id, 'TaskCompleted');
    expect((await engine.workflow(id)).version).toBe('Versioned_v2');
    await waitFor(async () => (await engine.send({ id }, 'go')).changed === 1, { description: 'go delivered' });
    expect((await engine.waitForState(id)).result).toEqual({ version: 'v2' });
    expect(executions(id, 'echo').map((e) => e.args[0])).toEqual(['v2 step']);
  });
});
