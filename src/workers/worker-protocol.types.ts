import { Field, ID, InputType, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsInt, IsNotEmpty, IsNumber, IsOptional, IsString, Matches, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { AppScopedInput, NameField, PRINTABLE, PRINTABLE_MESSAGE } from '../graphql/common.types.js';
import { MAX_NAME_LENGTH } from '../shared/limits.js';

/** Longest `PollWorkInput.pollId`: a UUID (36) with room to spare; it is recorded with every claim the poll makes. */
export const MAX_POLL_ID_LENGTH = 64;

/** A worker's id, as the public API takes ids (`AppScopedInput`): 1 to `max` characters, no control characters. */
function WorkerIdField(description: string, max = 128): PropertyDecorator {
  return (target, key) => {
    Field({ description })(target, key);
    IsString()(target, key);
    IsNotEmpty()(target, key);
    MaxLength(max)(target, key);
    Matches(PRINTABLE, { message: PRINTABLE_MESSAGE })(target, key);
  };
}

/** The workflow names a worker serves: each a name as the public API takes names (`NameField`). */
function WorkflowNamesField(description: string): PropertyDecorator {
  return (target, key) => {
    Field(() => [String], { description })(target, key);
    IsArray()(target, key);
    ArrayMaxSize(1000)(target, key);
    IsString({ each: true })(target, key);
    IsNotEmpty({ each: true })(target, key);
    MaxLength(MAX_NAME_LENGTH, { each: true })(target, key);
    Matches(PRINTABLE, { each: true, message: PRINTABLE_MESSAGE })(target, key);
  };
}

export enum WorkKind {
  DECISION = 'DECISION',
  TASK = 'TASK',
}
registerEnumType(WorkKind, {
  name: 'WorkKind',
  description: 'What a claimed work item asks the worker to do.',
  valuesMap: {
    DECISION: { description: 'Replay the workflow code over `history` and report the commands it produces.' },
    TASK: { description: 'Run one attempt of a task and report its result or error.' },
  },
});

@InputType({ description: 'How a task is retried (recorded with each attempt the worker claims).' })
export class RetryPolicyInput {
  @Field(() => Int, { description: 'Total attempts, the first included.' })
  @IsInt()
  @Min(1)
  @Max(1000)
  maxAttempts: number;

  @Field(() => Int, { description: 'Delay before the second attempt, in milliseconds.' })
  @IsInt()
  @Min(0)
  initialDelayMs: number;

  @Field({ description: 'Each further delay is the previous one times this factor.' })
  @IsNumber()
  @Min(1)
  @Max(100)
  backoffFactor: number;

  @Field(() => Int, { description: 'Upper bound of a delay, in milliseconds.' })
  @IsInt()
  @Min(0)
  maxDelayMs: number;
}

@InputType({ description: 'A task a worker implements, with its retry policy and timeout.' })
export class TaskRegistrationInput {
  @NameField('Task name.')
  name: string;

  @Field(() => RetryPolicyInput, { nullable: true, description: 'Retry policy (default: 3 attempts, 1 s doubling up to 60 s).' })
  @IsOptional()
  @ValidateNested()
  @Type(() => RetryPolicyInput)
  retry?: RetryPolicyInput | null;

  @Field(() => Int, { nullable: true, description: 'Start-to-close timeout of one attempt, in milliseconds.' })
  @IsOptional()
  @IsInt()
  @Min(1)
  timeoutMs?: number | null;
}

@InputType({ description: 'A long poll for work.' })
export class PollWorkInput extends AppScopedInput {
  @WorkerIdField('A stable id for this worker process (shown in histories).')
  workerId: string;

  @WorkflowNamesField('Workflow names this worker serves, with versions (e.g. "Onboarding_v2").')
  workflows: string[];

  @Field(() => [TaskRegistrationInput], { description: 'Tasks this worker serves.' })
  @IsArray()
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => TaskRegistrationInput)
  tasks: TaskRegistrationInput[];

  @Field(() => Int, { nullable: true, description: 'Most items to claim in this poll (default 10, at most 100).' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  maxItems?: number | null;

  @Field(() => Int, {
    nullable: true,
    description: 'Most decisions among them (the worker\'s free decision slots; 0 claims none and does not wait for any). Absent: only `maxItems` bounds them.',
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  maxDecisions?: number | null;

  @Field(() => Int, {
    nullable: true,
    description: 'Most task attempts among them (the worker\'s free task slots; 0 claims none and does not wait for any). Absent: only `maxItems` bounds them.',
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  maxTasks?: number | null;

  @Field(() => Int, { nullable: true, description: 'How long to wait for work when there is none, in ms (default 20000, at most 60000; 0 answers at once).' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(60_000)
  waitMs?: number | null;

  @PollIdField(
    'An id the worker gives this poll, the same when it sends the poll again (its answer was lost): 1 to 64 letters, digits, "-" or "_". The claims a poll makes record it, and a poll that comes again with an id whose claims are still held by this worker is answered with those claims instead of claiming more. Absent: every poll claims anew.',
  )
  pollId?: string | null;
}

/** A poll's (or an eager claim's) id: 1 to MAX_POLL_ID_LENGTH letters, digits, "-" or "_", optional. */
function PollIdField(description: string): PropertyDecorator {
  return (target, key) => {
    Field(() => String, { nullable: true, description })(target, key);
    IsOptional()(target, key);
    IsString()(target, key);
    IsNotEmpty()(target, key);
    MaxLength(MAX_POLL_ID_LENGTH)(target, key);
    Matches(/^[A-Za-z0-9_-]+$/, { message: 'must be letters, digits, "-" or "_"' })(target, key);
  };
}


/** Refs and ids a worker echoes back are short; anything longer is not one of ours. */
const MAX_REF_LENGTH = 512;

@ObjectType({ description: 'A decision or task attempt claimed by the polling worker, under a lease.' })
export class WorkItem {
  @Field(() => WorkKind, { description: 'Decision or task.' })
  kind: WorkKind;
  @Field({ description: 'Opaque reference to echo back in reportWork and heartbeat.' })
  ref: string;
  @Field(() => ID, { nullable: true, description: 'The workflow (for a decision, or a task a workflow scheduled).' })
  workflowId: string | null;
  @Field(() => ID, { nullable: true, description: 'The standalone task, for a TASK item that no workflow scheduled.' })
  taskId: string | null;
  @Field({ description: 'Task name, or workflow name as dispatched.' })
  name: string;
  @Field(() => String, { nullable: true, description: 'DECISION: the `Name_vN` version to run.' })
  version: string | null;
  @Field(() => ID, { nullable: true, description: 'DECISION: the decision id to report.' })
  decisionId: string | null;
  @Field(() => ID, { nullable: true, description: 'TASK: the attempt id to report.' })
  attemptId: string | null;
  @Field(() => Int, { nullable: true, description: 'TASK: attempt number, from 1.' })
  attempt: number | null;
  @Field({ description: 'Arguments as a JSON array (the task\'s, or the workflow\'s).' })
  input: string;
  @Field(() => String, {
    nullable: true,
    description:
      'DECISION: history as a JSON array of { revision, type, data }, from revision `historyFrom` to this decision\'s DecisionStarted. It is the whole current run when `historyFrom` is the run\'s first event; otherwise only what followed the previous decision, which this same worker made (a worker that no longer holds that run fetches it whole with `decisionHistory`). A history too large for the answer is left out: `history` is then `[]` and `historyFrom` is past the decision, and the worker fetches the run with `decisionHistory`, page by page.',
  })
  history: string | null;
  @Field(() => Int, { nullable: true, description: 'DECISION: revision of the first event in `history`.' })
  historyFrom: number | null;
  @Field(() => Int, { nullable: true, description: 'DECISION: revision of the first event of the current run (where a full replay starts).' })
  runFrom: number | null;
  @Field({ description: 'When the lease ends unless extended by a heartbeat or a report.' })
  leaseExpiresAt: Date;
}

@InputType({ description: 'What the reporting worker can take on right away: the work its report makes claimable is claimed for it in the same step (eager dispatch).' })
export class EagerClaimInput {
  @WorkflowNamesField('Workflow names this worker serves, with versions.')
  workflows: string[];

  @Field(() => [TaskRegistrationInput], { description: 'Tasks this worker serves (with their retry policies and timeouts, as in pollWork).' })
  @IsArray()
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => TaskRegistrationInput)
  tasks: TaskRegistrationInput[];

  @Field(() => Int, { description: 'Most items to claim (the worker\'s free slots; 0 claims nothing).' })
  @IsInt()
  @Min(0)
  @Max(100)
  maxItems: number;

  @Field(() => Int, { nullable: true, description: 'Most decisions among them (the worker\'s free decision slots). Absent: only `maxItems` bounds them.' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  maxDecisions?: number | null;

  @Field(() => Int, { nullable: true, description: 'Most task attempts among them (the worker\'s free task slots). Absent: only `maxItems` bounds them.' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  maxTasks?: number | null;

  @PollIdField(
    'An id the worker gives this claim, the same when it sends the report again (its answer was lost), as `pollWork`\'s `pollId`. With it, slots the report\'s own outcomes leave free are also filled from the work waiting for this worker, as a poll would (the claims record the id; see `fillDecisions`, `fillTasks`); a report that comes again with an id whose claims this worker still holds is answered with those claims instead of claiming more. Absent: only the work these outcomes make claimable is claimed.',
  )
  pollId?: string | null;

  @Field(() => Int, {
    nullable: true,
    description:
      'With `pollId`: most waiting decisions to fill slots with, beyond this report\'s own next steps (the worker\'s decision slots that no poll of its is asking for: a poll in flight is answered from the same work). Absent: as many as `maxDecisions` leaves.',
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  fillDecisions?: number | null;

  @Field(() => Int, { nullable: true, description: 'With `pollId`: most waiting task attempts to fill slots with (as `fillDecisions`, for task slots). Absent: as many as `maxTasks` leaves.' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(100)
  fillTasks?: number | null;
}

@InputType({ description: 'The decision whose whole run history a worker needs (it does not hold the run any more).' })
export class DecisionHistoryInput extends AppScopedInput {
  @WorkerIdField('The worker that claimed the decision.', 200)
  workerId: string;
  @Field({ description: 'The `ref` of the DECISION item.' })
  @IsString()
  @MaxLength(200)
  ref: string;
  @Field(() => ID, { description: 'The decision id of the item.' })
  @IsString()
  @MaxLength(100)
  decisionId: string;
  @Field(() => Int, {
    nullable: true,
    description:
      'Pages the run: events from this revision on (the run\'s first event at the earliest), as stored, as many as fit half the response limit (at least one); ask again after the last one until the page ends with this decision\'s DecisionStarted, then leave out what retries rewound (`replayableHistory`). Absent: the whole run at once, retries already left out.',
  })
  @IsOptional()
  @IsInt()
  @Min(0)
  fromRevision?: number | null;
}

@InputType({ description: 'Why a task attempt failed.' })
export class TaskErrorInput {
  @Field({ description: 'Error message.' })
  @IsString()
  @MaxLength(16_384)
  message: string;

  @Field(() => String, { nullable: true, description: 'Error class name.' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  name?: string | null;

  @Field(() => Boolean, { nullable: true, description: 'Do not retry (NonRetryableError).' })
  @IsOptional()
  @IsBoolean()
  nonRetryable?: boolean | null;

  @Field(() => Int, { nullable: true, description: 'Retry after this delay instead of the policy\'s (RetryableError).' })
  @IsOptional()
  @IsInt()
  @Min(0)
  // A GraphQL Int: coercion refuses more than 2^31 - 1 before this check runs.
  @Max(2 ** 31 - 1)
  retryAfterMs?: number | null;
}

@InputType({ description: 'The outcome of a decision: its commands, or why it failed.' })
export class DecisionReportInput {
  @Field({ description: 'The `ref` of the DECISION item.' })
  @IsString()
  @MaxLength(MAX_REF_LENGTH)
  ref: string;

  @Field(() => ID, { description: 'The decision id of the item.' })
  @IsString()
  @MaxLength(MAX_REF_LENGTH)
  decisionId: string;

  @Field(() => String, { nullable: true, description: 'Commands as a JSON array (ScheduleTask, StartTimer, CompleteWorkflow, …).' })
  @IsOptional()
  @IsString()
  commands?: string | null;

  @Field(() => String, { nullable: true, description: "Each query handler's answer on the state this decision left, as a JSON object (read through `Workflow.queries`)." })
  @IsOptional()
  @IsString()
  queries?: string | null;

  @Field(() => String, { nullable: true, description: 'Failure code, e.g. NON_DETERMINISTIC (instead of commands).' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  failureCode?: string | null;

  @Field(() => String, { nullable: true, description: 'Failure message.' })
  @IsOptional()
  @IsString()
  @MaxLength(16_384)
  failureMessage?: string | null;

  @Field(() => Int, { nullable: true, description: 'History revision where replay and code disagreed.' })
  @IsOptional()
  @IsInt()
  @Min(0)
  historyPosition?: number | null;
}

@InputType({
  description:
    "A decision the reporting worker made right after this task succeeded, on the workflow run it held since its own decision `basisDecisionId`. Recorded in the result's append when nothing else happened to the workflow since (answered in `decided`); otherwise ignored, and the decision is claimed and made as usual.",
})
export class NextDecisionInput {
  @Field(() => ID, { description: 'The decision the worker\'s run stood at: the workflow\'s last decision, made and reported by this worker.' })
  @IsString()
  @MaxLength(MAX_REF_LENGTH)
  basisDecisionId: string;

  @NameField('The `Name_vN` version the worker ran (the workflow\'s own).')
  version: string;

  @Field({ description: 'The decision\'s clock as the workflow code saw it (`ctx.now()`), ISO 8601; ignored when it is more than 2 s from the server\'s clock.' })
  @IsString()
  @MaxLength(40)
  startedAt: string;

  @Field({ description: 'Commands as a JSON array, as in a decision report.' })
  @IsString()
  commands: string;

  @Field(() => String, { nullable: true, description: 'Query answers as a JSON object, as in a decision report.' })
  @IsOptional()
  @IsString()
  queries?: string | null;
}

@InputType({ description: 'The outcome of a task attempt: its result, or its error.' })
export class TaskReportInput {
  @Field({ description: 'The `ref` of the TASK item.' })
  @IsString()
  @MaxLength(MAX_REF_LENGTH)
  ref: string;

  @Field(() => ID, { description: 'The attempt id of the item.' })
  @IsString()
  @MaxLength(MAX_REF_LENGTH)
  attemptId: string;

  @Field(() => String, { nullable: true, description: 'Result as JSON (when the attempt succeeded).' })
  @IsOptional()
  @IsString()
  result?: string | null;

  @Field(() => Boolean, { nullable: true, description: 'The worker gives the attempt back unfinished (it is shutting down): it is claimable again at once and does not count against the retries.' })
  @IsOptional()
  @IsBoolean()
  released?: boolean | null;

  @Field(() => TaskErrorInput, { nullable: true, description: 'Error (when the attempt failed).' })
  @IsOptional()
  @ValidateNested()
  @Type(() => TaskErrorInput)
  error?: TaskErrorInput | null;

  @Field(() => NextDecisionInput, { nullable: true, description: 'With a result: the decision it makes pending, made already by this worker (see NextDecisionInput).' })
  @IsOptional()
  @ValidateNested()
  @Type(() => NextDecisionInput)
  next?: NextDecisionInput | null;
}

@InputType({ description: 'Outcomes of several work items at once.' })
export class ReportWorkInput extends AppScopedInput {
  @WorkerIdField('The reporting worker.')
  workerId: string;

  @Field(() => [DecisionReportInput], { nullable: true, description: 'Decision outcomes.' })
  @IsOptional()
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => DecisionReportInput)
  decisions?: DecisionReportInput[] | null;

  @Field(() => [TaskReportInput], { nullable: true, description: 'Task attempt outcomes.' })
  @IsOptional()
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => TaskReportInput)
  tasks?: TaskReportInput[] | null;

  @Field(() => EagerClaimInput, {
    nullable: true,
    description:
      'Claim, in the same step, the work these outcomes make claimable for this worker: the tasks a reported decision scheduled, the decision a reported task result makes pending. Answered in `items`.',
  })
  @IsOptional()
  @ValidateNested()
  @Type(() => EagerClaimInput)
  claim?: EagerClaimInput | null;
}

@ObjectType({ description: 'A report the server did not apply.' })
export class ReportRejection {
  @Field({ description: 'The item reference.' })
  ref: string;
  @Field({ description: 'Why: CONFLICT (lease lapsed, workflow ended), BAD_USER_INPUT, NOT_FOUND.' })
  code: string;
  @Field({ description: 'Details.' })
  message: string;
  @Field(() => String, { nullable: true, description: 'The offending input field for BAD_USER_INPUT (e.g. `decisions.commands`, `tasks.next.startedAt`), as `extensions.field` names it on a refused request; null for other codes.' })
  field?: string | null;
}

@ObjectType({ description: 'A next decision recorded together with its task\'s result.' })
export class DecidedWork {
  @Field({ description: 'The `ref` of the TASK item whose report carried it.' })
  ref: string;
  @Field(() => ID, { description: 'The workflow.' })
  workflowId: string;
  @Field(() => ID, { description: 'The id it was recorded under.' })
  decisionId: string;
  @Field(() => Int, { description: 'Revision of its DecisionStarted: a worker holding the run continues after it.' })
  revision: number;
}

@ObjectType({ description: 'What reportWork applied.' })
export class ReportWorkResult {
  @Field(() => Int, { description: 'How many outcomes were recorded.' })
  accepted: number;
  @Field(() => [ReportRejection], { description: 'Outcomes not applied, with the reason.' })
  rejected: ReportRejection[];
  @Field(() => [WorkItem], { description: 'Work claimed for the reporting worker in the same step (see `claim`), under a lease, like pollWork items.' })
  items: WorkItem[];
  @Field(() => [DecidedWork], { description: 'The next decisions (`tasks.next`) recorded with their task results; one not listed was not recorded.' })
  decided: DecidedWork[];
}

@InputType({ description: 'A running attempt the worker still holds.' })
export class HeartbeatAttemptInput {
  @Field({ description: 'The `ref` of the TASK item, or of a DECISION item whose inline steps are still running.' })
  @IsString()
  @MaxLength(MAX_REF_LENGTH)
  ref: string;
  @Field(() => ID, { description: 'The attempt id (for a decision, its decisionId).' })
  @IsString()
  @MaxLength(MAX_REF_LENGTH)
  attemptId: string;
}

@InputType({ description: 'Heartbeats for running task attempts and decisions.' })
export class HeartbeatInput extends AppScopedInput {
  @WorkerIdField('The worker.')
  workerId: string;

  @Field(() => [HeartbeatAttemptInput], { description: 'Attempts still running.' })
  @IsArray()
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => HeartbeatAttemptInput)
  attempts: HeartbeatAttemptInput[];
}

@ObjectType({ description: 'Whether an attempt should go on.' })
export class HeartbeatResult {
  @Field({ description: 'The item reference.' })
  ref: string;
  @Field({ description: 'True when the worker should stop the attempt (workflow terminated, lease lost, task ended).' })
  cancel: boolean;
  @Field(() => String, { nullable: true, description: 'Why to stop.' })
  reason: string | null;
}
