import { describe, expect, it } from '@jest/globals';
import { DeciderSpecification } from '../../../test/support/decider-specification.js';
import type { Json } from '../../event-store/event-store.port.js';
import { BadUserInputError, ConflictError, NotFoundError } from '../../shared/errors.js';
import { RetryPolicy } from '../../tasks/domain/task-attempts.js';
import { DecisionCommand } from './workflow-commands.js';
import {
  WorkflowCommand,
  WorkflowEvent,
  WorkflowState,
  baseName,
  claimableTasks,
  decisionClaimable,
  nextDueAt,
  pickVersion,
  workflowDecider,
} from './workflow.decider.js';

const spec = DeciderSpecification.for(workflowDecider);

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const LEASE = 1000;
const POLICY: RetryPolicy = { maxAttempts: 3, initialDelayMs: 100, backoffFactor: 2, maxDelayMs: 300 };
const WF = '0190aaaa-0000-7000-8000-000000000001';

const dispatched: WorkflowEvent = {
  type: 'WorkflowDispatched',
  data: {
    workflowId: WF,
    appId: 'demo',
    environment: 'test',
    name: 'Onboarding',
    tag: 'email:ada@example.com',
    input: ['ada@example.com'],
    parent: null,
    scheduleId: null,
    dispatchedAt: at(0),
  },
};
const decisionStarted = (decisionId: string, ms = 0, version = 'Onboarding'): WorkflowEvent => ({
  type: 'DecisionStarted',
  data: { decisionId, workerId: 'w1', version, startedAt: at(ms), leaseExpiresAt: at(ms + LEASE) },
});
const decisionCompleted = (decisionId: string, commands: DecisionCommand[] = []): WorkflowEvent => ({
  type: 'DecisionCompleted',
  data: { decisionId, commands },
});
const taskScheduled = (seq: number, name = 'sendEmail'): WorkflowEvent => ({ type: 'TaskScheduled', data: { seq, name, args: [seq] } });
const taskStarted = (seq: number, attempt: number, attemptId: string, ms: number, deadlineMs: number | null = null): WorkflowEvent => ({
  type: 'TaskStarted',
  data: {
    seq,
    attempt,
    attemptId,
    workerId: 'w1',
    startedAt: at(ms),
    leaseExpiresAt: at(Math.min(ms + LEASE, deadlineMs ?? Infinity)),
    deadlineAt: deadlineMs === null ? null : at(deadlineMs),
    retryPolicy: POLICY,
  },
});
const taskCompleted = (seq: number, attemptId: string, result: unknown = 'ok'): WorkflowEvent => ({
  type: 'TaskCompleted',
  data: { seq, attemptId, result: result as never },
});
const attemptFailed = (seq: number, attemptId: string, attempt: number, retryAtMs: number | null): WorkflowEvent => ({
  type: 'TaskAttemptFailed',
  data: { seq, attemptId, attempt, reason: 'error', error: { message: 'boom' }, retryAt: retryAtMs === null ? null : at(retryAtMs) },
});
const timerStarted = (seq: number, fireAtMs: number): WorkflowEvent => ({ type: 'TimerStarted', data: { seq, fireAt: at(fireAtMs) } });
const paused: WorkflowEvent = { type: 'WorkflowPaused', data: {} };
const resumed: WorkflowEvent = { type: 'WorkflowResumed', data: {} };
const terminated: WorkflowEvent = { type: 'WorkflowTerminated', data: { reason: 'stop' } };
const eventReceived = (name: string, ...data: unknown[]): WorkflowEvent => ({ type: 'WorkflowEventReceived', data: { name, data: data as never[] } });

const start = (ms: number, decisionId = 'd-new', workflows = ['Onboarding']): WorkflowCommand => ({
  type: 'StartDecision',
  decisionId,
  workerId: 'w2',
  workflows,
  now: T0 + ms,
  leaseMs: LEASE,
});
const startTask = (seq: number, attemptId: string, ms: number, timeoutMs: number | null = null): WorkflowCommand => ({
  type: 'StartTask',
  seq,
  attemptId,
  workerId: 'w1',
  now: T0 + ms,
  leaseMs: LEASE,
  retryPolicy: POLICY,
  timeoutMs,
});
const failTask = (seq: number, attemptId: string, ms: number, error: { message: string; nonRetryable?: boolean; retryAfterMs?: number } = { message: 'boom' }): WorkflowCommand => ({
  type: 'FailTask',
  seq,
  attemptId,
  now: T0 + ms,
  error,
});

/** The workflow after its first decision scheduled task #0, which attempt a1 is running. */
const runningTask: WorkflowEvent[] = [
  dispatched,
  decisionStarted('d1'),
  decisionCompleted('d1', [{ type: 'ScheduleTask', seq: 0, name: 'sendEmail', args: [0] }]),
  taskScheduled(0),
  taskStarted(0, 1, 'a1', 10),
];
/** The workflow after its first decision started a timer firing at +500. */
const sleeping: WorkflowEvent[] = [
  dispatched,
  decisionStarted('d1'),
  decisionCompleted('d1', [{ type: 'StartTimer', seq: 0, fireAt: at(500) }]),
  timerStarted(0, 500),
];
const completeWith = (result: unknown): WorkflowEvent[] => [
  dispatched,
  decisionStarted('d1'),
  decisionCompleted('d1', [{ type: 'CompleteWorkflow', result: result as never }]),
  { type: 'WorkflowCompleted', data: { result: result as never } },
];
const failedHistory: WorkflowEvent[] = [
  dispatched,
  decisionStarted('d1'),
  decisionCompleted('d1', [{ type: 'FailWorkflow', error: { message: 'nope' } }]),
  { type: 'WorkflowFailed', data: { error: { message: 'nope' } } },
];

const stateOf = (events: WorkflowEvent[]) => spec.given(events).state();
const existing = (state: WorkflowState) => {
  if (state.status === 'none') throw new Error('no workflow');
  return state;
};

describe('workflow decider', () => {
  describe('dispatch', () => {
    it('records WorkflowDispatched and queues the first decision', () => {
      spec
        .given([])
        .when({ type: 'DispatchWorkflow', workflowId: WF, appId: 'demo', environment: 'test', name: 'Onboarding', tag: 'email:ada@example.com', input: ['ada@example.com'], now: T0 })
        .then([dispatched]);
      const state = stateOf([dispatched]);
      expect(state).toMatchObject({ status: 'running', needsDecision: true, decision: null, version: null });
      expect(decisionClaimable(state, T0)).toBe(true);
    });

    it('is idempotent: a second dispatch of the same id changes nothing', () => {
      spec
        .given([dispatched])
        .when({ type: 'DispatchWorkflow', workflowId: WF, appId: 'demo', environment: 'test', name: 'Other', tag: null, input: [], now: T0 + 5 })
        .thenNothingHappens();
    });

    it('refuses any other command on a stream with no workflow', () => {
      spec.given([]).when({ type: 'PauseWorkflow' }).thenThrows(NotFoundError);
    });
  });

  describe('states and operations (DESIGN §3)', () => {
    const histories: Record<string, WorkflowEvent[]> = {
      running: [dispatched],
      paused: [dispatched, paused],
      completed: completeWith('done'),
      failed: failedHistory,
      terminated: [dispatched, terminated],
    };
    const pause: WorkflowCommand = { type: 'PauseWorkflow' };
    const resume: WorkflowCommand = { type: 'ResumeWorkflow' };
    const terminate: WorkflowCommand = { type: 'TerminateWorkflow', reason: 'ops' };
    const send: WorkflowCommand = { type: 'DeliverEvent', name: 'activated', data: [1] };

    it.each([
      ['running', 'pause', pause, [paused], 'paused'],
      ['paused', 'pause', pause, [], 'paused'],
      ['paused', 'resume', resume, [resumed], 'running'],
      ['running', 'resume', resume, [], 'running'],
      ['running', 'terminate', terminate, [{ type: 'WorkflowTerminated', data: { reason: 'ops' } }], 'terminated'],
      ['paused', 'terminate', terminate, [{ type: 'WorkflowTerminated', data: { reason: 'ops' } }], 'terminated'],
      ['running', 'send', send, [eventReceived('activated', 1)], 'running'],
      ['paused', 'send', send, [eventReceived('activated', 1)], 'paused'],
      ['terminated', 'send', send, [], 'terminated'],
      ['completed', 'send', send, [], 'completed'],
      ['failed', 'send', send, [], 'failed'],
      ['completed', 'pause', pause, [], 'completed'],
      ['completed', 'resume', resume, [], 'completed'],
      ['completed', 'terminate', terminate, [], 'completed'],
      ['failed', 'pause', pause, [], 'failed'],
      ['failed', 'resume', resume, [], 'failed'],
      ['failed', 'terminate', terminate, [], 'failed'],
      ['terminated', 'pause', pause, [], 'terminated'],
      ['terminated', 'resume', resume, [], 'terminated'],
      ['terminated', 'terminate', terminate, [], 'terminated'],
    ] as Array<[string, string, WorkflowCommand, WorkflowEvent[], string]>)('%s + %s → %j, then %s', (from, _op, command, events, to) => {
      spec.given(histories[from]).when(command).then(events);
      spec
        .given(histories[from])
        .when(command)
        .thenState((state) => expect(state.status).toBe(to));
    });

    it('running + the workflow code returns → completed with its result', () => {
      spec
        .given([dispatched, decisionStarted('d1')])
        .when({ type: 'CompleteDecision', decisionId: 'd1', commands: [{ type: 'CompleteWorkflow', result: { ok: 1 } }], ids: {} })
        .thenState((state, events) => {
          expect(events).toEqual([
            decisionCompleted('d1', [{ type: 'CompleteWorkflow', result: { ok: 1 } }]),
            { type: 'WorkflowCompleted', data: { result: { ok: 1 } } },
          ]);
          expect(state.status).toBe('completed');
          expect(decisionClaimable(state, T0 + 10_000)).toBe(false);
          expect(nextDueAt(state, T0)).toBeUndefined();
        });
    });

    it('running + the workflow code throws → failed with the error', () => {
      spec
        .given([dispatched, decisionStarted('d1')])
        .when({ type: 'CompleteDecision', decisionId: 'd1', commands: [{ type: 'FailWorkflow', error: { message: 'bad input', name: 'TypeError' } }], ids: {} })
        .thenState((state, events) => {
          expect(events[1]).toEqual({ type: 'WorkflowFailed', data: { error: { message: 'bad input', name: 'TypeError' } } });
          expect(state.status).toBe('failed');
        });
    });
  });

  describe('decisions', () => {
    it('are claimable only while running', () => {
      expect(decisionClaimable(stateOf([dispatched]), T0)).toBe(true);
      for (const history of [[dispatched, paused], [dispatched, terminated], completeWith(1), failedHistory]) {
        expect(decisionClaimable(stateOf(history), T0 + 60_000)).toBe(false);
        spec.given(history).when(start(1)).thenThrows(ConflictError);
      }
    });

    it('starts with a lease and the version the worker runs (highest Name_vN), which the workflow keeps', () => {
      spec
        .given([dispatched])
        .when(start(5, 'd1', ['Onboarding_v2', 'Onboarding_v10', 'Other']))
        .then([
          {
            type: 'DecisionStarted',
            data: { decisionId: 'd1', workerId: 'w2', version: 'Onboarding_v10', startedAt: at(5), leaseExpiresAt: at(5 + LEASE) },
          },
        ]);
      const history = [dispatched, decisionStarted('d1', 0, 'Onboarding_v2'), decisionCompleted('d1'), eventReceived('go')];
      expect(existing(stateOf(history)).version).toBe('Onboarding_v2');
      // a worker that no longer serves v2 cannot take the workflow's next decision...
      spec.given(history).when(start(10, 'd2', ['Onboarding_v3'])).thenThrows(ConflictError, /Onboarding_v2/);
      // ...and one serving v2 and v3 runs v2.
      spec
        .given(history)
        .when(start(10, 'd2', ['Onboarding_v2', 'Onboarding_v3']))
        .thenMatches([{ type: 'DecisionStarted', data: { version: 'Onboarding_v2' } }]);
    });

    it('cannot be claimed by a worker that does not serve the workflow', () => {
      spec.given([dispatched]).when(start(0, 'd1', ['Billing'])).thenThrows(ConflictError);
    });

    it('is claimed once: a started decision is not claimable again', () => {
      const history = [dispatched, decisionStarted('d1')];
      expect(decisionClaimable(stateOf(history), T0)).toBe(false);
      spec.given(history).when(start(1, 'd2')).thenThrows(ConflictError);
    });

    it('turns its commands into events, with the prepared ids for children and dispatched tasks', () => {
      const commands: DecisionCommand[] = [
        { type: 'ScheduleTask', seq: 0, name: 'sendEmail', args: ['a'] },
        { type: 'StartTimer', seq: 1, fireAt: at(500) },
        { type: 'StartChildWorkflow', seq: 2, name: 'ShipOrder', args: ['o1'], tag: 'order:o1', wait: true },
        { type: 'DispatchTask', seq: 3, name: 'audit', args: [] },
        { type: 'ControlWorkflows', seq: 4, selector: { name: 'Other', tag: 't' }, action: 'send', event: { name: 'hi', data: [1] } },
      ];
      spec
        .given([dispatched, decisionStarted('d1')])
        .when({ type: 'CompleteDecision', decisionId: 'd1', commands, ids: { 2: 'child-id', 3: 'task-id' } })
        .then([
          decisionCompleted('d1', commands),
          { type: 'TaskScheduled', data: { seq: 0, name: 'sendEmail', args: ['a'] } },
          { type: 'TimerStarted', data: { seq: 1, fireAt: at(500) } },
          { type: 'ChildWorkflowStarted', data: { seq: 2, childId: 'child-id', name: 'ShipOrder', args: ['o1'], tag: 'order:o1', wait: true } },
          { type: 'TaskDispatchRequested', data: { seq: 3, taskId: 'task-id', name: 'audit', args: [] } },
          { type: 'ControlRequested', data: { seq: 4, selector: { name: 'Other', tag: 't' }, action: 'send', event: { name: 'hi', data: [1] } } },
        ]);
    });

    it('does not schedule a call twice when a command repeats one already recorded', () => {
      spec
        .given([...runningTask, decisionStarted('d2', 20)])
        .when({ type: 'CompleteDecision', decisionId: 'd2', commands: [{ type: 'ScheduleTask', seq: 0, name: 'sendEmail', args: [0] }], ids: {} })
        .then([decisionCompleted('d2', [{ type: 'ScheduleTask', seq: 0, name: 'sendEmail', args: [0] }])]);
    });

    it('refuses a child command without a prepared id', () => {
      spec
        .given([dispatched, decisionStarted('d1')])
        .when({ type: 'CompleteDecision', decisionId: 'd1', commands: [{ type: 'StartChildWorkflow', seq: 0, name: 'C', args: [], wait: true }], ids: {} })
        .thenThrows(BadUserInputError);
    });

    it('refuses the completion of a decision that is no longer current', () => {
      spec
        .given([dispatched, decisionStarted('d1'), { type: 'DecisionTimedOut', data: { decisionId: 'd1' } }])
        .when({ type: 'CompleteDecision', decisionId: 'd1', commands: [], ids: {} })
        .thenThrows(ConflictError);
    });

    it('with no new commands leaves nothing pending', () => {
      spec
        .given([...runningTask, taskCompleted(0, 'a1'), decisionStarted('d2', 20)])
        .when({ type: 'CompleteDecision', decisionId: 'd2', commands: [], ids: {} })
        .thenState((state) => expect(decisionClaimable(state, T0 + 100_000)).toBe(false));
    });

    it('that fails is retried with a doubling delay', () => {
      spec
        .given([dispatched, decisionStarted('d1', 0)])
        .when({ type: 'FailDecision', decisionId: 'd1', code: 'NON_DETERMINISTIC', message: 'changed', historyPosition: 2, now: T0 + 10 })
        .thenState((state, events) => {
          expect(events).toEqual([
            { type: 'DecisionFailed', data: { decisionId: 'd1', code: 'NON_DETERMINISTIC', message: 'changed', historyPosition: 2, retryAt: at(1010) } },
          ]);
          expect(decisionClaimable(state, T0 + 1009)).toBe(false);
          expect(decisionClaimable(state, T0 + 1010)).toBe(true);
          expect(nextDueAt(state, T0 + 10)).toBe(T0 + 1010);
          expect(state.status).toBe('running');
        });
      const failedOnce: WorkflowEvent[] = [
        dispatched,
        decisionStarted('d1', 0),
        { type: 'DecisionFailed', data: { decisionId: 'd1', code: 'X', message: 'x', historyPosition: null, retryAt: at(1010) } },
        decisionStarted('d2', 1010),
      ];
      spec
        .given(failedOnce)
        .when({ type: 'FailDecision', decisionId: 'd2', code: 'X', message: 'x', historyPosition: null, now: T0 + 1020 })
        .thenMatches([{ type: 'DecisionFailed', data: { retryAt: at(3020) } }]);
    });

    it('caps the retry delay of failing decisions at one minute', () => {
      const history: WorkflowEvent[] = [dispatched];
      for (let i = 0; i < 10; i++) {
        history.push(decisionStarted(`d${i}`, i), { type: 'DecisionFailed', data: { decisionId: `d${i}`, code: 'X', message: 'x', historyPosition: null, retryAt: at(i) } });
      }
      history.push(decisionStarted('d10', 100));
      spec
        .given(history)
        .when({ type: 'FailDecision', decisionId: 'd10', code: 'X', message: 'x', historyPosition: null, now: T0 + 100 })
        .thenMatches([{ type: 'DecisionFailed', data: { retryAt: at(60_100) } }]);
    });

    it('ignores the failure report of a decision that is no longer current', () => {
      spec
        .given([dispatched, decisionStarted('d1'), decisionCompleted('d1')])
        .when({ type: 'FailDecision', decisionId: 'd1', code: 'X', message: 'x', historyPosition: null, now: T0 })
        .thenNothingHappens();
    });

    it('whose lease lapses times out and becomes claimable again (Tick)', () => {
      const history = [dispatched, decisionStarted('d1', 0)];
      expect(nextDueAt(stateOf(history), T0)).toBe(T0 + LEASE);
      spec.given(history).when({ type: 'Tick', now: T0 + LEASE - 1 }).thenNothingHappens();
      spec
        .given(history)
        .when({ type: 'Tick', now: T0 + LEASE })
        .thenState((state, events) => {
          expect(events).toEqual([{ type: 'DecisionTimedOut', data: { decisionId: 'd1' } }]);
          expect(decisionClaimable(state, T0 + LEASE)).toBe(true);
        });
    });
  });

  describe('a decision running long inline steps', () => {
    const history = [dispatched, decisionStarted('d1', 0)];
    it('keeps its lease with heartbeats (recorded once less than half of it is left), so it does not time out', () => {
      spec.given(history).when({ type: 'HeartbeatDecision', decisionId: 'd1', now: T0 + 400, leaseMs: LEASE }).thenNothingHappens();
      spec
        .given(history)
        .when({ type: 'HeartbeatDecision', decisionId: 'd1', now: T0 + 700, leaseMs: LEASE })
        .thenState((state, events) => {
          expect(events).toEqual([{ type: 'DecisionLeaseExtended', data: { decisionId: 'd1', leaseExpiresAt: at(1700) } }]);
          expect(nextDueAt(state, T0 + 700)).toBe(T0 + 1700);
        });
      const extended = [...history, { type: 'DecisionLeaseExtended', data: { decisionId: 'd1', leaseExpiresAt: at(1700) } } as WorkflowEvent];
      spec.given(extended).when({ type: 'Tick', now: T0 + LEASE }).thenNothingHappens();
      spec.given(extended).when({ type: 'Tick', now: T0 + 1700 }).then([{ type: 'DecisionTimedOut', data: { decisionId: 'd1' } }]);
    });

    it('records nothing for a decision that is no longer current', () => {
      spec.given(history).when({ type: 'HeartbeatDecision', decisionId: 'stale', now: T0 + 700, leaseMs: LEASE }).thenNothingHappens();
      spec.given([...history, decisionCompleted('d1')]).when({ type: 'HeartbeatDecision', decisionId: 'd1', now: T0 + 700, leaseMs: LEASE }).thenNothingHappens();
    });
  });

  describe('while paused', () => {
    it('records events that arrive, in order, and decides on them only after resume', () => {
      const waiting = [dispatched, decisionStarted('d1'), decisionCompleted('d1'), paused];
      spec.given(waiting).when({ type: 'DeliverEvent', name: 'item', data: ['a'] }).then([eventReceived('item', 'a')]);
      const afterEvents = [...waiting, eventReceived('item', 'a'), eventReceived('item', 'b')];
      expect(decisionClaimable(stateOf(afterEvents), T0 + 60_000)).toBe(false);
      spec.given(afterEvents).when(start(100)).thenThrows(ConflictError);
      spec
        .given(afterEvents)
        .when({ type: 'ResumeWorkflow' })
        .thenState((state) => expect(decisionClaimable(state, T0 + 100)).toBe(true));
    });

    it('fires timers that come due and decides on them after resume', () => {
      const history = [...sleeping, paused];
      expect(nextDueAt(stateOf(history), T0)).toBe(T0 + 500);
      spec
        .given(history)
        .when({ type: 'Tick', now: T0 + 500 })
        .thenState((state, events) => {
          expect(events).toEqual([{ type: 'TimerFired', data: { seq: 0 } }]);
          expect(decisionClaimable(state, T0 + 500)).toBe(false);
        });
      expect(decisionClaimable(stateOf([...history, { type: 'TimerFired', data: { seq: 0 } }, resumed]), T0 + 500)).toBe(true);
    });

    it('records the result of a task that was already running, and decides on it after resume', () => {
      const history = [...runningTask, paused];
      spec.given(history).when({ type: 'CompleteTask', seq: 0, attemptId: 'a1', result: 42 }).then([taskCompleted(0, 'a1', 42)]);
      const afterResult = [...history, taskCompleted(0, 'a1', 42)];
      expect(decisionClaimable(stateOf(afterResult), T0 + 100)).toBe(false);
      expect(decisionClaimable(stateOf([...afterResult, resumed]), T0 + 100)).toBe(true);
    });

    it('keeps extending the lease of a running task (it still runs)', () => {
      spec
        .given([...runningTask, paused])
        .when({ type: 'HeartbeatTask', seq: 0, attemptId: 'a1', now: T0 + 600, leaseMs: LEASE })
        .then([{ type: 'TaskLeaseExtended', data: { seq: 0, attemptId: 'a1', leaseExpiresAt: at(1600) } }]);
    });

    it('dispatches nothing new: a scheduled task is not started until resume', () => {
      const history = [dispatched, decisionStarted('d1'), decisionCompleted('d1', [{ type: 'ScheduleTask', seq: 0, name: 'sendEmail', args: [0] }]), taskScheduled(0), paused];
      expect(claimableTasks(stateOf(history), T0 + 10)).toEqual([]);
      spec.given(history).when(startTask(0, 'a1', 10)).thenThrows(ConflictError);
      expect(claimableTasks(stateOf([...history, resumed]), T0 + 10)).toEqual([0]);
    });
  });

  describe('once terminated', () => {
    const history = [...runningTask, terminated];

    it('takes no decision, whatever happens next', () => {
      expect(decisionClaimable(stateOf(history), T0 + 60_000)).toBe(false);
      expect(nextDueAt(stateOf(history), T0)).toBeUndefined();
      spec.given(history).when({ type: 'Tick', now: T0 + 60_000 }).thenNothingHappens();
    });

    it('records a late task result but decides nothing on it', () => {
      spec
        .given(history)
        .when({ type: 'CompleteTask', seq: 0, attemptId: 'a1', result: 'late' })
        .thenState((state, events) => {
          expect(events).toEqual([taskCompleted(0, 'a1', 'late')]);
          expect(state.status).toBe('terminated');
          expect(decisionClaimable(state, T0 + 60_000)).toBe(false);
        });
    });

    it('records a late failure but retries nothing', () => {
      spec
        .given(history)
        .when(failTask(0, 'a1', 20))
        .thenState((state, events) => {
          expect(events).toMatchObject([{ type: 'TaskAttemptFailed', data: { seq: 0, attemptId: 'a1' } }]);
          expect(claimableTasks(state, T0 + 60_000)).toEqual([]);
          expect(decisionClaimable(state, T0 + 60_000)).toBe(false);
        });
    });

    it('does not extend the lease of a running task (the service tells it to stop)', () => {
      spec.given(history).when({ type: 'HeartbeatTask', seq: 0, attemptId: 'a1', now: T0 + 900, leaseMs: LEASE }).thenNothingHappens();
    });

    it('applies none of the commands of a decision that was under way', () => {
      spec
        .given([dispatched, decisionStarted('d1'), terminated])
        .when({ type: 'CompleteDecision', decisionId: 'd1', commands: [{ type: 'ScheduleTask', seq: 0, name: 'x', args: [] }], ids: {} })
        .then([decisionCompleted('d1', [{ type: 'ScheduleTask', seq: 0, name: 'x', args: [] }])]);
    });

    it('does not receive events', () => {
      spec.given(history).when({ type: 'DeliverEvent', name: 'x', data: [] }).thenNothingHappens();
    });
  });

  describe('task attempts', () => {
    const scheduled = runningTask.slice(0, 4);

    it('start with a lease, as attempt 1', () => {
      spec.given(scheduled).when(startTask(0, 'a1', 10)).then([taskStarted(0, 1, 'a1', 10)]);
      expect(claimableTasks(stateOf(runningTask), T0 + 10)).toEqual([]);
    });

    it('cannot be claimed twice', () => {
      spec.given(runningTask).when(startTask(0, 'a2', 20)).thenThrows(ConflictError);
    });

    it('cannot be started for a call the workflow never made', () => {
      spec.given(scheduled).when(startTask(7, 'a1', 10)).thenThrows(NotFoundError);
    });

    it('complete once, which queues a decision; the same report again is acknowledged and records nothing', () => {
      spec
        .given(runningTask)
        .when({ type: 'CompleteTask', seq: 0, attemptId: 'a1', result: { sent: true } })
        .thenState((state, events) => {
          expect(events).toEqual([taskCompleted(0, 'a1', { sent: true })]);
          expect(decisionClaimable(state, T0 + 20)).toBe(true);
        });
      spec
        .given([...runningTask, taskCompleted(0, 'a1')])
        .when({ type: 'CompleteTask', seq: 0, attemptId: 'a1', result: 'again' })
        .then([]);
      spec
        .given([...runningTask, taskCompleted(0, 'a1')])
        .when(failTask(0, 'a1', 30))
        .then([{ type: 'TaskResultIgnored', data: { seq: 0, attemptId: 'a1', reason: 'the task had already completed' } }]);
      // An attempt the task never issued: refused, and nothing recorded (reports cannot grow the stream).
      spec
        .given([...runningTask, taskCompleted(0, 'a1')])
        .when({ type: 'CompleteTask', seq: 0, attemptId: 'a-other', result: 'late' })
        .thenThrows(NotFoundError, 'task attempt a-other not found');
      spec.given(runningTask).when(failTask(0, 'a-other', 30)).thenThrows(NotFoundError);
    });

    it('ignore the result of a stale attempt (TaskResultIgnored)', () => {
      const lapsed: WorkflowEvent[] = [
        ...runningTask,
        { type: 'TaskAttemptFailed', data: { seq: 0, attemptId: 'a1', attempt: 1, reason: 'lease_expired', error: { message: 'lease' }, retryAt: at(1110) } },
      ];
      spec
        .given(lapsed)
        .when({ type: 'CompleteTask', seq: 0, attemptId: 'a1', result: 'late' })
        .then([{ type: 'TaskResultIgnored', data: { seq: 0, attemptId: 'a1', reason: 'the attempt lapsed before it reported' } }]);
      const superseded = [...lapsed, taskStarted(0, 2, 'a2', 1110)];
      spec
        .given(superseded)
        .when({ type: 'CompleteTask', seq: 0, attemptId: 'a1', result: 'late' })
        .then([{ type: 'TaskResultIgnored', data: { seq: 0, attemptId: 'a1', reason: 'superseded by a later attempt' } }]);
      spec
        .given(superseded)
        .when(failTask(0, 'a1', 1200))
        .thenMatches([{ type: 'TaskResultIgnored', data: { seq: 0, attemptId: 'a1' } }]);
      expect(decisionClaimable(stateOf([...superseded, { type: 'TaskResultIgnored', data: { seq: 0, attemptId: 'a1', reason: 'x' } }]), T0 + 2000)).toBe(false);
      // Recorded once: the same late report again, or another outcome of that attempt, records nothing.
      const ignored = [...superseded, { type: 'TaskResultIgnored', data: { seq: 0, attemptId: 'a1', reason: 'superseded by a later attempt' } } as WorkflowEvent];
      spec.given(ignored).when({ type: 'CompleteTask', seq: 0, attemptId: 'a1', result: 'late' }).then([]);
      spec.given(ignored).when(failTask(0, 'a1', 1200)).then([]);
      // Still known after the next attempt completed.
      const completed = [...superseded, taskCompleted(0, 'a2')];
      spec
        .given(completed)
        .when({ type: 'CompleteTask', seq: 0, attemptId: 'a1', result: 'late' })
        .thenMatches([{ type: 'TaskResultIgnored', data: { seq: 0, attemptId: 'a1' } }]);
    });

    it('are retried with growing delays, then fail for good (TaskFailed) and queue a decision', () => {
      // attempt 1 fails at +50: retry after initialDelay (100 ms)
      spec.given(runningTask).when(failTask(0, 'a1', 50)).then([attemptFailed(0, 'a1', 1, 150)]);
      const afterFirst = [...runningTask, attemptFailed(0, 'a1', 1, 150)];
      expect(claimableTasks(stateOf(afterFirst), T0 + 149)).toEqual([]);
      expect(claimableTasks(stateOf(afterFirst), T0 + 150)).toEqual([0]);
      expect(nextDueAt(stateOf(afterFirst), T0 + 50)).toBe(T0 + 150);
      expect(decisionClaimable(stateOf(afterFirst), T0 + 150)).toBe(false);
      spec.given(afterFirst).when(startTask(0, 'a2', 100)).thenThrows(ConflictError);
      spec.given(afterFirst).when(startTask(0, 'a2', 150)).thenMatches([{ type: 'TaskStarted', data: { attempt: 2, attemptId: 'a2' } }]);

      // attempt 2 fails at +200: delay doubles (200 ms)
      const second = [...afterFirst, taskStarted(0, 2, 'a2', 150)];
      spec.given(second).when(failTask(0, 'a2', 200)).then([attemptFailed(0, 'a2', 2, 400)]);

      // attempt 3 of 3 fails: exhausted
      const third = [...second, attemptFailed(0, 'a2', 2, 400), taskStarted(0, 3, 'a3', 400)];
      spec
        .given(third)
        .when(failTask(0, 'a3', 450))
        .thenState((state, events) => {
          expect(events).toEqual([
            attemptFailed(0, 'a3', 3, null),
            { type: 'TaskFailed', data: { seq: 0, attempts: 3, error: { message: 'boom' } } },
          ]);
          expect(claimableTasks(state, T0 + 100_000)).toEqual([]);
          expect(decisionClaimable(state, T0 + 450)).toBe(true);
        });
    });

    it('cap the backoff at maxDelay', () => {
      const policy: RetryPolicy = { maxAttempts: 10, initialDelayMs: 100, backoffFactor: 2, maxDelayMs: 300 };
      const history: WorkflowEvent[] = [...runningTask.slice(0, 4)];
      const started = (attempt: number, ms: number): WorkflowEvent => {
        const e = taskStarted(0, attempt, `a${attempt}`, ms);
        return { ...e, data: { ...e.data, retryPolicy: policy } } as WorkflowEvent;
      };
      history.push(started(1, 0), attemptFailed(0, 'a1', 1, 100), started(2, 100), attemptFailed(0, 'a2', 2, 300), started(3, 300));
      spec.given(history).when(failTask(0, 'a3', 300)).then([attemptFailed(0, 'a3', 3, 600)]); // 100·2² = 400 → 300
    });

    it('stop at once on a non-retryable error', () => {
      spec
        .given(runningTask)
        .when(failTask(0, 'a1', 50, { message: 'no such user', nonRetryable: true }))
        .then([
          {
            type: 'TaskAttemptFailed',
            data: { seq: 0, attemptId: 'a1', attempt: 1, reason: 'error', error: { message: 'no such user', nonRetryable: true }, retryAt: null },
          },
          { type: 'TaskFailed', data: { seq: 0, attempts: 1, error: { message: 'no such user', nonRetryable: true } } },
        ]);
    });

    it('wait the delay a RetryableError asks for instead of the backoff', () => {
      spec
        .given(runningTask)
        .when(failTask(0, 'a1', 50, { message: 'rate limited', retryAfterMs: 5000 }))
        .thenMatches([{ type: 'TaskAttemptFailed', data: { retryAt: at(5050) } }]);
    });

    it('fail when their lease lapses (Tick), and are retried', () => {
      expect(nextDueAt(stateOf(runningTask), T0 + 10)).toBe(T0 + 10 + LEASE);
      spec.given(runningTask).when({ type: 'Tick', now: T0 + 10 + LEASE - 1 }).thenNothingHappens();
      spec
        .given(runningTask)
        .when({ type: 'Tick', now: T0 + 10 + LEASE })
        .then([
          {
            type: 'TaskAttemptFailed',
            data: {
              seq: 0,
              attemptId: 'a1',
              attempt: 1,
              reason: 'lease_expired',
              error: { message: 'attempt 1 lost its lease (no heartbeat from worker w1)', name: 'LeaseExpiredError' },
              retryAt: at(10 + LEASE + 100),
            },
          },
        ]);
    });

    it('keep their lease with heartbeats (recorded once less than half of it is left)', () => {
      spec.given(runningTask).when({ type: 'HeartbeatTask', seq: 0, attemptId: 'a1', now: T0 + 400, leaseMs: LEASE }).thenNothingHappens();
      spec
        .given(runningTask)
        .when({ type: 'HeartbeatTask', seq: 0, attemptId: 'a1', now: T0 + 700, leaseMs: LEASE })
        .thenState((state, events) => {
          expect(events).toEqual([{ type: 'TaskLeaseExtended', data: { seq: 0, attemptId: 'a1', leaseExpiresAt: at(1700) } }]);
          expect(nextDueAt(state, T0 + 700)).toBe(T0 + 1700);
        });
      spec.given(runningTask).when({ type: 'HeartbeatTask', seq: 0, attemptId: 'stale', now: T0 + 700, leaseMs: LEASE }).thenNothingHappens();
    });

    it('time out at their start-to-close deadline, which heartbeats cannot extend', () => {
      const scheduledOnly = runningTask.slice(0, 4);
      spec.given(scheduledOnly).when(startTask(0, 'a1', 10, 300)).then([taskStarted(0, 1, 'a1', 10, 310)]);
      const timed = [...scheduledOnly, taskStarted(0, 1, 'a1', 10, 310)];
      spec.given(timed).when({ type: 'HeartbeatTask', seq: 0, attemptId: 'a1', now: T0 + 200, leaseMs: LEASE }).thenNothingHappens();
      spec
        .given(timed)
        .when({ type: 'Tick', now: T0 + 310 })
        .thenMatches([
          {
            type: 'TaskAttemptFailed',
            data: { attemptId: 'a1', reason: 'timeout', error: { name: 'TimeoutError', message: 'attempt 1 exceeded its start-to-close timeout' }, retryAt: at(410) },
          },
        ]);
    });
  });

  describe('timers, children and controls', () => {
    it('fire timers when due (Tick) and queue a decision', () => {
      expect(nextDueAt(stateOf(sleeping), T0)).toBe(T0 + 500);
      spec.given(sleeping).when({ type: 'Tick', now: T0 + 499 }).thenNothingHappens();
      spec
        .given(sleeping)
        .when({ type: 'Tick', now: T0 + 500 })
        .thenState((state, events) => {
          expect(events).toEqual([{ type: 'TimerFired', data: { seq: 0 } }]);
          expect(decisionClaimable(state, T0 + 500)).toBe(true);
        });
    });

    it('cancel a started timer only', () => {
      spec
        .given([...sleeping, decisionStarted('d2', 100)])
        .when({ type: 'CompleteDecision', decisionId: 'd2', commands: [{ type: 'CancelTimer', seq: 0 }], ids: {} })
        .thenState((state, events) => {
          expect(events[1]).toEqual({ type: 'TimerCanceled', data: { seq: 0 } });
          expect(nextDueAt(state, T0 + 100)).toBeUndefined();
        });
      spec
        .given([...sleeping, { type: 'TimerFired', data: { seq: 0 } }, decisionStarted('d2', 600)])
        .when({ type: 'CompleteDecision', decisionId: 'd2', commands: [{ type: 'CancelTimer', seq: 0 }], ids: {} })
        .then([decisionCompleted('d2', [{ type: 'CancelTimer', seq: 0 }])]);
    });

    it('cancel a timer started by the same decision', () => {
      spec
        .given([dispatched, decisionStarted('d1')])
        .when({ type: 'CompleteDecision', decisionId: 'd1', commands: [{ type: 'StartTimer', seq: 0, fireAt: at(500) }, { type: 'CancelTimer', seq: 0 }], ids: {} })
        .thenState((state, events) => {
          expect(events.slice(1)).toEqual([
            { type: 'TimerStarted', data: { seq: 0, fireAt: at(500) } },
            { type: 'TimerCanceled', data: { seq: 0 } },
          ]);
          expect(nextDueAt(state, T0)).toBeUndefined();
        });
    });

    const withChild: WorkflowEvent[] = [
      dispatched,
      decisionStarted('d1'),
      decisionCompleted('d1', [{ type: 'StartChildWorkflow', seq: 0, name: 'Child', args: [], tag: 't', wait: true }]),
      { type: 'ChildWorkflowStarted', data: { seq: 0, childId: 'c1', name: 'Child', args: [], tag: 't', wait: true } },
    ];

    it("resolve a child call once, with the child's outcome, and queue a decision", () => {
      spec
        .given(withChild)
        .when({ type: 'ResolveChild', seq: 0, childId: 'c1', outcome: { ok: true, result: 7 } })
        .thenState((state, events) => {
          expect(events).toEqual([{ type: 'ChildWorkflowCompleted', data: { seq: 0, childId: 'c1', result: 7 } }]);
          expect(decisionClaimable(state, T0)).toBe(true);
        });
      spec
        .given(withChild)
        .when({ type: 'ResolveChild', seq: 0, childId: 'c1', outcome: { ok: false, error: { message: 'child failed' } } })
        .then([{ type: 'ChildWorkflowFailed', data: { seq: 0, childId: 'c1', error: { message: 'child failed' } } }]);
      spec.given(withChild).when({ type: 'ResolveChild', seq: 0, childId: 'other', outcome: { ok: true, result: 7 } }).thenNothingHappens();
      spec
        .given([...withChild, { type: 'ChildWorkflowCompleted', data: { seq: 0, childId: 'c1', result: 7 } }])
        .when({ type: 'ResolveChild', seq: 0, childId: 'c1', outcome: { ok: true, result: 8 } })
        .thenNothingHappens();
    });

    it('record how many workflows a control matched and changed', () => {
      spec
        .given([dispatched])
        .when({ type: 'RecordControlApplied', seq: 3, matched: 2, changed: 1 })
        .then([{ type: 'ControlApplied', data: { seq: 3, matched: 2, changed: 1 } }]);
    });
  });

  it('continues a run of 200,000 tasks as new, numbering the next run after all of them', () => {
    const n = 200_000;
    const scheduled = Array.from({ length: n }, (_, seq) => taskScheduled(seq));
    spec
      .given([dispatched, decisionStarted('d1'), decisionCompleted('d1'), ...scheduled, decisionStarted('d2', 10)])
      .when({ type: 'CompleteDecision', decisionId: 'd2', commands: [{ type: 'ContinueAsNew', seq: 7, args: ['next'], at: at(10) }], ids: {} })
      .thenMatches([{ type: 'DecisionCompleted' }, { type: 'WorkflowContinuedAsNew', data: { run: 2, seqBase: n, input: ['next'] } }]);
  });

  it('names, when it continues as new, the children the old run awaited that still run, and only those', () => {
    const child = (seq: number, childId: string, wait: boolean): WorkflowEvent => ({ type: 'ChildWorkflowStarted', data: { seq, childId, name: 'Child', args: [], tag: null, wait } });
    const started = [child(0, 'awaited-running', true), child(1, 'awaited-done', true), child(2, 'dispatched', false), child(3, 'awaited-failed', true)];
    const resolved: WorkflowEvent[] = [
      { type: 'ChildWorkflowCompleted', data: { seq: 1, childId: 'awaited-done', result: 1 } },
      { type: 'ChildWorkflowFailed', data: { seq: 3, childId: 'awaited-failed', error: { message: 'no' } } },
    ];
    const continueAsNew: WorkflowCommand = { type: 'CompleteDecision', decisionId: 'd2', commands: [{ type: 'ContinueAsNew', seq: 4, args: [], at: at(10) }], ids: {} };
    spec
      .given([dispatched, decisionStarted('d1'), decisionCompleted('d1'), ...started, ...resolved, decisionStarted('d2', 10)])
      .when(continueAsNew)
      .thenMatches([{ type: 'DecisionCompleted' }, { type: 'WorkflowContinuedAsNew', data: { seqBase: 5, awaitedChildren: ['awaited-running'] } }]);
    // None left running: an empty list (this run's end is one that ends them), and the new run says so.
    spec
      .given([dispatched, decisionStarted('d1'), decisionCompleted('d1'), child(2, 'dispatched', false), decisionStarted('d2', 10)])
      .when(continueAsNew)
      .thenState((state, events) => {
        expect(events[1]).toMatchObject({ data: { awaitedChildren: [], childrenEndedFrom: 0 } });
        expect(state).toMatchObject({ run: 2, childrenEndedFrom: 0 });
      });
    // A continue-as-new recorded before the field existed left the old run's children running: its run does not say so.
    const before = { type: 'WorkflowContinuedAsNew', data: { ...(dispatched.data as object), run: 2, seqBase: 5, version: null } } as WorkflowEvent;
    const startedBefore = [dispatched, decisionStarted('d1'), decisionCompleted('d1'), ...started, before];
    expect(stateOf(startedBefore)).not.toHaveProperty('childrenEndedFrom');
    // The run it started lists its own children when it continues as new: ended from that run's first call on, not before.
    spec
      .given([...startedBefore, decisionStarted('d2', 20)])
      .when({ type: 'CompleteDecision', decisionId: 'd2', commands: [{ type: 'ContinueAsNew', seq: 5, args: [], at: at(20) }], ids: {} })
      .thenState((state, events) => {
        expect(events[1]).toMatchObject({ data: { run: 3, seqBase: 6, awaitedChildren: [], childrenEndedFrom: 5 } });
        expect(state).toMatchObject({ run: 3, childrenEndedFrom: 5 });
      });
    // And the runs after keep where it started; one that listed children without saying from where (the version before) is taken as from the start.
    const listed = (childrenEndedFrom?: number) =>
      ({ type: 'WorkflowContinuedAsNew', data: { ...(dispatched.data as object), run: 3, seqBase: 8, version: null, awaitedChildren: [] as string[], ...(childrenEndedFrom === undefined ? {} : { childrenEndedFrom }) } }) as WorkflowEvent;
    spec
      .given([listed(5), decisionStarted('d3', 30)])
      .when({ type: 'CompleteDecision', decisionId: 'd3', commands: [{ type: 'ContinueAsNew', seq: 8, args: [], at: at(30) }], ids: {} })
      .thenMatches([{ type: 'DecisionCompleted' }, { type: 'WorkflowContinuedAsNew', data: { run: 4, seqBase: 9, childrenEndedFrom: 5 } }]);
    expect(stateOf([listed(undefined)])).toMatchObject({ childrenEndedFrom: 0 });
  });

  it('discards a decision reported after its workflow was paused: nothing of it applies, and it is made again after resume', () => {
    const commands: DecisionCommand[] = [
      { type: 'ScheduleTask', seq: 0, name: 'sendEmail', args: [] },
      { type: 'StartChildWorkflow', seq: 1, name: 'Child', args: [], tag: null, wait: false },
      { type: 'CompleteWorkflow', result: 'done' },
    ];
    const paused: WorkflowEvent[] = [dispatched, decisionStarted('d1'), { type: 'WorkflowPaused', data: {} }];
    spec
      .given(paused)
      .when({ type: 'CompleteDecision', decisionId: 'd1', commands, ids: { 1: 'child-1' } })
      .thenMatches([{ type: 'DecisionDiscarded', data: { decisionId: 'd1' } }]);
    const discarded = [...paused, { type: 'DecisionDiscarded', data: { decisionId: 'd1', reason: 'paused' } } as WorkflowEvent];
    spec.given(discarded).when({ type: 'StartDecision', decisionId: 'd2', workerId: 'w1', workflows: ['Onboarding'], now: T0 + 10, leaseMs: LEASE }).thenThrows(ConflictError);
    spec
      .given([...discarded, { type: 'WorkflowResumed', data: {} }])
      .when({ type: 'StartDecision', decisionId: 'd2', workerId: 'w1', workflows: ['Onboarding'], now: T0 + 20, leaseMs: LEASE })
      .thenMatches([{ type: 'DecisionStarted', data: { decisionId: 'd2' } }]);
  });

  it('carries into the new run the events its code never took (stored once, with their causes), and makes a decision that continues as new again when events arrived while it ran', () => {
    const received = (name: string, data: Json[], causeId?: string): WorkflowEvent => ({
      type: 'WorkflowEventReceived',
      data: causeId === undefined ? { name, data } : { name, data, causeId },
    });
    // Events arrived while the decision ran: its code never saw them, so it is made again with them.
    spec
      .given([dispatched, received('seen', [0]), decisionStarted('d1'), received('item', [1]), received('item', [2], 'cause-2')])
      .when({ type: 'CompleteDecision', decisionId: 'd1', commands: [{ type: 'ContinueAsNew', seq: 0, args: ['next'], at: at(10) }], ids: {} })
      .thenMatches([{ type: 'DecisionDiscarded', data: { decisionId: 'd1' } }]);
    spec
      .given([dispatched, decisionStarted('d1'), received('item', [1]), { type: 'DecisionDiscarded', data: { decisionId: 'd1', reason: 'events' } }])
      .when({ type: 'StartDecision', decisionId: 'd2', workerId: 'w1', workflows: ['Onboarding'], now: T0 + 10, leaseMs: LEASE })
      .thenMatches([{ type: 'DecisionStarted', data: { decisionId: 'd2' } }]);
    // Events the code saw but never took go to the new run, in order, with their causes; the
    // recorded decision leaves them out.
    spec
      .given([dispatched, received('seen', [0]), received('also', [1], 'cause-1'), decisionStarted('d1')])
      .when({
        type: 'CompleteDecision',
        decisionId: 'd1',
        commands: [{ type: 'ContinueAsNew', seq: 0, args: [], at: at(10), events: [{ name: 'seen', data: [0] }, { name: 'also', data: [1], causeId: 'cause-1' }] }],
        ids: {},
      })
      .thenMatches([
        { type: 'DecisionCompleted', data: { commands: [{ type: 'ContinueAsNew', seq: 0, args: [], at: at(10) }] } },
        { type: 'WorkflowContinuedAsNew' },
        { type: 'WorkflowEventReceived', data: { name: 'seen', data: [0] } },
        { type: 'WorkflowEventReceived', data: { name: 'also', data: [1], causeId: 'cause-1' } },
      ]);
    spec
      .given([dispatched, received('seen', [0]), decisionStarted('d1')])
      .when({ type: 'CompleteDecision', decisionId: 'd1', commands: [{ type: 'ContinueAsNew', seq: 0, args: [], at: at(10), events: [{ name: 'seen', data: [0] }] }], ids: {} })
      .thenState((_, events) => expect((events[0].data as { commands: object[] }).commands[0]).not.toHaveProperty('events'));
    // A decision that failed or lapsed is followed by one that sees those events: nothing to carry.
    spec
      .given([dispatched, decisionStarted('d1'), received('item', [1]), { type: 'DecisionTimedOut', data: { decisionId: 'd1' } }, decisionStarted('d2', 2000)])
      .when({ type: 'CompleteDecision', decisionId: 'd2', commands: [{ type: 'ContinueAsNew', seq: 0, args: ['next'], at: at(2000) }], ids: {} })
      .thenMatches([{ type: 'DecisionCompleted' }, { type: 'WorkflowContinuedAsNew' }]);
  });
});

describe('pickVersion', () => {
  it('compares versions as numbers', () => {
    expect(pickVersion('Onboarding', ['Onboarding_v2', 'Onboarding_v10'])).toBe('Onboarding_v10');
    expect(pickVersion('Onboarding', ['Onboarding_v10', 'Onboarding_v9'])).toBe('Onboarding_v10');
    expect(pickVersion('Report', ['Report_v20200120010000000001', 'Report_v20200120010000000002', 'Report_v9'])).toBe('Report_v20200120010000000002');
  });

  it('prefers any Name_vN to the bare Name, and falls back to the bare Name', () => {
    expect(pickVersion('Onboarding', ['Onboarding', 'Onboarding_v1'])).toBe('Onboarding_v1');
    expect(pickVersion('Onboarding', ['Onboarding'])).toBe('Onboarding');
  });

  it('runs a pinned version only when it is offered', () => {
    expect(pickVersion('Onboarding_v2', ['Onboarding_v2', 'Onboarding_v3'])).toBe('Onboarding_v2');
    expect(pickVersion('Onboarding_v2', ['Onboarding_v3'])).toBeNull();
  });

  it('ignores other workflows, including those whose name starts the same', () => {
    expect(pickVersion('Onboarding', ['OnboardingX_v3', 'Billing_v9'])).toBeNull();
    expect(pickVersion('Onboarding', ['OnboardingX_v3', 'Onboarding_v1'])).toBe('Onboarding_v1');
  });

  it('baseName strips the version suffix only', () => {
    expect(baseName('Onboarding_v12')).toBe('Onboarding');
    expect(baseName('Onboarding')).toBe('Onboarding');
    expect(baseName('My_vacation')).toBe('My_vacation');
  });
});

describe('CompleteTaskAndDecide (a worker\'s next decision, reported with the task result it follows)', () => {
  // d1 scheduled task 0; worker w1 ran it (attempt a1) and made the next decision itself.
  const running = [dispatched, decisionStarted('d1'), decisionCompleted('d1', [{ type: 'ScheduleTask', seq: 0, name: 'sendEmail', args: [0] }]), taskScheduled(0), taskStarted(0, 1, 'a1', 10)];
  const next = (overrides: Record<string, unknown> = {}) => ({
    basisDecisionId: 'd1',
    decisionId: 'd2',
    workerId: 'w1',
    version: 'Onboarding',
    now: T0 + 20,
    leaseMs: LEASE,
    commands: [{ type: 'ScheduleTask', seq: 1, name: 'sendEmail', args: [1] }] as DecisionCommand[],
    ids: {},
    ...overrides,
  });
  const report = (overrides: Record<string, unknown> = {}): WorkflowCommand => ({ type: 'CompleteTaskAndDecide', seq: 0, attemptId: 'a1', result: 'sent', next: next(overrides) });
  const resultAlone: WorkflowEvent[] = [{ type: 'TaskCompleted', data: { seq: 0, attemptId: 'a1', result: 'sent' } }];

  it('records the result, the decision (at the worker\'s clock) and its commands in one decision when nothing else happened since the basis', () => {
    spec
      .given(running)
      .when(report())
      .then([
        ...resultAlone,
        { type: 'DecisionStarted', data: { decisionId: 'd2', workerId: 'w1', version: 'Onboarding', startedAt: at(20), leaseExpiresAt: at(20 + LEASE) } },
        { type: 'DecisionCompleted', data: { decisionId: 'd2', commands: next().commands } },
        taskScheduled(1),
      ]);
    spec.given(running).when(report()).thenState((state) => {
      expect(state.status === 'running' && state.needsDecision).toBe(false);
      expect(state.status === 'running' && state.completedDecisionId).toBe('d2');
      expect(decisionClaimable(state, T0 + 30)).toBe(false);
    });
  });

  it('records the result alone when the code has not seen something that happened since (an event), so the decision is made as usual', () => {
    const event: WorkflowEvent = { type: 'WorkflowEventReceived', data: { name: 'cancel', data: [] } };
    spec.given([...running, event]).when(report()).then(resultAlone);
    spec.given([...running, event]).when(report()).thenState((state) => expect(decisionClaimable(state, T0 + 30)).toBe(true));
  });

  it('records the result alone when the basis is not the last decision, was made by another worker, is not completed, the version differs, or the clock is before the basis decision\'s', () => {
    spec.given(running).when(report({ basisDecisionId: 'd0' })).then(resultAlone);
    spec.given(running).when(report({ workerId: 'w2' })).then(resultAlone);
    spec.given(running).when(report({ version: 'Onboarding_v2' })).then(resultAlone);
    // A clock before the basis decision's (ctx.now() would run backwards).
    spec.given(running).when(report({ now: T0 - 1 })).then(resultAlone);
    // d2 (made for an event) is still in progress: no decision may be recorded over it.
    const inProgress = [...running, { type: 'WorkflowEventReceived', data: { name: 'cancel', data: [] } } as WorkflowEvent, decisionStarted('d2', 15)];
    spec.given(inProgress).when(report({ basisDecisionId: 'd2', decisionId: 'd3' })).then(resultAlone);
  });

  it('records the result alone when the decider refuses the commands (a call of an earlier run), and nothing for a repeated or stale report', () => {
    const continued: WorkflowEvent = {
      type: 'WorkflowContinuedAsNew',
      data: { ...(dispatched.data as never as object), run: 2, seqBase: 5, version: 'Onboarding' } as never,
    };
    const secondRun = [continued, decisionStarted('d1'), decisionCompleted('d1', [{ type: 'ScheduleTask', seq: 5, name: 'sendEmail', args: [5] }]), taskScheduled(5), taskStarted(5, 1, 'a1', 10)];
    spec
      .given(secondRun)
      .when({ type: 'CompleteTaskAndDecide', seq: 5, attemptId: 'a1', result: 'sent', next: next({ commands: [{ type: 'ScheduleTask', seq: 1, name: 'x', args: [] }] }) })
      .then([{ type: 'TaskCompleted', data: { seq: 5, attemptId: 'a1', result: 'sent' } }]);
    spec.given([...running, ...resultAlone]).when(report()).thenNothingHappens();
    spec.given(running).when({ ...report(), attemptId: 'a0' } as WorkflowCommand).thenThrows(NotFoundError, 'task attempt a0 not found');
  });

  it('leaves an opportunistic claim behind it nothing to claim, without an error (StartDecision ifPending)', () => {
    const events = workflowDecider.decide(report(), spec.given(running).state());
    const claim: WorkflowCommand = { type: 'StartDecision', decisionId: 'd3', workerId: 'w1', workflows: ['Onboarding'], now: T0 + 30, leaseMs: LEASE };
    spec.given([...running, ...events]).when({ ...claim, ifPending: true } as WorkflowCommand).thenNothingHappens();
    spec.given([...running, ...events]).when(claim).thenThrows(ConflictError, 'no decision is pending');
  });

  it('records no decision for a paused workflow (the result still counts)', () => {
    spec.given([...running, { type: 'WorkflowPaused', data: {} }]).when(report()).then(resultAlone);
  });
});
