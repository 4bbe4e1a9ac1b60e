import { Field, ID, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import { Paginated } from '../graphql/common.types.js';
import { CompiledCron, describeCron } from './domain/cron.js';
import { scheduleCron } from './domain/schedule.decider.js';
import { ScheduleView, SchedulesReadModel } from './schedules.read-model.js';

export enum ScheduleOverlapPolicy {
  ALLOW = 'allow',
  SKIP = 'skip',
  BUFFER_ONE = 'buffer_one',
}
registerEnumType(ScheduleOverlapPolicy, {
  name: 'ScheduleOverlapPolicy',
  description: 'What a workflow schedule does when an occurrence comes while the workflow it dispatched last is not final yet.',
  valuesMap: {
    ALLOW: { description: 'Dispatch anyway; instances may run side by side (the default, as in the original service).' },
    SKIP: { description: 'Do not dispatch; the occurrence is recorded as skipped (reason `overlap`).' },
    BUFFER_ONE: {
      description:
        'Keep the occurrence and dispatch it as soon as the running instance ends. At most one is kept; further occurrences meanwhile are skipped (reason `overlap`).',
    },
  },
});

/** GraphQL's view of a schedule's status (exposed as the field `state`). */
export enum ScheduleStatusValue {
  ACTIVE = 'active',
  PAUSED = 'paused',
  DELETED = 'deleted',
}
registerEnumType(ScheduleStatusValue, {
  name: 'ScheduleState',
  description: 'Whether a schedule fires.',
  valuesMap: {
    ACTIVE: { description: 'Fires at every occurrence of its cron expression.' },
    PAUSED: { description: 'Fires nothing until resumed; occurrences while paused are not fired later. triggerSchedule still works.' },
    DELETED: { description: 'Deleted: fires nothing ever again; kept for its history.' },
  },
});

export enum ScheduleKindValue {
  TASK = 'task',
  WORKFLOW = 'workflow',
}
registerEnumType(ScheduleKindValue, {
  name: 'ScheduleKind',
  description: 'What a schedule dispatches.',
  valuesMap: {
    TASK: { description: 'A standalone task (scheduleTask).' },
    WORKFLOW: { description: 'A workflow (scheduleWorkflow).' },
  },
});

@ObjectType({ description: 'The id of a new schedule.' })
export class ScheduleResult {
  @Field(() => ID, { description: 'The new schedule id (a UUID v7).' })
  id: string;

  @Field(() => Date, { nullable: true, description: 'When it fires first.' })
  nextFireAt: Date | null;
}

/** What `nextFirings` is computed from; not exposed in GraphQL. */
export const SCHEDULE_CRON = Symbol('schedule cron');

@ObjectType('Schedule', { description: 'A cron schedule that dispatches a task or a workflow.' })
export class ScheduleType {
  @Field(() => ID, { description: 'Schedule id (UUID v7).' })
  id: string;
  @Field({ description: 'Application.' })
  appId: string;
  @Field({ description: 'Environment.' })
  environment: string;
  @Field(() => ScheduleKindValue, { description: 'Whether it dispatches a task or a workflow.' })
  kind: ScheduleKindValue;
  @Field({ description: 'Name of the task or workflow it dispatches.' })
  name: string;
  @Field({ description: 'Arguments given to every dispatch, as a string holding a JSON array.' })
  input: string;
  @Field(() => String, { nullable: true, description: 'Tag given to every workflow it dispatches (workflow schedules only).' })
  tag: string | null;
  @Field({ description: 'The cron expression, whitespace-normalised.' })
  cron: string;
  @Field({
    description:
      'The cron expression in words, e.g. "At 02:00" for `0 2 * * * *` (six fields: minute hour day-of-month month day-of-week year). Times are in `timezone`.',
  })
  cronDescription: string;
  @Field({ description: 'IANA time zone the expression is read in.' })
  timezone: string;
  @Field(() => ScheduleOverlapPolicy, { description: 'Overlap policy (always ALLOW for task schedules).' })
  overlapPolicy: ScheduleOverlapPolicy;
  @Field(() => Int, { description: 'A missed occurrence (e.g. while Baton was down) younger than this many milliseconds is still fired, once.' })
  catchUpWindowMs: number;
  @Field(() => ScheduleStatusValue, { description: 'ACTIVE, PAUSED or DELETED.' })
  state: ScheduleStatusValue;
  @Field(() => Date, { nullable: true, description: 'Next occurrence (null when paused or deleted).' })
  nextFireAt: Date | null;
  @Field(() => Date, { nullable: true, description: 'When it last dispatched (by an occurrence or a trigger).' })
  lastFiredAt: Date | null;
  @Field(() => Date, { nullable: true, description: 'The latest occurrence that was dispatched.' })
  lastOccurrence: Date | null;
  @Field(() => ID, { nullable: true, description: 'Id of the task or workflow it dispatched last.' })
  lastDispatchId: string | null;
  @Field(() => Date, { nullable: true, description: 'BUFFER_ONE: the occurrence waiting for the running instance to end.' })
  bufferedOccurrence: Date | null;
  @Field(() => Int, { description: 'Occurrences dispatched so far.' })
  firedCount: number;
  @Field(() => Int, { description: 'Occurrences skipped so far (missed or overlapping).' })
  skippedCount: number;
  @Field(() => Int, { description: 'Manual triggers so far.' })
  triggeredCount: number;
  @Field({ description: 'When it was created.' })
  createdAt: Date;
  @Field({ description: 'When it last changed.' })
  updatedAt: Date;
  /** The compiled expression, for `nextFirings`; not a GraphQL field. */
  [SCHEDULE_CRON]?: CompiledCron;
}

@ObjectType({ description: 'One coming occurrence of a schedule.' })
export class ScheduleFiring {
  @Field({ description: 'The instant it fires (UTC).' })
  at: Date;
  @Field({ description: 'The same instant as wall-clock time in the schedule\'s time zone, ISO 8601 with its offset, e.g. "2026-03-08T03:00:00-04:00".' })
  local: string;
}

const dateOrNull = (ms: number | null): Date | null => (ms === null ? null : new Date(ms));


export function toScheduleType(view: ScheduleView, model: SchedulesReadModel): ScheduleType {
  const { state } = view;
  const { spec } = state;
  const cron = scheduleCron(spec);
  // Kept once computed: a selected field is read twice, by the answer budget's size accounting
  // and by GraphQL, and a spread or JSON copy reads it again.
  let input: string | undefined;
  let cronDescription: string | undefined;
  return {
    [SCHEDULE_CRON]: cron,
    id: view.id,
    appId: spec.appId,
    environment: spec.environment,
    kind: spec.kind as ScheduleKindValue,
    name: spec.name,
    // Read only when the query selects them: a page of 500 schedules is read for their ids and
    // times far more often than for their inputs (up to MAX_PAYLOAD_BYTES each) or their cron in words.
    get input() {
      return (input ??= JSON.stringify(spec.input));
    },
    tag: spec.tag,
    cron: spec.cron,
    get cronDescription() {
      return (cronDescription ??= describeCron(cron));
    },
    timezone: spec.timezone,
    overlapPolicy: spec.overlapPolicy as ScheduleOverlapPolicy,
    catchUpWindowMs: spec.catchUpWindowMs,
    state: state.status as ScheduleStatusValue,
    nextFireAt: dateOrNull(model.nextFireAt(view)),
    lastFiredAt: dateOrNull(state.lastFiredAt),
    lastOccurrence: dateOrNull(state.lastOccurrence),
    lastDispatchId: state.lastDispatchId,
    bufferedOccurrence: dateOrNull(state.buffered),
    firedCount: state.firedCount,
    skippedCount: state.skippedCount,
    triggeredCount: state.triggeredCount,
    createdAt: view.createdAt,
    updatedAt: view.updatedAt,
  };
}

@ObjectType('ScheduleConnection', { description: 'A page of schedules.' })
export class ScheduleConnection extends Paginated(ScheduleType) {}

@ObjectType({ description: 'What triggerSchedule dispatched.' })
export class TriggerScheduleResult {
  @Field(() => ID, { description: 'Id of the task or workflow the trigger dispatched.' })
  id: string;
  @Field(() => ScheduleType, { description: 'The schedule after the trigger.' })
  schedule: ScheduleType;
}
