/**
 * Baton's TypeScript SDK: define tasks and workflows, run them in a {@link Worker}, and drive
 * the service with the typed {@link Client}.
 * @packageDocumentation
 */
export { defineTask, defineWorkflow } from './definitions.js';
export type { RetryPolicy, TaskContext, TaskDefinition, TaskOptions, WorkflowDefinition } from './definitions.js';
export type { Duration } from './duration.js';
export { NonDeterminismError, NonRetryableError, RetryableError, TaskFailedError } from './errors.js';
export { Worker } from './worker.js';
export type { WorkerOptions } from './worker.js';
export { BatonRequestError, Client, WorkflowEndedError } from './client.js';
export type { ClientOptions, DispatchedWorkflow, SelectorActionResult, WorkflowSelector, WorkflowSummary } from './client.js';
export { at, dayOfMonth, friday, monday, onWeekday, saturday, sunday, thursday, tuesday, wednesday } from './moments.js';
export type { Moment, Weekday } from './moments.js';
export { WorkflowBlockedError, WorkflowReplay, tagged } from './workflow-context.js';
export type { ChildOptions, HistoryEvent, SelectedWorkflows, Selector, StepAttempt, StepOptions, WorkflowContext } from './workflow-context.js';
