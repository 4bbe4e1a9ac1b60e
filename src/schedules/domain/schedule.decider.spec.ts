import { describe, expect, it } from '@jest/globals';
import { DeciderSpecification } from '../../../test/support/decider-specification.js';
import { BadUserInputError, ConflictError, NotFoundError } from '../../shared/errors.js';
import { derivedUuidV7, occurrenceDispatchId, triggerDispatchId } from './dispatch-id.js';
import { ScheduleCommand, ScheduleEvent, ScheduleEventData, nextFireAt, scheduleDecider } from './schedule.decider.js';

const spec = DeciderSpecification.for(scheduleDecider);
const ID = '01970000-0000-7000-8000-000000000001';
const at = (iso: string): number => Date.parse(iso);

const create = (overrides: Partial<Extract<ScheduleCommand, { type: 'CreateSchedule' }>> = {}): ScheduleCommand => ({
  type: 'CreateSchedule',
  scheduleId: ID,
  appId: 'demo',
  environment: 'prod',
  kind: 'workflow',
  name: 'NightlyReport',
  input: [{ format: 'pdf' }],
  tag: 'team:data',
  cron: '0 * * * *',
  timezone: null,
  overlapPolicy: 'allow',
  catchUpWindowMs: 60_000,
  now: at('2026-01-01T00:30:00Z'),
  ...overrides,
});

const created = (overrides: Partial<ScheduleEventData['ScheduleCreated']> = {}): ScheduleEvent => ({
  type: 'ScheduleCreated',
  data: {
    scheduleId: ID,
    appId: 'demo',
    environment: 'prod',
    kind: 'workflow',
    name: 'NightlyReport',
    input: [{ format: 'pdf' }],
    tag: 'team:data',
    cron: '0 * * * *',
    sixFields: 'year',
    timezone: 'UTC',
    overlapPolicy: 'allow',
    catchUpWindowMs: 60_000,
    createdAt: '2026-01-01T00:30:00.000Z',
    ...overrides,
  },
});

const fired = (occurrence: string, firedAt = occurrence): ScheduleEvent => ({
  type: 'ScheduleFired',
  data: { occurrence, dispatchId: occurrenceDispatchId(ID, at(occurrence)), firedAt },
});

const fireDue = (now: string, previousRunning = false): ScheduleCommand => ({ type: 'FireDue', now: at(now), previousRunning });
const ref = { scheduleId: ID, appId: 'demo', environment: 'prod' };

describe('schedule decider', () => {
  describe('CreateSchedule', () => {
    it('records the schedule with its expression normalised and the case of the zone corrected', () => {
      spec
        .given([])
        .when(create({ cron: '  0  *  * * * ', timezone: 'europe/paris' }))
        .then([created({ cron: '0 * * * *', timezone: 'Europe/Paris' })]);
    });

    it('a task schedule has no tag and always ALLOW', () => {
      spec
        .given([])
        .when(create({ kind: 'task', overlapPolicy: 'skip' }))
        .thenMatches([{ type: 'ScheduleCreated', data: { kind: 'task', tag: null, overlapPolicy: 'allow' } }]);
    });

    it('refuses a bad expression, an unknown zone, a never-firing expression and a negative window', () => {
      spec.given([]).when(create({ cron: '* * * * * * * *' })).thenThrows(BadUserInputError, /cron: expected 5 fields/);
      spec.given([]).when(create({ timezone: 'Nowhere/Land' })).thenThrows(BadUserInputError, /timezone: unknown time zone/);
      spec.given([]).when(create({ cron: '0 0 30 2 *' })).thenThrows(BadUserInputError, /never fires/);
      spec.given([]).when(create({ catchUpWindowMs: -1 })).thenThrows(BadUserInputError, /catchUpWindowMs/);
    });

    it('is idempotent on an existing stream', () => {
      spec.given([created()]).when(create()).thenNothingHappens();
    });

    it('first fires at the first occurrence after creation', () => {
      expect(nextFireAt(spec.given([created()]).state())).toBe(at('2026-01-01T01:00:00Z'));
    });

    it('records six fields in the original form (year last): `0 2 * * * *` is daily at 02:00', () => {
      spec.given([]).when(create({ cron: '0 2 * * * *' })).then([created({ cron: '0 2 * * * *' })]);
      expect(nextFireAt(spec.given([created({ cron: '0 2 * * * *' })]).state())).toBe(at('2026-01-01T02:00:00Z'));
    });

    it('keeps reading six fields seconds-first for a schedule recorded before the year form', () => {
      const legacy = created({ cron: '0 2 * * * *' });
      delete (legacy.data as { sixFields?: string }).sixFields;
      // Second 0 of minute 2 of every hour, as it was created to mean.
      expect(nextFireAt(spec.given([legacy]).state())).toBe(at('2026-01-01T01:02:00Z'));
    });
  });

  describe('FireDue', () => {
    it('does nothing before the first occurrence', () => {
      spec.given([created()]).when(fireDue('2026-01-01T00:59:59.999Z')).thenNothingHappens();
    });

    it('fires a due occurrence with the id derived from schedule and occurrence', () => {
      spec
        .given([created()])
        .when(fireDue('2026-01-01T01:00:00.004Z'))
        .then([fired('2026-01-01T01:00:00.000Z', '2026-01-01T01:00:00.004Z')]);
    });

    it('an occurrence already fired (by another instance) is not fired again', () => {
      spec.given([created(), fired('2026-01-01T01:00:00.000Z')]).when(fireDue('2026-01-01T01:00:00.010Z')).thenNothingHappens();
    });

    it('after a downtime, fires only the most recent missed occurrence within the window and records the older ones as skipped', () => {
      spec
        .given([created(), fired('2026-01-01T01:00:00.000Z')])
        .when(fireDue('2026-01-01T05:00:40Z'))
        .then([
          {
            type: 'ScheduleOccurrenceSkipped',
            data: {
              occurrence: '2026-01-01T04:00:00.000Z',
              reason: 'missed',
              count: 3,
              countCapped: false,
              firstOccurrence: '2026-01-01T02:00:00.000Z',
              skippedAt: '2026-01-01T05:00:40.000Z',
            },
          },
          fired('2026-01-01T05:00:00.000Z', '2026-01-01T05:00:40.000Z'),
        ]);
    });

    it('records every missed occurrence as skipped when even the latest is outside the window', () => {
      spec
        .given([created(), fired('2026-01-01T01:00:00.000Z')])
        .when(fireDue('2026-01-01T05:01:00.001Z'))
        .then([
          {
            type: 'ScheduleOccurrenceSkipped',
            data: {
              occurrence: '2026-01-01T05:00:00.000Z',
              reason: 'missed',
              count: 4,
              countCapped: false,
              firstOccurrence: '2026-01-01T02:00:00.000Z',
              skippedAt: '2026-01-01T05:01:00.001Z',
            },
          },
        ]);
    });

    it('a timer a little late is on time even with a zero window', () => {
      spec
        .given([created({ catchUpWindowMs: 0 })])
        .when(fireDue('2026-01-01T01:00:00.900Z'))
        .thenMatches([{ type: 'ScheduleFired', data: { occurrence: '2026-01-01T01:00:00.000Z' } }]);
      spec
        .given([created({ catchUpWindowMs: 0 })])
        .when(fireDue('2026-01-01T01:00:01.500Z'))
        .thenMatches([{ type: 'ScheduleOccurrenceSkipped', data: { reason: 'missed', count: 1 } }]);
    });

    it('in a zone, across the jump forward, a skipped local time fires once at the first instant after the gap', () => {
      const ny = created({ cron: '30 2 * * *', timezone: 'America/New_York', createdAt: '2026-03-07T12:00:00.000Z' });
      expect(nextFireAt(spec.given([ny]).state())).toBe(at('2026-03-08T07:00:00Z'));
      spec
        .given([ny])
        .when(fireDue('2026-03-08T07:00:00.003Z'))
        .then([fired('2026-03-08T07:00:00.000Z', '2026-03-08T07:00:00.003Z')]);
      expect(nextFireAt(spec.given([ny, fired('2026-03-08T07:00:00.000Z')]).state())).toBe(at('2026-03-09T06:30:00Z'));
    });

    it('a task schedule fires whatever previousRunning says', () => {
      spec
        .given([created({ kind: 'task', tag: null })])
        .when(fireDue('2026-01-01T01:00:00Z', true))
        .thenMatches([{ type: 'ScheduleFired' }]);
    });
  });

  describe('overlap policies', () => {
    it('ALLOW fires while the previous instance runs', () => {
      spec
        .given([created(), fired('2026-01-01T01:00:00.000Z')])
        .when(fireDue('2026-01-01T02:00:00Z', true))
        .thenMatches([{ type: 'ScheduleFired', data: { occurrence: '2026-01-01T02:00:00.000Z' } }]);
    });

    it('SKIP skips the occurrence while the previous instance runs, and fires once it is final', () => {
      const given = [created({ overlapPolicy: 'skip' }), fired('2026-01-01T01:00:00.000Z')];
      spec
        .given(given)
        .when(fireDue('2026-01-01T02:00:00Z', true))
        .then([
          {
            type: 'ScheduleOccurrenceSkipped',
            data: {
              occurrence: '2026-01-01T02:00:00.000Z',
              reason: 'overlap',
              count: 1,
              countCapped: false,
              firstOccurrence: '2026-01-01T02:00:00.000Z',
              skippedAt: '2026-01-01T02:00:00.000Z',
            },
          },
        ]);
      spec.given(given).when(fireDue('2026-01-01T02:00:00Z', false)).then([fired('2026-01-01T02:00:00.000Z')]);
    });

    it('BUFFER_ONE keeps one occurrence, skips the next ones, and fires the kept one when the previous instance ends', () => {
      const base = [created({ overlapPolicy: 'buffer_one' }), fired('2026-01-01T01:00:00.000Z')];
      const buffered: ScheduleEvent = {
        type: 'ScheduleOccurrenceBuffered',
        data: { occurrence: '2026-01-01T02:00:00.000Z', bufferedAt: '2026-01-01T02:00:00.000Z' },
      };
      spec.given(base).when(fireDue('2026-01-01T02:00:00Z', true)).then([buffered]);
      spec
        .given([...base, buffered])
        .when(fireDue('2026-01-01T03:00:00Z', true))
        .thenMatches([{ type: 'ScheduleOccurrenceSkipped', data: { reason: 'overlap', occurrence: '2026-01-01T03:00:00.000Z' } }]);
      // The previous instance ended at 02:20: the kept occurrence fires then, under its own id.
      spec
        .given([...base, buffered])
        .when(fireDue('2026-01-01T02:20:00Z', false))
        .then([fired('2026-01-01T02:00:00.000Z', '2026-01-01T02:20:00.000Z')]);
      // Ended exactly as the next occurrence comes: the kept one fires and the new one is kept.
      spec
        .given([...base, buffered])
        .when(fireDue('2026-01-01T03:00:00Z', false))
        .thenMatches([
          { type: 'ScheduleFired', data: { occurrence: '2026-01-01T02:00:00.000Z' } },
          { type: 'ScheduleOccurrenceBuffered', data: { occurrence: '2026-01-01T03:00:00.000Z' } },
        ]);
      spec
        .given([...base, buffered, fired('2026-01-01T02:00:00.000Z', '2026-01-01T02:20:00.000Z')])
        .when({ type: 'FireDue', now: at('2026-01-01T02:30:00Z'), previousRunning: false })
        .thenNothingHappens();
    });
  });

  describe('pause, resume, delete, trigger', () => {
    const now = at('2026-01-01T02:10:00Z');

    it('a paused schedule fires nothing; resuming does not fire what fell while paused', () => {
      const paused: ScheduleEvent = { type: 'SchedulePaused', data: { pausedAt: '2026-01-01T00:40:00.000Z' } };
      spec.given([created()]).when({ type: 'PauseSchedule', ...ref, now: at('2026-01-01T00:40:00Z') }).then([paused]);
      spec.given([created(), paused]).when({ type: 'PauseSchedule', ...ref, now }).thenNothingHappens();
      spec.given([created(), paused]).when(fireDue('2026-01-01T02:00:00Z')).thenNothingHappens();
      const resumed: ScheduleEvent = { type: 'ScheduleResumed', data: { resumedAt: '2026-01-01T02:10:00.000Z' } };
      spec.given([created(), paused]).when({ type: 'ResumeSchedule', ...ref, now }).then([resumed]);
      spec.given([created(), paused, resumed]).when(fireDue('2026-01-01T02:10:00.500Z')).thenNothingHappens();
      expect(nextFireAt(spec.given([created(), paused, resumed]).state())).toBe(at('2026-01-01T03:00:00Z'));
      spec.given([created()]).when({ type: 'ResumeSchedule', ...ref, now }).thenNothingHappens();
    });

    it('a deleted schedule fires nothing, cannot be paused, resumed or triggered, and deleting again changes nothing', () => {
      const deleted: ScheduleEvent = { type: 'ScheduleDeleted', data: { deletedAt: '2026-01-01T00:40:00.000Z' } };
      spec.given([created()]).when({ type: 'DeleteSchedule', ...ref, now: at('2026-01-01T00:40:00Z') }).then([deleted]);
      spec.given([created(), deleted]).when(fireDue('2026-01-01T01:00:00Z')).thenNothingHappens();
      spec.given([created(), deleted]).when({ type: 'DeleteSchedule', ...ref, now }).thenNothingHappens();
      spec.given([created(), deleted]).when({ type: 'PauseSchedule', ...ref, now }).thenThrows(ConflictError, /deleted/);
      spec.given([created(), deleted]).when({ type: 'ResumeSchedule', ...ref, now }).thenThrows(ConflictError, /deleted/);
      spec.given([created(), deleted]).when({ type: 'TriggerSchedule', triggerId: 't1', ...ref, now }).thenThrows(ConflictError, /deleted/);
      expect(nextFireAt(spec.given([created(), deleted]).state())).toBeNull();
    });

    it("an unknown schedule, or another app's, is NOT_FOUND", () => {
      spec.given([]).when({ type: 'PauseSchedule', ...ref, now }).thenThrows(NotFoundError);
      spec.given([created()]).when({ type: 'PauseSchedule', ...ref, appId: 'other', now }).thenThrows(NotFoundError);
      spec.given([created()]).when({ type: 'TriggerSchedule', triggerId: 't1', ...ref, environment: 'dev', now }).thenThrows(NotFoundError);
      spec.given([]).when(fireDue('2026-01-01T01:00:00Z')).thenThrows(NotFoundError);
    });

    it('a trigger dispatches now, also while paused, and counts as the last dispatch for overlap', () => {
      const triggered: ScheduleEvent = {
        type: 'ScheduleTriggered',
        data: { triggerId: 't1', dispatchId: triggerDispatchId(ID, 't1', now), triggeredAt: '2026-01-01T02:10:00.000Z' },
      };
      spec.given([created()]).when({ type: 'TriggerSchedule', triggerId: 't1', ...ref, now }).then([triggered]);
      spec
        .given([created(), { type: 'SchedulePaused', data: { pausedAt: '2026-01-01T00:40:00.000Z' } }])
        .when({ type: 'TriggerSchedule', triggerId: 't1', ...ref, now })
        .then([triggered]);
      spec
        .given([created(), triggered])
        .when(fireDue('2026-01-01T02:10:00Z'))
        .thenState((state) => {
          expect(state).toMatchObject({ lastDispatchId: triggered.data.dispatchId, triggeredCount: 1, firedCount: 0 });
        });
    });
  });
});

describe('dispatch ids', () => {
  it('are the same for the same schedule and occurrence, and differ otherwise', () => {
    const a = occurrenceDispatchId(ID, at('2026-01-01T01:00:00Z'));
    expect(occurrenceDispatchId(ID, at('2026-01-01T01:00:00Z'))).toBe(a);
    expect(occurrenceDispatchId(ID, at('2026-01-01T01:00:01Z'))).not.toBe(a);
    expect(occurrenceDispatchId('01970000-0000-7000-8000-000000000002', at('2026-01-01T01:00:00Z'))).not.toBe(a);
    expect(triggerDispatchId(ID, 't1', at('2026-01-01T01:00:00Z'))).not.toBe(a);
  });

  it('are UUID v7 with the occurrence as their time', () => {
    const id = derivedUuidV7(at('2026-01-01T01:00:00Z'), 'x');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.replaceAll('-', '').slice(0, 12), 16)).toBe(at('2026-01-01T01:00:00Z'));
  });
});
