import { Json } from '../../event-store/event-store.port.js';
import { Decider } from '../../shared/decider.js';
import { ConflictError, NotFoundError } from '../../shared/errors.js';
import {
  AttemptEvent,
  AttemptState,
  RetryPolicy,
  TaskError,
  attemptDueAt,
  decideComplete,
  decideExpiry,
  decideFail,
  decideRelease,
  decideHeartbeat,
  decideStart,
  evolveAttempt,
  initialAttemptState,
  retriedAttemptState,
  iso,
} from './task-attempts.js';

/** A standalone task: `dispatchTask`, a schedule, or a workflow's fire-and-forget `ctx.dispatch`. */
export interface TaskDispatchedData {
  taskId: string;
  appId: string;
  environment: string;
  name: string;
  args: Json[];
  /** Free label given at dispatch (absent on tasks recorded before tags existed). */
  tag?: string | null;
  scheduleId: string | null;
  parent: { workflowId: string; seq: number } | null;
  dispatchedAt: string;
}

export type TaskEvent =
  | { type: 'TaskDispatched'; data: TaskDispatchedData }
  /** A failed task gets a fresh round of attempts (retryTask); attempts count from 1 again. */
  | { type: 'TaskRetried'; data: { previousAttempts: number; retriedAt: string } }
  | AttemptEvent;

export type TaskState =
  | { status: 'none' }
  | { status: 'exists'; taskId: string; appId: string; environment: string; name: string; args: Json[]; attempt: AttemptState };

export type TaskCommand =
  | { type: 'DispatchTask'; taskId: string; appId: string; environment: string; name: string; args: Json[]; tag?: string | null; scheduleId?: string | null; parent?: { workflowId: string; seq: number } | null; now: number }
  | { type: 'StartTask'; attemptId: string; workerId: string; pollId?: string; now: number; leaseMs: number; retryPolicy: RetryPolicy; timeoutMs: number | null }
  | { type: 'HeartbeatTask'; attemptId: string; now: number; leaseMs: number }
  | { type: 'CompleteTask'; attemptId: string; result: Json }
  | { type: 'FailTask'; attemptId: string; error: TaskError; now: number }
  | { type: 'ReleaseTask'; attemptId: string; now: number }
  | { type: 'Tick'; now: number }
  | { type: 'RetryTask'; now: number };

export const TASK_EVENT_TYPES = ['TaskDispatched', 'TaskRetried'] as const;

export const taskDecider: Decider<TaskCommand, TaskEvent, TaskState> = {
  initialState: () => ({ status: 'none' }),

  decide(command, state) {
    if (command.type === 'DispatchTask') {
      if (state.status !== 'none') return [];
      return [
        {
          type: 'TaskDispatched',
          data: {
            taskId: command.taskId,
            appId: command.appId,
            environment: command.environment,
            name: command.name,
            args: command.args,
            ...(command.tag != null ? { tag: command.tag } : {}),
            scheduleId: command.scheduleId ?? null,
            parent: command.parent ?? null,
            dispatchedAt: iso(command.now),
          },
        },
      ];
    }
    if (state.status === 'none') throw new NotFoundError('task', 'in this stream');
    switch (command.type) {
      case 'StartTask':
        return decideStart(state.attempt, command);
      case 'HeartbeatTask':
        return decideHeartbeat(state.attempt, command);
      case 'CompleteTask':
        return decideComplete(state.attempt, command);
      case 'FailTask':
        return decideFail(state.attempt, command);
      case 'ReleaseTask':
        return decideRelease(state.attempt, command);
      case 'Tick':
        return decideExpiry(state.attempt, command.now);
      case 'RetryTask':
        if (state.attempt.status !== 'failed') throw new ConflictError(`task ${state.taskId} is ${state.attempt.status}; only a failed task can be retried`);
        return [{ type: 'TaskRetried', data: { previousAttempts: state.attempt.attempts, retriedAt: iso(command.now) } }];
    }
  },

  evolve(state, event) {
    if (event.type === 'TaskDispatched') {
      return { status: 'exists', ...event.data, attempt: initialAttemptState() };
    }
    if (state.status === 'none') return state;
    if (event.type === 'TaskRetried') return { ...state, attempt: retriedAttemptState(state.attempt) };
    return { ...state, attempt: evolveAttempt(state.attempt, event) };
  },
};

export function taskNextDueAt(state: TaskState, now: number): number | undefined {
  if (state.status === 'none') return undefined;
  const lease = attemptDueAt(state.attempt);
  if (lease !== undefined) return lease;
  return state.attempt.status === 'pending' && state.attempt.readyAt > now ? state.attempt.readyAt : undefined;
}
