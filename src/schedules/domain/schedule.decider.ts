import { Json } from '../../event-store/event-store.port.js';
import { Decider } from '../../shared/decider.js';
import { BadUserInputError, ConflictError, NotFoundError } from '../../shared/errors.js';
import { CompiledCron, compileCron, latestOccurrence, nextOccurrence, occurrencesBetween, OccurrenceRange, SixFieldForm, validateCron } from './cron.js';
import { occurrenceDispatchId, triggerDispatchId } from './dispatch-id.js';

/**
 * A schedule (`schedule-<id>`): a cron expression in a time zone that dispatches a task or a
 * workflow. Firing an occurrence is an append on this stream with the revision read, so among
 * several Baton instances exactly one records each occurrence; the dispatch id is derived from the
 * schedule and the occurrence, so a repeated dispatch is a no-op.
 *
 * Every occurrence is handled exactly once, in order, by one of: ScheduleFired,
 * ScheduleOccurrenceSkipped (missed while Baton was down, or overlapping a running instance) or
 * ScheduleOccurrenceBuffered (BUFFER_ONE, fired when the running instance ends). `cursor` is the
 * last occurrence handled. Occurrences that fall while the schedule is paused are not handled at
 * all: resuming moves the cursor to the resume time.
 */

export type ScheduleKind = 'task' | 'workflow';
/** What a workflow schedule does with an occurrence while its previous instance still runs. */
export type OverlapPolicy = 'allow' | 'skip' | 'buffer_one';
export type ScheduleStatus = 'active' | 'paused' | 'deleted';
export type SkipReason = 'missed' | 'overlap';

/**
 * An occurrence dispatched this late or less is on time, whatever the catch-up window: a timer
 * that rings a few milliseconds late, or a busy event loop, is not a missed occurrence.
 */
export const LATE_TOLERANCE_MS = 1000;

export interface ScheduleSpec {
  scheduleId: string;
  appId: string;
  environment: string;
  kind: ScheduleKind;
  name: string;
  input: Json[];
  /** Given to every workflow instance (workflow schedules only). */
  tag: string | null;
  /** As given, whitespace-normalised. */
  cron: string;
  /**
   * How six fields are read: `year` (the original service's form) for every schedule created now.
   * Absent on schedules recorded before, which read six fields as seconds-first and keep doing so.
   */
  sixFields?: SixFieldForm;
  /** Canonical IANA name. */
  timezone: string;
  overlapPolicy: OverlapPolicy;
  /** An occurrence missed by less than this (e.g. while Baton was down) is still fired, once. */
  catchUpWindowMs: number;
}

export interface ScheduleEventData {
  ScheduleCreated: ScheduleSpec & { createdAt: string };
  ScheduleFired: { occurrence: string; dispatchId: string; firedAt: string };
  /**
   * One or more consecutive occurrences that were not fired: `count` of them from
   * `firstOccurrence` to `occurrence` (with `countCapped`, more than `count`).
   */
  ScheduleOccurrenceSkipped: {
    occurrence: string;
    reason: SkipReason;
    count: number;
    countCapped: boolean;
    firstOccurrence: string;
    skippedAt: string;
  };
  ScheduleOccurrenceBuffered: { occurrence: string; bufferedAt: string };
  SchedulePaused: { pausedAt: string };
  ScheduleResumed: { resumedAt: string };
  ScheduleDeleted: { deletedAt: string };
  ScheduleTriggered: { triggerId: string; dispatchId: string; triggeredAt: string };
}

export type ScheduleEventType = keyof ScheduleEventData;
export type ScheduleEvent = { [K in ScheduleEventType]: { type: K; data: ScheduleEventData[K] } }[ScheduleEventType];

export const SCHEDULE_EVENT_TYPES = [
  'ScheduleCreated',
  'ScheduleFired',
  'ScheduleOccurrenceSkipped',
  'ScheduleOccurrenceBuffered',
  'SchedulePaused',
  'ScheduleResumed',
  'ScheduleDeleted',
  'ScheduleTriggered',
] as const satisfies ReadonlyArray<ScheduleEventType>;

export interface ExistingSchedule {
  status: ScheduleStatus;
  spec: ScheduleSpec;
  createdAt: number;
  /** Every occurrence at or before this time has been fired, skipped or buffered. */
  cursor: number;
  /** BUFFER_ONE: the occurrence waiting for the running instance to end. */
  buffered: number | null;
  /** The instance dispatched last (by an occurrence or a trigger): the one overlap is judged by. */
  lastDispatchId: string | null;
  lastFiredAt: number | null;
  lastOccurrence: number | null;
  firedCount: number;
  skippedCount: number;
  triggeredCount: number;
  updatedAt: number;
}

export type ScheduleState = { status: 'none' } | ExistingSchedule;

type Ref = { scheduleId: string; appId: string; environment: string; now: number };

export type ScheduleCommand =
  | (Omit<ScheduleSpec, 'timezone' | 'sixFields'> & {
      type: 'CreateSchedule';
      /** An IANA name, or null for UTC. */
      timezone: string | null;
      now: number;
    })
  /**
   * Handle the occurrences due at `now`: fire the latest if it is within the catch-up window,
   * record the older ones as skipped. `previousRunning` says whether the last dispatched
   * workflow instance is still running (the caller reads it from the workflows read model).
   */
  | { type: 'FireDue'; now: number; previousRunning: boolean }
  | ({ type: 'TriggerSchedule'; triggerId: string } & Ref)
  | ({ type: 'PauseSchedule' } & Ref)
  | ({ type: 'ResumeSchedule' } & Ref)
  | ({ type: 'DeleteSchedule' } & Ref);

const iso = (ms: number): string => new Date(ms).toISOString();

function owned(state: ScheduleState, ref: Ref): ExistingSchedule {
  if (state.status === 'none' || state.spec.appId !== ref.appId || state.spec.environment !== ref.environment) {
    throw new NotFoundError('schedule', ref.scheduleId);
  }
  return state;
}

function notDeleted(state: ExistingSchedule): ExistingSchedule {
  if (state.status === 'deleted') throw new ConflictError(`schedule ${state.spec.scheduleId} is deleted`);
  return state;
}

function fired(state: ExistingSchedule, occurrence: number, now: number): ScheduleEvent {
  return {
    type: 'ScheduleFired',
    data: { occurrence: iso(occurrence), dispatchId: occurrenceDispatchId(state.spec.scheduleId, occurrence), firedAt: iso(now) },
  };
}

function skipped(range: OccurrenceRange, reason: SkipReason, now: number): ScheduleEvent {
  return {
    type: 'ScheduleOccurrenceSkipped',
    data: {
      occurrence: iso(range.last),
      reason,
      count: range.count,
      countCapped: range.countCapped,
      firstOccurrence: iso(range.first),
      skippedAt: iso(now),
    },
  };
}

function decideFireDue(state: ExistingSchedule, now: number, previousRunning: boolean): ScheduleEvent[] {
  if (state.status !== 'active') return [];
  const { spec } = state;
  const policy: OverlapPolicy = spec.kind === 'workflow' ? spec.overlapPolicy : 'allow';
  const events: ScheduleEvent[] = [];
  let running = previousRunning;
  let buffered = state.buffered;
  if (buffered !== null && !running) {
    events.push(fired(state, buffered, now));
    buffered = null;
    running = true;
  }
  const cron = scheduleCron(spec);
  const latest = latestOccurrence(cron, state.cursor, now);
  if (latest === null) return events;
  const onTime = now - latest <= Math.max(spec.catchUpWindowMs, LATE_TOLERANCE_MS);
  const missed = occurrencesBetween(cron, state.cursor, onTime ? latest - 1 : latest);
  if (missed) events.push(skipped(missed, 'missed', now));
  if (!onTime) return events;
  const single: OccurrenceRange = { first: latest, last: latest, count: 1, countCapped: false };
  if (policy === 'allow' || !running) events.push(fired(state, latest, now));
  else if (policy === 'buffer_one' && buffered === null) {
    events.push({ type: 'ScheduleOccurrenceBuffered', data: { occurrence: iso(latest), bufferedAt: iso(now) } });
  } else events.push(skipped(single, 'overlap', now));
  return events;
}

export const scheduleDecider: Decider<ScheduleCommand, ScheduleEvent, ScheduleState> = {
  initialState: () => ({ status: 'none' }),

  decide(command, state) {
    switch (command.type) {
      case 'CreateSchedule': {
        if (state.status !== 'none') return [];
        const cron = validateCron(command.cron, command.timezone, command.now);
        if (!Number.isSafeInteger(command.catchUpWindowMs) || command.catchUpWindowMs < 0) {
          throw new BadUserInputError('catchUpWindowMs', 'must be a whole number of milliseconds, 0 or more');
        }
        const workflow = command.kind === 'workflow';
        return [
          {
            type: 'ScheduleCreated',
            data: {
              scheduleId: command.scheduleId,
              appId: command.appId,
              environment: command.environment,
              kind: command.kind,
              name: command.name,
              input: command.input,
              tag: workflow ? command.tag : null,
              cron: cron.expression,
              sixFields: 'year',
              timezone: cron.timezone,
              overlapPolicy: workflow ? command.overlapPolicy : 'allow',
              catchUpWindowMs: command.catchUpWindowMs,
              createdAt: iso(command.now),
            },
          },
        ];
      }
      case 'FireDue':
        if (state.status === 'none') throw new NotFoundError('schedule', 'in this stream');
        return decideFireDue(state, command.now, command.previousRunning);
      case 'TriggerSchedule': {
        const s = notDeleted(owned(state, command));
        return [
          {
            type: 'ScheduleTriggered',
            data: {
              triggerId: command.triggerId,
              dispatchId: triggerDispatchId(s.spec.scheduleId, command.triggerId, command.now),
              triggeredAt: iso(command.now),
            },
          },
        ];
      }
      case 'PauseSchedule': {
        const s = notDeleted(owned(state, command));
        return s.status === 'paused' ? [] : [{ type: 'SchedulePaused', data: { pausedAt: iso(command.now) } }];
      }
      case 'ResumeSchedule': {
        const s = notDeleted(owned(state, command));
        return s.status === 'active' ? [] : [{ type: 'ScheduleResumed', data: { resumedAt: iso(command.now) } }];
      }
      case 'DeleteSchedule': {
        const s = owned(state, command);
        return s.status === 'deleted' ? [] : [{ type: 'ScheduleDeleted', data: { deletedAt: iso(command.now) } }];
      }
      default: {
        const _exhaustive: never = command;
        return _exhaustive;
      }
    }
  },

  evolve(state, event) {
    if (event.type === 'ScheduleCreated') {
      if (state.status !== 'none') return state;
      const { createdAt, ...spec } = event.data;
      const at = Date.parse(createdAt);
      return {
        status: 'active',
        spec,
        createdAt: at,
        cursor: at,
        buffered: null,
        lastDispatchId: null,
        lastFiredAt: null,
        lastOccurrence: null,
        firedCount: 0,
        skippedCount: 0,
        triggeredCount: 0,
        updatedAt: at,
      };
    }
    if (state.status === 'none') return state;
    switch (event.type) {
      case 'ScheduleFired': {
        const occurrence = Date.parse(event.data.occurrence);
        const at = Date.parse(event.data.firedAt);
        return {
          ...state,
          cursor: Math.max(state.cursor, occurrence),
          buffered: state.buffered === occurrence ? null : state.buffered,
          lastDispatchId: event.data.dispatchId,
          lastFiredAt: at,
          lastOccurrence: Math.max(state.lastOccurrence ?? occurrence, occurrence),
          firedCount: state.firedCount + 1,
          updatedAt: at,
        };
      }
      case 'ScheduleOccurrenceSkipped':
        return {
          ...state,
          cursor: Math.max(state.cursor, Date.parse(event.data.occurrence)),
          skippedCount: state.skippedCount + event.data.count,
          updatedAt: Date.parse(event.data.skippedAt),
        };
      case 'ScheduleOccurrenceBuffered': {
        const occurrence = Date.parse(event.data.occurrence);
        return { ...state, cursor: Math.max(state.cursor, occurrence), buffered: occurrence, updatedAt: Date.parse(event.data.bufferedAt) };
      }
      case 'SchedulePaused':
        return { ...state, status: 'paused', updatedAt: Date.parse(event.data.pausedAt) };
      case 'ScheduleResumed': {
        const at = Date.parse(event.data.resumedAt);
        return { ...state, status: 'active', cursor: Math.max(state.cursor, at), updatedAt: at };
      }
      case 'ScheduleDeleted':
        return { ...state, status: 'deleted', buffered: null, updatedAt: Date.parse(event.data.deletedAt) };
      case 'ScheduleTriggered': {
        const at = Date.parse(event.data.triggeredAt);
        return { ...state, lastDispatchId: event.data.dispatchId, lastFiredAt: at, triggeredCount: state.triggeredCount + 1, updatedAt: at };
      }
      default:
        return state;
    }
  },
};

/** When the cron fires next for an active schedule (null when paused, deleted or never again). */
export function nextFireAt(state: ScheduleState): number | null {
  if (state.status !== 'active') return null;
  return nextOccurrence(scheduleCron(state.spec), state.cursor);
}

/** A schedule's expression, read the way it was recorded (see `ScheduleSpec.sixFields`). */
export const scheduleCron = (spec: ScheduleSpec): CompiledCron => compileCron(spec.cron, spec.timezone, spec.sixFields ?? 'seconds');
