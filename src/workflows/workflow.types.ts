import { Field, ID, InputType, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import { IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { PRINTABLE, PRINTABLE_MESSAGE, Paginated } from '../graphql/common.types.js';
import { MAX_ID_LENGTH } from '../shared/limits.js';
import { RAW, WorkflowView } from './workflows.read-model.js';

export enum WorkflowState {
  RUNNING = 'running',
  PAUSED = 'paused',
  COMPLETED = 'completed',
  FAILED = 'failed',
  TERMINATED = 'terminated',
}
registerEnumType(WorkflowState, {
  name: 'WorkflowState',
  description: 'Where a workflow is in its life. COMPLETED, FAILED and TERMINATED are final.',
  valuesMap: {
    RUNNING: { description: 'Dispatched and being executed by workers.' },
    PAUSED: { description: 'Paused: nothing new is dispatched; results, timers and events are recorded and acted on after resume.' },
    COMPLETED: { description: 'The workflow code returned; `output` holds its result.' },
    FAILED: { description: 'The workflow code threw; `error` holds the reason.' },
    TERMINATED: { description: 'Stopped by terminateWorkflows; final.' },
  },
});

export enum SelectorActionStatus {
  OK = 'OK',
  NO_MATCH = 'NO_MATCH',
}
registerEnumType(SelectorActionStatus, {
  name: 'SelectorActionStatus',
  description: 'Outcome of an action on the workflows a selector picks.',
  valuesMap: {
    OK: { description: 'At least one workflow matched the selector (see `matched` and `changed`).' },
    NO_MATCH: { description: 'No workflow matched the selector; nothing was done.' },
  },
});

@InputType({
  description:
    'Picks workflows in exactly one of three forms: `{ id }`, `{ name }` (every workflow of that name that is not final), or `{ name, tag }`. A tag alone is not a selector.',
})
export class WorkflowSelectorInput {
  @Field(() => ID, { nullable: true, description: 'One workflow, by the id dispatchWorkflow returned.' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(MAX_ID_LENGTH)
  id?: string | null;

  @Field(() => String, { nullable: true, description: 'Every not-final workflow of this name (with `tag`: of this name and tag).' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  @Matches(PRINTABLE, { message: PRINTABLE_MESSAGE })
  name?: string | null;

  @Field(() => String, { nullable: true, description: 'Only together with `name`: the tag given at dispatch.' })
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  @MaxLength(256)
  @Matches(PRINTABLE, { message: PRINTABLE_MESSAGE })
  tag?: string | null;
}

@ObjectType({ description: 'What an action on selected workflows did.' })
export class SelectorActionResult {
  @Field(() => SelectorActionStatus, { description: '`OK` when at least one workflow matched, `NO_MATCH` when none did.' })
  status: SelectorActionStatus;

  @Field(() => Int, { description: 'How many workflows the selector matched.' })
  matched: number;

  @Field(() => Int, { description: 'How many of them the action changed (e.g. a paused workflow is not paused again).' })
  changed: number;

  @Field(() => [ID], {
    description:
      'Ids of the matched workflows, in dispatch order: the first 10,000 of them (`matched` counts them all, so fewer ids than `matched` means the list stopped there).',
  })
  workflowIds: string[];
}

@ObjectType({ description: 'The id of a dispatched workflow.' })
export class DispatchWorkflowResult {
  @Field(() => ID, {
    description:
      "The workflow id: a new UUID v7; with an idempotency key, a UUID derived from the key, and the first dispatch's id when the key was already used within the retention window.",
  })
  id: string;
}

@ObjectType('Workflow', { description: 'One workflow instance.' })
export class WorkflowType {
  @Field(() => ID, { description: 'Workflow id (UUID v7).' })
  id: string;
  @Field({ description: 'Application the workflow belongs to.' })
  appId: string;
  @Field({ description: 'Environment the workflow runs in.' })
  environment: string;
  @Field({ description: 'Name it was dispatched with.' })
  name: string;
  @Field(() => String, { nullable: true, description: 'The `Name_vN` version its first decision chose (null until a worker picked it up).' })
  version: string | null;
  @Field(() => String, { nullable: true, description: 'Tag given at dispatch, if any.' })
  tag: string | null;
  @Field(() => WorkflowState, { description: 'Current state.' })
  state: WorkflowState;
  @Field({ description: 'Arguments, as a string holding a JSON array.' })
  input: string;
  @Field(() => String, { nullable: true, description: 'Result as JSON, once COMPLETED.' })
  output: string | null;
  @Field(() => String, { nullable: true, description: 'Error message, once FAILED.' })
  error: string | null;
  @Field(() => ID, { nullable: true, description: 'Parent workflow, for a child workflow.' })
  parentId: string | null;
  @Field(() => ID, { nullable: true, description: 'Schedule that dispatched it, if any.' })
  scheduleId: string | null;
  @Field(() => String, {
    nullable: true,
    description: "The answers of the workflow's query handlers (`ctx.onQuery`) on its state as of its last decision, as a JSON object; null when it declares none.",
  })
  queries: string | null;
  @Field({ description: 'When it was dispatched.' })
  createdAt: Date;
  @Field({ description: 'When its history last changed.' })
  updatedAt: Date;
}

/**
 * The GraphQL shape of a view. Its JSON payloads are written when the answer reads them (the
 * stored text itself when the view came from a row: the read model stores them as JSON.stringify
 * wrote them), so fields a query does not select cost nothing.
 */
export function toWorkflowType(view: WorkflowView): WorkflowType {
  const raw = view[RAW];
  return {
    id: view.id,
    appId: view.appId,
    environment: view.environment,
    name: view.name,
    version: view.version,
    tag: view.tag,
    state: view.status as WorkflowState,
    get input() {
      return raw ? raw.input : JSON.stringify(view.input);
    },
    get output() {
      if (raw) return raw.output;
      return view.output === undefined ? null : JSON.stringify(view.output);
    },
    get error() {
      return view.error ? view.error.message : null;
    },
    parentId: view.parentId,
    scheduleId: view.scheduleId,
    get queries() {
      if (raw) return raw.queries;
      return view.queries === null ? null : JSON.stringify(view.queries);
    },
    createdAt: view.createdAt,
    updatedAt: view.updatedAt,
  };
}

@ObjectType('WorkflowConnection', { description: 'A page of workflows.' })
export class WorkflowConnection extends Paginated(WorkflowType) {}
