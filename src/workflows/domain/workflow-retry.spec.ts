import { describe, expect, it } from '@jest/globals';
import { DeciderSpecification } from '../../../test/support/decider-specification.js';
import { ConflictError } from '../../shared/errors.js';
import { taskDecider, TaskEvent } from '../../tasks/domain/task.decider.js';
import { claimableTasks, decisionClaimable, WorkflowCommand, WorkflowEvent, workflowDecider } from './workflow.decider.js';
import { failureCause, replayableHistory } from '../../protocol/workflow-retry.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const policy = { maxAttempts: 1, initialDelayMs: 0, backoffFactor: 1, maxDelayMs: 0 };

const dispatched: WorkflowEvent = {
  type: 'WorkflowDispatched',
  data: { workflowId: 'w1', appId: 'demo', environment: 'test', name: 'Flow', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: at(0) },
};
const decisionStarted = (id: string, ms: number): WorkflowEvent => ({
  type: 'DecisionStarted',
  data: { decisionId: id, workerId: 'wk', version: 'Flow', startedAt: at(ms), leaseExpiresAt: at(ms + 1000) },
});
const taskStarted = (seq: number, attemptId: string, ms: number): WorkflowEvent => ({
  type: 'TaskStarted',
  data: { seq, attempt: 1, attemptId, workerId: 'wk', startedAt: at(ms), leaseExpiresAt: at(ms + 1000), deadlineAt: null, retryPolicy: policy },
});
const error = { message: 'card declined' };

/** Task 0 completes, task 1 fails and the code does not catch it. */
const failedHistory: WorkflowEvent[] = [
  dispatched,
  decisionStarted('d1', 1),
  { type: 'DecisionCompleted', data: { decisionId: 'd1', commands: [{ type: 'ScheduleTask', seq: 0, name: 'a', args: [] }] } },
  { type: 'TaskScheduled', data: { seq: 0, name: 'a', args: [] } },
  taskStarted(0, 'a0', 2),
  { type: 'TaskCompleted', data: { seq: 0, attemptId: 'a0', result: 1 } },
  decisionStarted('d2', 3),
  { type: 'DecisionCompleted', data: { decisionId: 'd2', commands: [{ type: 'ScheduleTask', seq: 1, name: 'b', args: [] }] } },
  { type: 'TaskScheduled', data: { seq: 1, name: 'b', args: [] } },
  taskStarted(1, 'b0', 4),
  { type: 'TaskAttemptFailed', data: { seq: 1, attemptId: 'b0', attempt: 1, reason: 'error', error, retryAt: null } },
  { type: 'TaskFailed', data: { seq: 1, attempts: 1, error } },
  decisionStarted('d3', 5),
  { type: 'DecisionCompleted', data: { decisionId: 'd3', commands: [{ type: 'FailWorkflow', error }] } },
  { type: 'WorkflowFailed', data: { error } },
];
const numbered = (events: WorkflowEvent[]) => events.map((e, revision) => ({ ...e, revision }));

describe('retrying a failed workflow', () => {
  const spec = DeciderSpecification.for(workflowDecider);

  it('puts a failed workflow back to running with a decision pending and the failed task claimable again', () => {
    spec
      .given(failedHistory)
      .when({ type: 'RetryWorkflow', resetTasks: [1], now: T0 + 10 })
      .thenState((state, events) => {
        expect(events).toEqual([{ type: 'WorkflowRetried', data: { resetTasks: [1], retriedAt: at(10) } }]);
        expect(state.status).toBe('running');
        expect(decisionClaimable(state, T0 + 10)).toBe(true);
        expect(claimableTasks(state, T0 + 10)).toEqual([1]);
        if (state.status !== 'none') expect(state.tasks.get(0)?.attempt.status).toBe('completed');
      });
  });

  it('changes nothing on a workflow that is not failed, and resets only tasks that did fail', () => {
    spec.given([dispatched]).when({ type: 'RetryWorkflow', resetTasks: [], now: T0 }).thenNothingHappens();
    spec
      .given(failedHistory)
      .when({ type: 'RetryWorkflow', resetTasks: [0, 1, 7], now: T0 })
      .then([{ type: 'WorkflowRetried', data: { resetTasks: [1], retriedAt: at(0) } }]);
  });

  it('finds the tasks whose failure the failing decision saw', () => {
    expect(failureCause(numbered(failedHistory))?.resetTasks).toEqual([1]);
  });

  it('counts from the last decision recorded, past one discarded, lapsed or failed in between (its outcome was never recorded)', () => {
    // Task 1 failed; the next decision (d3) ran while the workflow was paused and was discarded,
    // then d4 (after the resume) failed the workflow on it: task 1 is what d4 saw, so it is reset.
    const failing = failedHistory.slice(0, -3);
    for (const between of [
      { type: 'DecisionDiscarded', data: { decisionId: 'd3', reason: 'paused' } },
      { type: 'DecisionTimedOut', data: { decisionId: 'd3' } },
      { type: 'DecisionFailed', data: { decisionId: 'd3', code: 'X', message: 'x', historyPosition: null, retryAt: at(6) } },
    ] as WorkflowEvent[]) {
      const history = [
        ...failing,
        decisionStarted('d3', 5),
        between,
        decisionStarted('d4', 7),
        { type: 'DecisionCompleted', data: { decisionId: 'd4', commands: [{ type: 'FailWorkflow', error }] } },
        { type: 'WorkflowFailed', data: { error } },
      ] as WorkflowEvent[];
      expect(failureCause(numbered(history))?.resetTasks).toEqual([1]);
    }
  });

  it('hands workflow code the history without the failure: the failing decision, WorkflowFailed and the reset TaskFailed are left out', () => {
    const retried = numbered([
      ...failedHistory,
      { type: 'WorkflowRetried', data: { resetTasks: [1], retriedAt: at(10) } },
      taskStarted(1, 'b1', 11),
      { type: 'TaskCompleted', data: { seq: 1, attemptId: 'b1', result: 2 } },
      decisionStarted('d4', 12),
    ]);
    const types = replayableHistory(retried).map((e) => `${e.revision}:${e.type}`);
    expect(types).toEqual([
      '0:WorkflowDispatched',
      '1:DecisionStarted',
      '2:DecisionCompleted',
      '3:TaskScheduled',
      '4:TaskStarted',
      '5:TaskCompleted',
      '6:DecisionStarted',
      '7:DecisionCompleted',
      '8:TaskScheduled',
      '9:TaskStarted',
      '10:TaskAttemptFailed',
      '16:TaskStarted',
      '17:TaskCompleted',
      '18:DecisionStarted',
    ]);
    const plain = numbered(failedHistory);
    expect(replayableHistory(plain)).toBe(plain);
  });

  it('keeps the retried mark across a continue-as-new (the new run\'s state starts at that event, and cold loads read from it)', () => {
    const retried: WorkflowEvent[] = [
      ...failedHistory,
      { type: 'WorkflowRetried', data: { resetTasks: [1], retriedAt: at(10) } },
      taskStarted(1, 'b1', 11),
      { type: 'TaskCompleted', data: { seq: 1, attemptId: 'b1', result: 2 } },
      decisionStarted('d4', 12),
    ];
    const continueAsNew = (decisionId: string, seq: number): WorkflowCommand => ({ type: 'CompleteDecision', decisionId, commands: [{ type: 'ContinueAsNew', seq, args: [], at: at(13) }], ids: {} });
    spec
      .given(retried)
      .when(continueAsNew('d4', 2))
      .thenState((state, events) => {
        const continued = events.find((e) => e.type === 'WorkflowContinuedAsNew')!;
        expect(continued.data).toMatchObject({ run: 2, retried: true });
        expect(state).toMatchObject({ run: 2, retried: true });
        // A cold load starts at the continue-as-new alone.
        expect(workflowDecider.evolve(workflowDecider.initialState(), { ...continued, revision: 20n })).toMatchObject({ run: 2, retried: true });
      });
    // Never retried: no mark, on the event or the new run.
    spec
      .given([dispatched, decisionStarted('d1', 1)])
      .when(continueAsNew('d1', 0))
      .thenState((state, events) => {
        expect(events.find((e) => e.type === 'WorkflowContinuedAsNew')!.data).not.toHaveProperty('retried');
        expect(state).not.toHaveProperty('retried');
      });
  });

  it('is not ended with a parent\'s continue-as-new once retried (unlessRetried); other ends and workflows never retried are', () => {
    const retried: WorkflowEvent[] = [...failedHistory, { type: 'WorkflowRetried', data: { resetTasks: [1], retriedAt: at(10) } }];
    const ended = (unlessRetried?: boolean): WorkflowCommand => ({ type: 'TerminateWorkflow', reason: 'its parent continued as new', ...(unlessRetried === undefined ? {} : { unlessRetried }) });
    spec.given(retried).when(ended(true)).then([]);
    spec.given(retried).when(ended()).then([{ type: 'WorkflowTerminated', data: { reason: 'its parent continued as new' } }]);
    spec.given([dispatched]).when(ended(true)).then([{ type: 'WorkflowTerminated', data: { reason: 'its parent continued as new' } }]);
  });
});

describe('retrying a failed standalone task', () => {
  const spec = DeciderSpecification.for(taskDecider);
  const taskDispatched: TaskEvent = {
    type: 'TaskDispatched',
    data: { taskId: 't1', appId: 'demo', environment: 'test', name: 'resize', args: [], scheduleId: null, parent: null, dispatchedAt: at(0) },
  };
  const failed: TaskEvent[] = [
    taskDispatched,
    { type: 'TaskStarted', data: { attempt: 1, attemptId: 'x', workerId: 'wk', startedAt: at(1), leaseExpiresAt: at(2), deadlineAt: null, retryPolicy: policy } },
    { type: 'TaskAttemptFailed', data: { attemptId: 'x', attempt: 1, reason: 'error', error, retryAt: null } },
    { type: 'TaskFailed', data: { attempts: 1, error } },
  ];

  it('gives a failed task a fresh round of attempts (the earlier attempt stays known, for its late report)', () => {
    spec
      .given(failed)
      .when({ type: 'RetryTask', now: T0 + 5 })
      .thenState((state, events) => {
        expect(events).toEqual([{ type: 'TaskRetried', data: { previousAttempts: 1, retriedAt: at(5) } }]);
        expect(state.status === 'exists' && state.attempt).toEqual({ status: 'pending', attempts: 0, readyAt: 0, earlier: ['x'] });
      });
  });

  it('refuses to retry a task that has not failed', () => {
    spec.given([taskDispatched]).when({ type: 'RetryTask', now: T0 }).thenThrows(ConflictError, /only a failed task/);
  });
});
