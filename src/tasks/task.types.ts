import { Field, ID, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import { Paginated } from '../graphql/common.types.js';
import { TaskView } from './tasks.read-model.js';

export enum TaskState {
  PENDING = 'pending',
  RUNNING = 'running',
  COMPLETED = 'completed',
  FAILED = 'failed',
}
registerEnumType(TaskState, {
  name: 'TaskState',
  description: 'Where a standalone task is in its life.',
  valuesMap: {
    PENDING: { description: 'Waiting for a worker (first attempt, or a retry after its backoff).' },
    RUNNING: { description: 'An attempt is running on a worker.' },
    COMPLETED: { description: 'An attempt returned; `output` holds its result.' },
    FAILED: { description: 'The last allowed attempt failed, or the task asked not to be retried.' },
  },
});

@ObjectType({ description: 'The id of a dispatched task.' })
export class DispatchTaskResult {
  @Field(() => ID, { description: "The task id: a new UUID v7; with an idempotency key, a UUID derived from the key, and the first dispatch's id when the key was already used within the retention window." })
  id: string;
}

@ObjectType('Task', { description: 'A standalone task (dispatchTask, a schedule, or ctx.dispatch in a workflow).' })
export class TaskType {
  @Field(() => ID, { description: 'Task id.' })
  id: string;
  @Field({ description: 'Application.' })
  appId: string;
  @Field({ description: 'Environment.' })
  environment: string;
  @Field({ description: 'Task name.' })
  name: string;
  @Field(() => TaskState, { description: 'Current state.' })
  state: TaskState;
  @Field(() => Int, { description: 'Attempts started so far.' })
  attempts: number;
  @Field({ description: 'Arguments, as a string holding a JSON array.' })
  input: string;
  @Field(() => String, { nullable: true, description: 'Tag given at dispatch, if any (a label to find the task by in `tasks`).' })
  tag: string | null;
  @Field(() => String, { nullable: true, description: 'Result as JSON, once COMPLETED.' })
  output: string | null;
  @Field(() => String, { nullable: true, description: 'Last error message.' })
  error: string | null;
  @Field(() => ID, { nullable: true, description: 'Schedule that dispatched it, if any.' })
  scheduleId: string | null;
  @Field({ description: 'When it was dispatched.' })
  createdAt: Date;
  @Field({ description: 'When it last changed.' })
  updatedAt: Date;
}

export const toTaskType = (v: TaskView): TaskType => ({
  id: v.id,
  appId: v.appId,
  environment: v.environment,
  name: v.name,
  state: v.status as TaskState,
  attempts: v.attempts,
  input: JSON.stringify(v.input),
  tag: v.tag,
  output: v.output === undefined ? null : JSON.stringify(v.output),
  error: v.error?.message ?? null,
  scheduleId: v.scheduleId,
  createdAt: v.createdAt,
  updatedAt: v.updatedAt,
});

@ObjectType('TaskConnection', { description: 'A page of tasks.' })
export class TaskConnection extends Paginated(TaskType) {}
