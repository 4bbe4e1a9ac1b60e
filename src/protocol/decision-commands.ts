/**
 * The worker protocol's shapes, defined once and compiled into both the server and the SDK
 * (CONVENTIONS.md, "One wire contract"). Nothing here imports from either side.
 */
import { createHash } from 'node:crypto';

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Picks workflows: by id (optionally with the name it must have), by name, or by name and tag. */
export type Selector =
  | {
      /** One workflow, by id (none is picked when the app and environment have no such workflow). */
      id: string;
      /** If given, the workflow of that id must have this name (or be one of its `_vN` versions). */
      name?: string;
    }
  | {
      /** Every running or paused workflow of this name. */
      name: string;
      /** Only those of this tag. */
      tag?: string;
    };

/** Longest error message the service records from a worker (a task's, a step's or a workflow's error, a failed decision's message), in characters. */
export const MAX_ERROR_MESSAGE_LENGTH = 16_384;
/** Longest error name the service records from a worker, in characters. */
export const MAX_ERROR_NAME_LENGTH = 256;

/** How a task or workflow failed, as reported by a worker. */
export interface TaskErrorShape {
  message: string;
  name?: string;
  nonRetryable?: boolean;
  retryAfterMs?: number;
}

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
  | {
      type: 'CreateSchedule';
      seq: number;
      kind: 'workflow' | 'task';
      name: string;
      args: Json[];
      cron: string;
      timezone: string | null;
      tag: string | null;
    }
  /**
   * A step the worker ran inline during this decision (`ctx.step`), with its outcome: `result`
   * when it returned, `error` when it threw. With neither, the step's outcome is already in the
   * history (a decision replayed after a retry) and nothing new is recorded.
   */
  | { type: 'RecordStep'; seq: number; name: string; result?: Json; error?: TaskErrorShape }
  | { type: 'CompleteWorkflow'; result: Json }
  | { type: 'FailWorkflow'; error: TaskErrorShape }
  /**
   * Ends this run and starts a fresh one under the same id with `args` (`at` is the decision's
   * time). `events`: events this run received and its code never took (no `waitForEvent` or
   * `onEvent` asked for them), recorded again at the start of the new run, in order, each with
   * the `causeId` it was received with (a repeated delivery of the same cause is still known).
   * The recorded `DecisionCompleted` leaves them out (they are stored once, in the new run).
   */
  | { type: 'ContinueAsNew'; seq: number; args: Json[]; at: string; events?: Array<{ name: string; data: Json[]; causeId?: string }> };

export const DECISION_COMMAND_TYPES = [
  'ScheduleTask',
  'StartTimer',
  'CancelTimer',
  'StartChildWorkflow',
  'DispatchTask',
  'ControlWorkflows',
  'CreateSchedule',
  'RecordStep',
  'CompleteWorkflow',
  'FailWorkflow',
  'ContinueAsNew',
] as const satisfies ReadonlyArray<DecisionCommand['type']>;

/** One event of a workflow's history, as the server sends it with a decision. */
export interface HistoryEvent {
  /** Index of the event in the workflow's history (its stream), from 0. */
  revision: number;
  /** Event type, e.g. `WorkflowDispatched`, `DecisionStarted`, `TaskCompleted`, `WorkflowEventReceived`. */
  type: string;
  /** The event's data, parsed from JSON; its shape depends on `type`. */
  data: any;
}

/**
 * The id of what call `seq` of a workflow starts (a child workflow, a task, a schedule): derived,
 * so the worker knows it when the call is made and a repeated decision starts nothing twice.
 */
export function callId(workflowId: string, seq: number): string {
  return derivedUuid(workflowId, String(seq));
}

/**
 * A UUID derived from its parts (SHA-256, version 8): the same parts always give the same id,
 * which is what makes a repeated dispatch, firing or delivery idempotent.
 */
export function derivedUuid(...parts: string[]): string {
  const bytes = createHash('sha256').update(parts.join('\u0000')).digest().subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x80;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
