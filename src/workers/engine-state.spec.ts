import { describe, expect, it } from '@jest/globals';
import type { RetryPolicy } from '../tasks/domain/task-attempts.js';
import type { TaskEvent } from '../tasks/domain/task.decider.js';
import type { WorkflowEvent } from '../workflows/domain/workflow.decider.js';

import { ManualClock } from '../shared/clock.js';
import { EngineState } from './engine-state.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const POLICY: RetryPolicy = { maxAttempts: 3, initialDelayMs: 100, backoffFactor: 2, maxDelayMs: 1000 };
const WF = '0190aaaa-0000-7000-8000-0000000000c1';
const WF2 = '0190aaaa-0000-7000-8000-0000000000c2';
const TASK = '0190aaaa-0000-7000-8000-0000000000d1';

const dispatched = (workflowId = WF, name = 'Onboarding', environment = 'test'): WorkflowEvent => ({
  type: 'WorkflowDispatched',
  data: { workflowId, appId: 'demo', environment, name, tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: at(0) },
});
const decisionStarted = (decisionId: string, version = 'Onboarding', ms = 0): WorkflowEvent => ({
  type: 'DecisionStarted',
  data: { decisionId, workerId: 'w', version, startedAt: at(ms), leaseExpiresAt: at(ms + 1000) },
});
const decisionCompleted = (decisionId: string): WorkflowEvent => ({ type: 'DecisionCompleted', data: { decisionId, commands: [] } });
const taskScheduled = (seq: number, name = 'sendEmail'): WorkflowEvent => ({ type: 'TaskScheduled', data: { seq, name, args: [] } });
const taskStarted = (seq: number, attemptId: string, ms: number): WorkflowEvent => ({
  type: 'TaskStarted',
  data: { seq, attempt: 1, attemptId, workerId: 'w', startedAt: at(ms), leaseExpiresAt: at(ms + 1000), deadlineAt: null, retryPolicy: POLICY },
});

function engine() {
  const clock = new ManualClock(T0);
  const state = new EngineState(clock);
  const apply = (id: string, ...events: WorkflowEvent[]) => events.forEach((e) => state.applyWorkflow(id, e));
  const candidates = (workflows: string[], tasks: string[] = [], options: { environment?: string; max?: number; exclude?: string[] } = {}) =>
    state.candidates('demo', options.environment ?? 'test', workflows, tasks, options.max ?? 10, new Set(options.exclude ?? []));
  return { clock, state, apply, candidates };
}

describe('EngineState', () => {
  it("offers a new workflow's decision to workers serving its name or a version of it, in its app and environment only", () => {
    const { apply, candidates } = engine();
    apply(WF, dispatched());
    expect(candidates(['Onboarding'])).toEqual([{ ref: `wf:${WF}`, kind: 'decision' }]);
    expect(candidates(['Onboarding_v1', 'Onboarding_v2'])).toEqual([{ ref: `wf:${WF}`, kind: 'decision' }]);
    expect(candidates(['Billing'])).toEqual([]);
    expect(candidates(['Onboarding'], [], { environment: 'prod' })).toEqual([]);
    expect(candidates(['Onboarding'], [], { exclude: [`wf:${WF}`] })).toEqual([]);
  });

  it('offers a later decision only to workers serving the version the workflow started with', () => {
    const { apply, candidates } = engine();
    apply(WF, dispatched(), decisionStarted('d1', 'Onboarding_v1'), decisionCompleted('d1'), { type: 'WorkflowEventReceived', data: { name: 'go', data: [] } });
    expect(candidates(['Onboarding_v2'])).toEqual([]);
    expect(candidates(['Onboarding_v1', 'Onboarding_v2'])).toEqual([{ ref: `wf:${WF}`, kind: 'decision' }]);
  });

  it('stops offering a decision once claimed, and offers scheduled tasks by task name', () => {
    const { apply, candidates } = engine();
    apply(WF, dispatched(), decisionStarted('d1'));
    expect(candidates(['Onboarding'], ['sendEmail'])).toEqual([]);
    apply(WF, decisionCompleted('d1'), taskScheduled(0), taskScheduled(1, 'other'));
    expect(candidates(['Onboarding'], ['sendEmail'])).toEqual([{ ref: `wf:${WF}#0`, kind: 'task' }]);
    apply(WF, taskStarted(0, 'a1', 10));
    expect(candidates(['Onboarding'], ['sendEmail'])).toEqual([]);
  });

  it('offers nothing of a paused workflow, and everything again once it is resumed', () => {
    const { apply, candidates } = engine();
    apply(WF, dispatched(), decisionStarted('d1'), decisionCompleted('d1'), taskScheduled(0), { type: 'WorkflowEventReceived', data: { name: 'x', data: [] } });
    const all = [
      { ref: `wf:${WF}`, kind: 'decision' },
      { ref: `wf:${WF}#0`, kind: 'task' },
    ];
    expect(candidates(['Onboarding'], ['sendEmail'])).toEqual(all);
    apply(WF, { type: 'WorkflowPaused', data: {} });
    expect(candidates(['Onboarding'], ['sendEmail'])).toEqual([]);
    apply(WF, { type: 'WorkflowResumed', data: {} });
    expect(candidates(['Onboarding'], ['sendEmail'])).toEqual(all);
  });

  it('forgets a workflow once it is final', () => {
    const { state, apply, candidates } = engine();
    apply(WF, dispatched(), taskScheduled(0));
    apply(WF, { type: 'WorkflowTerminated', data: { reason: null } });
    expect(state.workflows.has(WF)).toBe(false);
    expect(candidates(['Onboarding'], ['sendEmail'])).toEqual([]);
    expect(state.nextDue()).toBeUndefined();
  });

  it('honours the most items a poll asks for', () => {
    const { apply, candidates } = engine();
    apply(WF, dispatched(WF));
    apply(WF2, dispatched(WF2));
    expect(candidates(['Onboarding'], [], { max: 1 })).toHaveLength(1);
    expect(candidates(['Onboarding'], [], { max: 5 })).toHaveLength(2);
  });

  it('bounds each kind apart when asked (a worker whose decision and task slots are counted apart)', () => {
    const { apply, candidates, state } = engine();
    const ids = [WF, WF2, `${WF2}-3`];
    // Each workflow has a decision pending (an event arrived) and a task to claim.
    for (const id of ids) apply(id, dispatched(id), decisionStarted(`d-${id}`), decisionCompleted(`d-${id}`), taskScheduled(0), { type: 'WorkflowEventReceived', data: { name: 'x', data: [] } });
    const kinds = (found: Array<{ kind: string }>) => ({ decision: found.filter((c) => c.kind === 'decision').length, task: found.filter((c) => c.kind === 'task').length });
    const capped = (caps: { decision?: number; task?: number }, max = 10) => kinds(state.candidates('demo', 'test', ['Onboarding'], ['sendEmail'], max, new Set(), caps));
    expect(kinds(candidates(['Onboarding'], ['sendEmail']))).toEqual({ decision: 3, task: 3 });
    expect(capped({ decision: 1 })).toEqual({ decision: 1, task: 3 });
    expect(capped({ decision: 0 })).toEqual({ decision: 0, task: 3 });
    expect(capped({ task: 0 })).toEqual({ decision: 3, task: 0 });
    expect(capped({ decision: 2, task: 1 })).toEqual({ decision: 2, task: 1 });
    expect(capped({ decision: 0, task: 0 })).toEqual({ decision: 0, task: 0 });
    // The total still bounds both.
    expect(capped({ decision: 3, task: 3 }, 4)).toMatchObject({ decision: expect.any(Number), task: expect.any(Number) });
    const both = capped({ decision: 3, task: 3 }, 4);
    expect(both.decision + both.task).toBe(4);
  });

  it('keeps due times in a heap: a lease to expire, announced when it is the earliest, taken once', () => {
    const { state, apply, clock } = engine();
    const announced: number[] = [];
    state.onDue((due) => announced.push(due));
    apply(WF, dispatched(), decisionStarted('d1', 'Onboarding', 0));
    expect(state.nextDue()).toBe(T0 + 1000);
    expect(announced).toEqual([T0 + 1000]);
    expect(state.takeDue(T0 + 999)).toEqual([]);
    clock.advance(1000);
    expect(state.takeDue(T0 + 1000)).toEqual([`wf:${WF}`]);
    expect(state.takeDue(T0 + 1000)).toEqual([]);
  });

  it('offers a retry only once its delay has passed (the ticker re-examines it when due)', () => {
    const { state, apply, candidates, clock } = engine();
    apply(WF, dispatched(), decisionStarted('d1'), decisionCompleted('d1'), taskScheduled(0), taskStarted(0, 'a1', 0));
    apply(WF, { type: 'TaskAttemptFailed', data: { seq: 0, attemptId: 'a1', attempt: 1, reason: 'error', error: { message: 'x' }, retryAt: at(100) } });
    expect(candidates([], ['sendEmail'])).toEqual([]);
    expect(state.nextDue()).toBe(T0 + 100);
    clock.advance(100);
    for (const ref of state.takeDue(clock.now())) state.reindexRef(ref);
    expect(candidates([], ['sendEmail'])).toEqual([{ ref: `wf:${WF}#0`, kind: 'task' }]);
  });

  it('offers standalone tasks until they start, and forgets them once done', () => {
    const { state, candidates } = engine();
    const events: TaskEvent[] = [
      { type: 'TaskDispatched', data: { taskId: TASK, appId: 'demo', environment: 'test', name: 'resize', args: [], scheduleId: null, parent: null, dispatchedAt: at(0) } },
    ];
    events.forEach((e) => state.applyTask(TASK, e));
    expect(candidates([], ['resize'])).toEqual([{ ref: `task:${TASK}`, kind: 'task' }]);
    state.applyTask(TASK, { type: 'TaskStarted', data: { attempt: 1, attemptId: 'a1', workerId: 'w', startedAt: at(0), leaseExpiresAt: at(1000), deadlineAt: null, retryPolicy: POLICY } });
    expect(candidates([], ['resize'])).toEqual([]);
    state.applyTask(TASK, { type: 'TaskCompleted', data: { attemptId: 'a1', result: 1 } });
    expect(state.tasks.has(TASK)).toBe(false);
  });

  it('wakes a parked poll when work for its names arrives', async () => {
    const { state, apply } = engine();
    let woke = false;
    const parked = state.watch('demo', 'test', ['Onboarding_v2'], []).park(60_000).then(() => (woke = true));
    apply(WF2, dispatched(WF2, 'Billing'));
    await Promise.resolve();
    expect(woke).toBe(false);
    apply(WF, dispatched());
    await parked;
    expect(woke).toBe(true);
  });

  it('releases a parked poll when its signal aborts', async () => {
    const { state } = engine();
    const abort = new AbortController();
    const parked = state.watch('demo', 'test', ['Onboarding'], []).park(60_000, abort.signal);
    abort.abort();
    await expect(parked).resolves.toBeUndefined();
  });
});

describe('EngineState: claims by poll id', () => {
  const named = (event: WorkflowEvent, pollId: string): WorkflowEvent => ({ ...event, data: { ...event.data, pollId } }) as WorkflowEvent;

  it("lists the items whose current claim a named poll of a worker made, in its app and environment, and drops each when its claim ends", () => {
    const { apply, state } = engine();
    const claims = (pollId: string, workerId = 'w', environment = 'test') => state.claimsOfPoll('demo', environment, workerId, pollId);
    apply(WF, dispatched(), named(decisionStarted('d1'), 'p1'));
    expect(claims('p1')).toEqual([{ kind: 'decision', workflowId: WF }]);
    expect({ otherPoll: claims('p2'), otherWorker: claims('p1', 'v'), otherEnvironment: claims('p1', 'w', 'prod') }).toEqual({ otherPoll: [], otherWorker: [], otherEnvironment: [] });
    apply(WF, { type: 'DecisionCompleted', data: { decisionId: 'd1', commands: [{ type: 'ScheduleTask', seq: 0, name: 'sendEmail', args: [] }] } } as WorkflowEvent, taskScheduled(0));
    expect(claims('p1')).toEqual([]);
    apply(WF, named(taskStarted(0, 'a1', 10), 'p2'));
    expect(claims('p2')).toEqual([{ kind: 'workflowTask', workflowId: WF, seq: 0 }]);
    apply(WF, { type: 'TaskCompleted', data: { seq: 0, attemptId: 'a1', result: null } });
    expect(claims('p2')).toEqual([]);
    // A claim made without a poll id (older workers, a report's eager claim) is not listed.
    apply(WF2, dispatched(WF2), decisionStarted('d2'));
    expect(claims('')).toEqual([]);
  });

  it('drops the claims of a workflow that ends, and lists a standalone task claimed by a named poll until its attempt lapses', () => {
    const { apply, state } = engine();
    apply(WF, dispatched(), named(decisionStarted('d1'), 'p1'));
    apply(WF, { type: 'WorkflowTerminated', data: { reason: 'test', terminatedAt: at(5) } } as unknown as WorkflowEvent);
    expect(state.claimsOfPoll('demo', 'test', 'w', 'p1')).toEqual([]);
    const task = (event: TaskEvent) => state.applyTask(TASK, event);
    task({ type: 'TaskDispatched', data: { taskId: TASK, appId: 'demo', environment: 'test', name: 'sendEmail', tag: null, args: [], idempotencyKey: null, parent: null, dispatchedAt: at(0) } } as unknown as TaskEvent);
    task({ type: 'TaskStarted', data: { attempt: 1, attemptId: 'a1', workerId: 'w', startedAt: at(0), leaseExpiresAt: at(1000), deadlineAt: null, retryPolicy: POLICY, pollId: 'p3' } });
    expect(state.claimsOfPoll('demo', 'test', 'w', 'p3')).toEqual([{ kind: 'task', taskId: TASK }]);
    task({ type: 'TaskAttemptFailed', data: { attempt: 1, attemptId: 'a1', reason: 'lease_expired', error: { message: 'lapsed' }, retryAt: at(1100), failedAt: at(1000) } } as unknown as TaskEvent);
    expect(state.claimsOfPoll('demo', 'test', 'w', 'p3')).toEqual([]);
  });
});
