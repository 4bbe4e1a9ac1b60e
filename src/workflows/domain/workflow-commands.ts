import { Json } from '../../event-store/event-store.port.js';
import { TaskError } from '../../tasks/domain/task-attempts.js';

/** Picks workflows: by id, by name, or by name and tag. */
export type Selector = { id: string } | { name: string; tag?: string };

/** The commands a worker's replay of workflow code returns when it completes a decision. */
export type DecisionCommand =
  | { type: 'ScheduleTask'; seq: number; name: string; args: Json[] }
  | { type: 'StartTimer'; seq: number; fireAt: string }
  | { type: 'CancelTimer'; seq: number }
  | { type: 'StartChildWorkflow'; seq: number; name: string; args: Json[]; tag?: string | null; wait: boolean }
  | { type: 'DispatchTask'; seq: number; name: string; args: Json[] }
  | {
      type: 'ControlWorkflows';
      seq: number;
      selector: Selector;
      action: 'send' | 'pause' | 'resume' | 'terminate';
      event?: { name: string; data: Json[] };
    }
  | { type: 'CompleteWorkflow'; result: Json }
  | { type: 'FailWorkflow'; error: TaskError }
  /** Ends this run and starts a fresh one under the same id with `args` (`at` is the decision's time). */
  | { type: 'ContinueAsNew'; seq: number; args: Json[]; at: string };

export const DECISION_COMMAND_TYPES = [
  'ScheduleTask',
  'StartTimer',
  'CancelTimer',
  'StartChildWorkflow',
  'DispatchTask',
  'ControlWorkflows',
  'CompleteWorkflow',
  'FailWorkflow',
  'ContinueAsNew',
] as const satisfies ReadonlyArray<DecisionCommand['type']>;
