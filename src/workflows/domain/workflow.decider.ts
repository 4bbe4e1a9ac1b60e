import { Json } from '../../event-store/event-store.port.js';
import { BadUserInputError, ConflictError, NotFoundError } from '../../shared/errors.js';
import { Decider } from '../../shared/decider.js';
import {
  AttemptEvent,
  AttemptEventData,
  AttemptState,
  RetryPolicy,
  TaskError,
  attemptDueAt,
  decideComplete,
  decideExpiry,
  decideFail,
  decideHeartbeat,
  decideStart,
  evolveAttempt,
  initialAttemptState,
  iso,
} from '../../tasks/domain/task-attempts.js';
import { DecisionCommand, Selector } from './workflow-commands.js';

type WithSeq<T> = { [K in keyof T]: T[K] & { seq: number } };

export interface WorkflowEventData extends WithSeq<AttemptEventData> {
  WorkflowDispatched: {
    workflowId: string;
    appId: string;
    environment: string;
    name: string;
    tag: string | null;
    input: Json[];
    parent: { workflowId: string; seq: number } | null;
    scheduleId: string | null;
    dispatchedAt: string;
  };
  DecisionStarted: { decisionId: string; workerId: string; version: string; startedAt: string; leaseExpiresAt: string };
  DecisionCompleted: { decisionId: string; commands: DecisionCommand[] };
  DecisionFailed: { decisionId: string; code: string; message: string; historyPosition: number | null; retryAt: string };
  DecisionTimedOut: { decisionId: string };
  TaskScheduled: { seq: number; name: string; args: Json[] };
  TimerStarted: { seq: number; fireAt: string };
  TimerFired: { seq: number };
  TimerCanceled: { seq: number };
  ChildWorkflowStarted: { seq: number; childId: string; name: string; args: Json[]; tag: string | null; wait: boolean };
  ChildWorkflowCompleted: { seq: number; childId: string; result: Json };
  ChildWorkflowFailed: { seq: number; childId: string; error: TaskError };
  TaskDispatchRequested: { seq: number; taskId: string; name: string; args: Json[] };
  ControlRequested: { seq: number; selector: Selector; action: string; event: { name: string; data: Json[] } | null };
  ControlApplied: { seq: number; matched: number; changed: number };
  WorkflowEventReceived: { name: string; data: Json[] };
  WorkflowPaused: Record<string, never>;
  WorkflowResumed: Record<string, never>;
  WorkflowTerminated: { reason: string | null };
  WorkflowCompleted: { result: Json };
  WorkflowFailed: { error: TaskError };
  /** A failed workflow is running again; the listed tasks (whose failure failed it) run again. */
  WorkflowRetried: { resetTasks: number[]; retriedAt: string };
}

export type WorkflowEventType = keyof WorkflowEventData;
export type WorkflowEvent = { [K in WorkflowEventType]: { type: K; data: WorkflowEventData[K] } }[WorkflowEventType];

export const WORKFLOW_EVENT_TYPES = [
  'WorkflowDispatched',
  'DecisionStarted',
  'DecisionCompleted',
  'DecisionFailed',
  'DecisionTimedOut',
  'TaskScheduled',
  'TaskStarted',
  'TaskLeaseExtended',
  'TaskCompleted',
  'TaskAttemptFailed',
  'TaskFailed',
  'TaskResultIgnored',
  'TimerStarted',
  'TimerFired',
  'TimerCanceled',
  'ChildWorkflowStarted',
  'ChildWorkflowCompleted',
  'ChildWorkflowFailed',
  'TaskDispatchRequested',
  'ControlRequested',
  'ControlApplied',
  'WorkflowEventReceived',
  'WorkflowPaused',
  'WorkflowResumed',
  'WorkflowTerminated',
  'WorkflowCompleted',
  'WorkflowFailed',
  'WorkflowRetried',
] as const satisfies ReadonlyArray<WorkflowEventType>;

export type WorkflowStatus = 'running' | 'paused' | 'completed' | 'failed' | 'terminated';
export const FINAL_STATUSES: ReadonlySet<WorkflowStatus> = new Set(['completed', 'failed', 'terminated']);

export interface WorkflowTask {
  name: string;
  args: Json[];
  attempt: AttemptState;
}

export type WorkflowState =
  | { status: 'none' }
  | {
      status: WorkflowStatus;
      id: string;
      appId: string;
      environment: string;
      name: string;
      tag: string | null;
      parent: { workflowId: string; seq: number } | null;
      /** The `Name_vN` the first decision chose; later decisions need a worker serving it. */
      version: string | null;
      /** Something happened that the workflow code has not yet seen. */
      needsDecision: boolean;
      decision: { id: string; workerId: string; leaseExpiresAt: number } | null;
      decisionFailures: number;
      decisionRetryAt: number;
      tasks: Record<number, WorkflowTask>;
      timers: Record<number, { fireAt: number; status: 'started' | 'fired' | 'canceled' }>;
      children: Record<number, { childId: string; status: 'started' | 'completed' | 'failed' }>;
    };

export type ExistingWorkflow = Exclude<WorkflowState, { status: 'none' }>;

export type WorkflowCommand =
  | {
      type: 'DispatchWorkflow';
      workflowId: string;
      appId: string;
      environment: string;
      name: string;
      tag: string | null;
      input: Json[];
      parent?: { workflowId: string; seq: number } | null;
      scheduleId?: string | null;
      now: number;
    }
  | { type: 'PauseWorkflow' }
  | { type: 'ResumeWorkflow' }
  | { type: 'TerminateWorkflow'; reason: string | null }
  | { type: 'DeliverEvent'; name: string; data: Json[] }
  | { type: 'StartDecision'; decisionId: string; workerId: string; workflows: string[]; now: number; leaseMs: number }
  | {
      type: 'CompleteDecision';
      decisionId: string;
      commands: DecisionCommand[];
      /** Ids for the children and tasks the commands start, keyed by sequence number. */
      ids: Record<number, string>;
    }
  | { type: 'FailDecision'; decisionId: string; code: string; message: string; historyPosition: number | null; now: number }
  | { type: 'Tick'; now: number }
  | {
      type: 'StartTask';
      seq: number;
      attemptId: string;
      workerId: string;
      now: number;
      leaseMs: number;
      retryPolicy: RetryPolicy;
      timeoutMs: number | null;
    }
  | { type: 'HeartbeatTask'; seq: number; attemptId: string; now: number; leaseMs: number }
  | { type: 'CompleteTask'; seq: number; attemptId: string; result: Json }
  | { type: 'FailTask'; seq: number; attemptId: string; error: TaskError; now: number }
  | { type: 'ResolveChild'; seq: number; childId: string; outcome: { ok: true; result: Json } | { ok: false; error: TaskError } }
  | { type: 'RecordControlApplied'; seq: number; matched: number; changed: number }
  /** `resetTasks`: the failed tasks the failing decision saw (see workflow-retry.ts); others stay failed. */
  | { type: 'RetryWorkflow'; resetTasks: number[]; now: number };

const MAX_DECISION_RETRY_MS = 60_000;

/** The version of `name` a worker serving `offered` runs: `Name_vN` with the highest N, or `Name`. */
export function pickVersion(name: string, offered: string[]): string | null {
  if (/_v\d+$/.test(name)) return offered.includes(name) ? name : null;
  let best: { version: string; n: number } | null = offered.includes(name) ? { version: name, n: 0 } : null;
  for (const candidate of offered) {
    const match = /^(.*)_v(\d+)$/.exec(candidate);
    if (match && match[1] === name && (best === null || Number(match[2]) > best.n)) {
      best = { version: candidate, n: Number(match[2]) };
    }
  }
  return best?.version ?? null;
}

/** The base name a workflow version serves (`Onboarding_v2` → `Onboarding`). */
export const baseName = (name: string): string => name.replace(/_v\d+$/, '');

export const workflowDecider: Decider<WorkflowCommand, WorkflowEvent, WorkflowState> = {
  initialState: () => ({ status: 'none' }),

  decide(command, state) {
    if (command.type === 'DispatchWorkflow') {
      if (state.status !== 'none') return [];
      return [
        {
          type: 'WorkflowDispatched',
          data: {
            workflowId: command.workflowId,
            appId: command.appId,
            environment: command.environment,
            name: command.name,
            tag: command.tag,
            input: command.input,
            parent: command.parent ?? null,
            scheduleId: command.scheduleId ?? null,
            dispatchedAt: iso(command.now),
          },
        },
      ];
    }
    if (state.status === 'none') throw new NotFoundError('workflow', 'in this stream');
    const final = FINAL_STATUSES.has(state.status);

    switch (command.type) {
      case 'PauseWorkflow':
        return state.status === 'running' ? [{ type: 'WorkflowPaused', data: {} }] : [];
      case 'ResumeWorkflow':
        return state.status === 'paused' ? [{ type: 'WorkflowResumed', data: {} }] : [];
      case 'TerminateWorkflow':
        return final ? [] : [{ type: 'WorkflowTerminated', data: { reason: command.reason } }];
      case 'DeliverEvent':
        return final ? [] : [{ type: 'WorkflowEventReceived', data: { name: command.name, data: command.data } }];

      case 'StartDecision': {
        if (!decisionClaimable(state, command.now)) throw new ConflictError('no decision is pending for this workflow');
        const version = state.version ?? pickVersion(state.name, command.workflows);
        if (version === null || !command.workflows.includes(version)) {
          throw new ConflictError(`worker does not serve workflow ${state.version ?? state.name}`);
        }
        return [
          {
            type: 'DecisionStarted',
            data: {
              decisionId: command.decisionId,
              workerId: command.workerId,
              version,
              startedAt: iso(command.now),
              leaseExpiresAt: iso(command.now + command.leaseMs),
            },
          },
        ];
      }

      case 'CompleteDecision': {
        if (state.decision?.id !== command.decisionId) {
          throw new ConflictError('decision is no longer current (its lease lapsed or the workflow ended)');
        }
        const completed: WorkflowEvent = {
          type: 'DecisionCompleted',
          data: { decisionId: command.decisionId, commands: command.commands },
        };
        if (final) return [completed];
        // Each command sees the effect of the ones before it (a timer started and cancelled in one decision).
        const events: WorkflowEvent[] = [completed];
        let current: WorkflowState = state;
        for (const c of command.commands) {
          for (const event of commandEvents(c, current as ExistingWorkflow, command.ids)) {
            events.push(event);
            current = workflowDecider.evolve(current, event);
          }
        }
        return events;
      }

      case 'FailDecision': {
        if (state.decision?.id !== command.decisionId) return [];
        const delay = Math.min(1000 * 2 ** state.decisionFailures, MAX_DECISION_RETRY_MS);
        return [
          {
            type: 'DecisionFailed',
            data: {
              decisionId: command.decisionId,
              code: command.code,
              message: command.message,
              historyPosition: command.historyPosition,
              retryAt: iso(command.now + delay),
            },
          },
        ];
      }

      case 'Tick': {
        if (final) return [];
        const events: WorkflowEvent[] = [];
        if (state.decision && state.decision.leaseExpiresAt <= command.now) {
          events.push({ type: 'DecisionTimedOut', data: { decisionId: state.decision.id } });
        }
        for (const [seq, timer] of Object.entries(state.timers)) {
          if (timer.status === 'started' && timer.fireAt <= command.now) {
            events.push({ type: 'TimerFired', data: { seq: Number(seq) } });
          }
        }
        for (const [seq, task] of Object.entries(state.tasks)) {
          events.push(...withSeq(decideExpiry(task.attempt, command.now, Number(seq))));
        }
        return events;
      }

      case 'StartTask': {
        if (state.status !== 'running') throw new ConflictError(`workflow is ${state.status}; no task is dispatched`);
        const task = taskOf(state, command.seq);
        return withSeq(decideStart(task.attempt, command, command.seq));
      }
      case 'HeartbeatTask':
        if (final) return [];
        return withSeq(decideHeartbeat(taskOf(state, command.seq).attempt, command, command.seq));
      case 'CompleteTask':
        return withSeq(decideComplete(taskOf(state, command.seq).attempt, command, command.seq));
      case 'FailTask':
        return withSeq(decideFail(taskOf(state, command.seq).attempt, command, command.seq));

      case 'RecordControlApplied':
        return [{ type: 'ControlApplied', data: { seq: command.seq, matched: command.matched, changed: command.changed } }];

      case 'RetryWorkflow': {
        if (state.status !== 'failed') return [];
        const resetTasks = command.resetTasks.filter((seq) => state.tasks[seq]?.attempt.status === 'failed');
        return [{ type: 'WorkflowRetried', data: { resetTasks, retriedAt: iso(command.now) } }];
      }

      case 'ResolveChild': {
        const child = state.children[command.seq];
        if (!child || child.childId !== command.childId || child.status !== 'started') return [];
        return command.outcome.ok
          ? [{ type: 'ChildWorkflowCompleted', data: { seq: command.seq, childId: command.childId, result: command.outcome.result } }]
          : [{ type: 'ChildWorkflowFailed', data: { seq: command.seq, childId: command.childId, error: command.outcome.error } }];
      }
    }
  },

  evolve(state, event) {
    if (event.type === 'WorkflowDispatched') {
      return {
        status: 'running',
        id: event.data.workflowId,
        appId: event.data.appId,
        environment: event.data.environment,
        name: event.data.name,
        tag: event.data.tag,
        parent: event.data.parent,
        version: null,
        needsDecision: true,
        decision: null,
        decisionFailures: 0,
        decisionRetryAt: 0,
        tasks: {},
        timers: {},
        children: {},
      };
    }
    if (state.status === 'none') return state;
    switch (event.type) {
      case 'DecisionStarted':
        return {
          ...state,
          version: state.version ?? event.data.version,
          needsDecision: false,
          decision: { id: event.data.decisionId, workerId: event.data.workerId, leaseExpiresAt: Date.parse(event.data.leaseExpiresAt) },
        };
      case 'DecisionCompleted':
        return { ...state, decision: null, decisionFailures: 0 };
      case 'DecisionFailed':
        return {
          ...state,
          decision: null,
          needsDecision: true,
          decisionFailures: state.decisionFailures + 1,
          decisionRetryAt: Date.parse(event.data.retryAt),
        };
      case 'DecisionTimedOut':
        return { ...state, decision: null, needsDecision: true };
      case 'TaskScheduled':
        return {
          ...state,
          tasks: { ...state.tasks, [event.data.seq]: { name: event.data.name, args: event.data.args, attempt: initialAttemptState() } },
        };
      case 'TaskStarted':
      case 'TaskLeaseExtended':
      case 'TaskAttemptFailed':
      case 'TaskResultIgnored': {
        const task = state.tasks[event.data.seq];
        if (!task) return state;
        return { ...state, tasks: { ...state.tasks, [event.data.seq]: { ...task, attempt: evolveAttempt(task.attempt, event as AttemptEvent) } } };
      }
      case 'TaskCompleted':
      case 'TaskFailed': {
        const task = state.tasks[event.data.seq];
        if (!task) return state;
        return {
          ...state,
          needsDecision: true,
          tasks: { ...state.tasks, [event.data.seq]: { ...task, attempt: evolveAttempt(task.attempt, event as AttemptEvent) } },
        };
      }
      case 'TimerStarted':
        return { ...state, timers: { ...state.timers, [event.data.seq]: { fireAt: Date.parse(event.data.fireAt), status: 'started' } } };
      case 'TimerFired':
      case 'TimerCanceled': {
        const timer = state.timers[event.data.seq];
        if (!timer) return state;
        const fired = event.type === 'TimerFired';
        return {
          ...state,
          needsDecision: state.needsDecision || fired,
          timers: { ...state.timers, [event.data.seq]: { ...timer, status: fired ? 'fired' : 'canceled' } },
        };
      }
      case 'ChildWorkflowStarted':
        return { ...state, children: { ...state.children, [event.data.seq]: { childId: event.data.childId, status: 'started' } } };
      case 'ChildWorkflowCompleted':
      case 'ChildWorkflowFailed': {
        const child = state.children[event.data.seq];
        if (!child) return state;
        const status = event.type === 'ChildWorkflowCompleted' ? 'completed' : 'failed';
        return { ...state, needsDecision: true, children: { ...state.children, [event.data.seq]: { ...child, status } } };
      }
      case 'WorkflowEventReceived':
        return { ...state, needsDecision: true };
      case 'WorkflowPaused':
        return { ...state, status: 'paused' };
      case 'WorkflowResumed':
        return { ...state, status: 'running' };
      case 'WorkflowTerminated':
        return { ...state, status: 'terminated', needsDecision: false };
      case 'WorkflowCompleted':
        return { ...state, status: 'completed', needsDecision: false };
      case 'WorkflowFailed':
        return { ...state, status: 'failed', needsDecision: false };
      case 'WorkflowRetried': {
        const tasks = { ...state.tasks };
        for (const seq of event.data.resetTasks) if (tasks[seq]) tasks[seq] = { ...tasks[seq], attempt: initialAttemptState() };
        return { ...state, status: 'running', needsDecision: true, decision: null, decisionFailures: 0, decisionRetryAt: 0, tasks };
      }
      case 'TaskDispatchRequested':
      case 'ControlRequested':
      case 'ControlApplied':
        return state;
    }
  },
};

function commandEvents(command: DecisionCommand, state: ExistingWorkflow, ids: Record<number, string>): WorkflowEvent[] {
  switch (command.type) {
    case 'ScheduleTask':
      if (state.tasks[command.seq]) return [];
      return [{ type: 'TaskScheduled', data: { seq: command.seq, name: command.name, args: command.args } }];
    case 'StartTimer':
      if (state.timers[command.seq]) return [];
      return [{ type: 'TimerStarted', data: { seq: command.seq, fireAt: command.fireAt } }];
    case 'CancelTimer':
      return state.timers[command.seq]?.status === 'started' ? [{ type: 'TimerCanceled', data: { seq: command.seq } }] : [];
    case 'StartChildWorkflow':
      if (state.children[command.seq]) return [];
      return [
        {
          type: 'ChildWorkflowStarted',
          data: { seq: command.seq, childId: idFor(ids, command.seq), name: command.name, args: command.args, tag: command.tag ?? null, wait: command.wait },
        },
      ];
    case 'DispatchTask':
      return [{ type: 'TaskDispatchRequested', data: { seq: command.seq, taskId: idFor(ids, command.seq), name: command.name, args: command.args } }];
    case 'ControlWorkflows':
      return [
        {
          type: 'ControlRequested',
          data: { seq: command.seq, selector: command.selector, action: command.action, event: command.event ?? null },
        },
      ];
    case 'CompleteWorkflow':
      return [{ type: 'WorkflowCompleted', data: { result: command.result } }];
    case 'FailWorkflow':
      return [{ type: 'WorkflowFailed', data: { error: command.error } }];
  }
}

function idFor(ids: Record<number, string>, seq: number): string {
  const id = ids[seq];
  if (!id) throw new BadUserInputError('commands', `no id was prepared for call ${seq}`);
  return id;
}

function taskOf(state: ExistingWorkflow, seq: number): WorkflowTask {
  const task = state.tasks[seq];
  if (!task) throw new NotFoundError('task call', `#${seq}`);
  return task;
}

const withSeq = (events: AttemptEvent[]): WorkflowEvent[] => events as WorkflowEvent[];

export function decisionClaimable(state: WorkflowState, now: number): boolean {
  return state.status === 'running' && state.needsDecision && state.decision === null && state.decisionRetryAt <= now;
}

/** Sequence numbers of this workflow's tasks that a worker may claim now. */
export function claimableTasks(state: WorkflowState, now: number): number[] {
  if (state.status !== 'running') return [];
  const seqs: number[] = [];
  for (const [seq, task] of Object.entries(state.tasks)) {
    if (task.attempt.status === 'pending' && task.attempt.readyAt <= now) seqs.push(Number(seq));
  }
  return seqs;
}

/**
 * The next moment the clock must act on this workflow: a timer to fire, a lease to expire,
 * a retry or a failed decision to become claimable (readiness only while still ahead of `now`).
 * Undefined when nothing waits on time.
 */
export function nextDueAt(state: WorkflowState, now: number): number | undefined {
  if (state.status === 'none' || FINAL_STATUSES.has(state.status)) return undefined;
  let due: number | undefined;
  const consider = (t: number | undefined) => {
    if (t !== undefined && (due === undefined || t < due)) due = t;
  };
  consider(state.decision?.leaseExpiresAt);
  if (state.needsDecision && state.decision === null && state.decisionRetryAt > now) consider(state.decisionRetryAt);
  for (const timer of Object.values(state.timers)) if (timer.status === 'started') consider(timer.fireAt);
  for (const task of Object.values(state.tasks)) {
    consider(attemptDueAt(task.attempt));
    if (task.attempt.status === 'pending' && task.attempt.readyAt > now) consider(task.attempt.readyAt);
  }
  return due;
}

