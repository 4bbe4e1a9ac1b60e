import { DEFAULT_RETRY_POLICY, type RetryPolicyMs } from '../protocol/retry-policy.js';
import { type Duration, toMs } from './duration.js';
import type { WorkflowContext } from './workflow-context.js';

/** How a task is retried. */
export interface RetryPolicy {
  /**
   * Total attempts, the first included: a whole number from 1 to 1000.
   * @default 3
   */
  maxAttempts?: number;
  /**
   * Delay before the second attempt.
   * @default "1s"
   */
  initialDelay?: Duration;
  /**
   * Each further delay is the previous one times this factor (1 to 100).
   * @default 2
   */
  backoffFactor?: number;
  /**
   * Upper bound of a delay.
   * @default "60s"
   */
  maxDelay?: Duration;
}

/** A policy with its defaults filled in, in milliseconds: what the service records for a task. */
export function resolveRetryPolicy(policy: RetryPolicy): RetryPolicyMs {
  return {
    maxAttempts: policy.maxAttempts ?? DEFAULT_RETRY_POLICY.maxAttempts,
    initialDelayMs: Math.round(toMs(policy.initialDelay ?? DEFAULT_RETRY_POLICY.initialDelayMs)),
    backoffFactor: policy.backoffFactor ?? DEFAULT_RETRY_POLICY.backoffFactor,
    maxDelayMs: Math.round(toMs(policy.maxDelay ?? DEFAULT_RETRY_POLICY.maxDelayMs)),
  };
}

/**
 * Options of a task, the third argument of {@link defineTask}: how its attempts are retried and
 * how long each may run. The worker serving the task declares them to the service.
 * @example
 * const options: TaskOptions = { retry: { maxAttempts: 5, initialDelay: '2s', maxDelay: '1m' }, timeout: '30s' };
 */
export interface TaskOptions {
  /** Retry policy; see {@link RetryPolicy} (default: 3 attempts, 1 s then doubling, at most 60 s). */
  retry?: RetryPolicy;
  /**
   * Start-to-close timeout of one attempt: past it the attempt is aborted and counts as failed. At
   * least 1 ms (leave it out for none): a `Worker` given less throws when it is made.
   * @default none
   */
  timeout?: Duration;
}

/** What a task handler gets besides its arguments. */
export interface TaskContext {
  /** The standalone task's id, or undefined for a task a workflow scheduled. */
  taskId?: string;
  /** The workflow that scheduled this task, if any. */
  workflowId?: string;
  /** Attempt number, from 1. */
  attempt: number;
  /**
   * Aborted when the attempt times out, when the service says to stop (its workflow terminated or
   * failed; seen at the worker's next heartbeat), or when the worker shuts down and its
   * `shutdownGraceMs` has run out. Code that ignores it keeps running, but its outcome is no longer
   * awaited: the attempt is reported failed (or given back, at shutdown) and its slot freed.
   */
  signal: AbortSignal;
  /**
   * Tells the server the attempt is alive (the worker also does this on its own while the task
   * runs). Resolves to true when the attempt should stop. Cheap to call often, e.g. once per item
   * a loop processes: calls share the worker's heartbeat requests (at most one in flight, and a
   * call sends one only when none went out in the last `min(heartbeatIntervalMs, 1000)` ms; else it
   * answers from the last one, after letting the event loop turn).
   * @example
   * for (const row of rows) {
   *   if (await ctx.heartbeat()) throw new Error('stopped');
   *   await importRow(row);
   * }
   */
  heartbeat(): Promise<boolean>;
}

export type TaskHandler<Args extends unknown[], Result> = (this: TaskContext, ...args: Args) => Result | Promise<Result>;

/** A task: a named function that runs on a worker, with retries. */
export interface TaskDefinition<Args extends unknown[] = any[], Result = any> {
  /** Always `'task'`: tells a task definition from a workflow definition. */
  readonly kind: 'task';
  /** The name dispatches and `ctx.run` use (`dispatchTask({ name })`), unique among a worker's tasks. */
  readonly name: string;
  /** The task's code: called by the worker with a {@link TaskContext} and the task's arguments; its (awaited) return value is the result, as JSON (`undefined` becomes `null`). */
  readonly handler: (ctx: TaskContext, ...args: Args) => Result | Promise<Result>;
  /** The options given to {@link defineTask} (`{}` when none were). */
  readonly options: TaskOptions;
}

/** A workflow: deterministic code that orchestrates tasks, timers, events and children. */
export interface WorkflowDefinition<Args extends unknown[] = any[], Result = any> {
  /** Always `'workflow'`: tells a workflow definition from a task definition. */
  readonly kind: 'workflow';
  /** The name with its version, e.g. `Onboarding_v2`. */
  readonly name: string;
  /** The workflow's code: replayed by the worker with a {@link WorkflowContext} and the workflow's arguments; its resolved value is the workflow's result and must be JSON. */
  readonly handler: (ctx: WorkflowContext, ...args: Args) => Promise<Result>;
}

/**
 * Defines a task. The handler receives a {@link TaskContext} and the task's arguments.
 * @example
 * export const sendEmail = defineTask('sendEmail', async (ctx, to: string, subject: string) => {
 *   await mailer.send({ to, subject });
 *   return { sent: true };
 * }, { retry: { maxAttempts: 5, initialDelay: '2s' }, timeout: '30s' });
 */
export function defineTask<Args extends unknown[], Result>(
  name: string,
  handler: (ctx: TaskContext, ...args: Args) => Result | Promise<Result>,
  options: TaskOptions = {},
): TaskDefinition<Args, Awaited<Result>> {
  return { kind: 'task', name, handler: handler as TaskDefinition<Args, Awaited<Result>>['handler'], options };
}

/**
 * Defines a workflow. Its code must be deterministic: use `ctx.now()`, `ctx.random()`,
 * `ctx.uuid()` and `ctx.sleep()` instead of `Date.now()`, `Math.random()` or `setTimeout`,
 * and do I/O only in tasks (or `ctx.step`): a decision whose code awaits anything else fails as
 * `WORKFLOW_BLOCKED`. Name new versions `Name_v2`, `Name_v3`: a dispatch of `Name` runs
 * the highest version a worker serves, and running workflows keep the version they started with.
 * @example
 * export const onboarding = defineWorkflow('Onboarding', async (ctx, email: string) => {
 *   await ctx.run(sendWelcome, email);
 *   const activated = await ctx.waitForEvent('activated', { timeout: '3d' });
 *   if (!activated) await ctx.run(sendReminder, email);
 * });
 */
export function defineWorkflow<Args extends unknown[], Result>(
  name: string,
  handler: (ctx: WorkflowContext, ...args: Args) => Promise<Result>,
): WorkflowDefinition<Args, Result> {
  return { kind: 'workflow', name, handler };
}
