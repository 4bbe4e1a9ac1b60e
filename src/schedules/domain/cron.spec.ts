import { describe, expect, it, jest } from '@jest/globals';
import { BadUserInputError } from '../../shared/errors.js';
import {
  CRON_MACROS,
  compileCron,
  latestOccurrence,
  nextOccurrence,
  normalizeTimezone,
  occurrencesBetween,
  describeCron,
  localIso,
  nextOccurrences,
  validateCron,
} from './cron.js';

const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The next `n` occurrences strictly after `from`. */
function upcoming(cron: string, timezone: string, from: string, n: number, sixFields: 'year' | 'seconds' = 'year'): string[] {
  const c = compileCron(cron, timezone, sixFields);
  const out: string[] = [];
  for (let t: number | null = at(from); out.length < n; ) {
    t = nextOccurrence(c, t);
    if (t === null) break;
    out.push(iso(t)!);
  }
  return out;
}

function refusal(run: () => unknown): BadUserInputError {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  if (thrown === undefined) throw new Error('expected BadUserInputError, nothing was thrown');
  expect(thrown).toBeInstanceOf(BadUserInputError);
  return thrown as BadUserInputError;
}

describe('cron syntax', () => {
  it('reads 5 fields with seconds at 0', () => {
    expect(upcoming('*/5 * * * *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-01T00:05:00.000Z', '2026-01-01T00:10:00.000Z']);
  });

  it("reads 6 fields as the original service did: minute hour day-of-month month day-of-week year", () => {
    // The migration case: `0 2 * * * *` is every day at 02:00, not second 0 of minute 2 of every hour.
    expect(upcoming('0 2 * * * *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-01T02:00:00.000Z', '2026-01-02T02:00:00.000Z']);
    expect(upcoming('30 9 * * MON 2027', 'UTC', '2026-06-01T00:00:00Z', 1)).toEqual(['2027-01-04T09:30:00.000Z']);
  });

  it('reads 7 fields as second minute hour day-of-month month day-of-week year', () => {
    expect(upcoming('*/1 * * * * * *', 'UTC', '2026-01-01T00:00:00.300Z', 3)).toEqual([
      '2026-01-01T00:00:01.000Z',
      '2026-01-01T00:00:02.000Z',
      '2026-01-01T00:00:03.000Z',
    ]);
    expect(upcoming('30 0 9 * * * 2026', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-01T09:00:30.000Z']);
  });

  it('reads 6 fields seconds-first for schedules recorded before the year form', () => {
    expect(upcoming('30 0 9 * * *', 'UTC', '2026-01-01T00:00:00Z', 1, 'seconds')).toEqual(['2026-01-01T09:00:30.000Z']);
    expect(compileCron('0 2 * * * *', 'UTC', 'seconds').pattern).toBe('0 2 * * * * *');
    expect(compileCron('0 2 * * * *', 'UTC').pattern).toBe('0 0 2 * * * *');
  });

  it('is strictly after its starting point, also exactly on an occurrence', () => {
    expect(upcoming('*/1 * * * * * *', 'UTC', '2026-01-01T00:00:05.000Z', 1)).toEqual(['2026-01-01T00:00:06.000Z']);
  });

  it('knows L, W and # in the six-field form', () => {
    expect(upcoming('0 2 L * * *', 'UTC', '2026-02-01T00:00:00Z', 2)).toEqual(['2026-02-28T02:00:00.000Z', '2026-03-31T02:00:00.000Z']);
    // 15W: 2026-08-15 is a Saturday, so Friday the 14th.
    expect(upcoming('0 9 15W 8 * 2026', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-08-14T09:00:00.000Z']);
    expect(upcoming('0 9 * * MON#2 *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-12T09:00:00.000Z', '2026-02-09T09:00:00.000Z']);
    expect(upcoming('0 18 * * 5L *', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-30T18:00:00.000Z']);
  });

  it('reads `?` in a day field as "no specific value": the other day field alone decides', () => {
    // 2026-01-01 is a Thursday. Before, `?` counted as a restricted field, so with the day-of-month
    // or day-of-week restriction OR-ed in, each of these fired every day.
    expect(upcoming('0 2 ? * MON *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-05T02:00:00.000Z', '2026-01-12T02:00:00.000Z']);
    expect(upcoming('0 8 1 * ? *', 'UTC', '2026-01-01T10:00:00Z', 2)).toEqual(['2026-02-01T08:00:00.000Z', '2026-03-01T08:00:00.000Z']);
    expect(upcoming('0 0 L * ? *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-31T00:00:00.000Z', '2026-02-28T00:00:00.000Z']);
    expect(upcoming('0 12 LW * ? *', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-30T12:00:00.000Z']);
    expect(upcoming('15 10 ? * 6L 2026', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-31T10:15:00.000Z']);
    expect(upcoming('0 0 ? * FRI#3 *', 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-16T00:00:00.000Z']);
    expect(upcoming('0 9 ? * MON-FRI', 'UTC', '2026-01-02T10:00:00Z', 2)).toEqual(['2026-01-05T09:00:00.000Z', '2026-01-06T09:00:00.000Z']);
    // `?` in both day fields, or in another field, is `*`.
    expect(upcoming('0 2 ? * ? *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-01T02:00:00.000Z', '2026-01-02T02:00:00.000Z']);
    expect(upcoming('0 ? 1 1 * 2027', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2027-01-01T00:00:00.000Z', '2027-01-01T01:00:00.000Z']);
    // The expression keeps its `?` as written, and reads as it fires.
    const c = compileCron('0 2 ? * MON *', 'UTC');
    expect(c.expression).toBe('0 2 ? * MON *');
    expect(describeCron(c)).toBe('At 02:00, only on Monday');
  });

  it('reads a Quartz-style step with a start, `N/step`, as from N to the end of the field', () => {
    // The form of AWS's and Quartz's six-field examples: `0/15 * * * ? *`, every quarter hour.
    expect(upcoming('0/15 * * * ? *', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual(['2026-01-01T00:15:00.000Z', '2026-01-01T00:30:00.000Z', '2026-01-01T00:45:00.000Z']);
    expect(upcoming('5/20 9 * * *', 'UTC', '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-01T09:05:00.000Z',
      '2026-01-01T09:25:00.000Z',
      '2026-01-01T09:45:00.000Z',
      '2026-01-02T09:05:00.000Z',
    ]);
    expect(upcoming('0 0 10/10 * ? *', 'UTC', '2026-01-01T00:00:00Z', 4)).toEqual([
      '2026-01-10T00:00:00.000Z',
      '2026-01-20T00:00:00.000Z',
      '2026-01-30T00:00:00.000Z',
      '2026-02-10T00:00:00.000Z',
    ]);
    expect(upcoming('0 0 1 2/6 ? 2026/2', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual(['2026-02-01T00:00:00.000Z', '2026-08-01T00:00:00.000Z', '2028-02-01T00:00:00.000Z']);
    expect(upcoming('30/15 0 * * * * *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-01T00:00:30.000Z', '2026-01-01T00:00:45.000Z']);
    expect(describeCron(compileCron('0/15 * * * ? *', 'UTC'))).toBe('Every 15 minutes');
    // Out of the field's range, or a zero step: refused, quoting the field as written.
    for (const [cron, field, value] of [
      ['60/5 * * * *', 'minute', '60/5'],
      ['5/0 * * * *', 'minute', '5/0'],
      ['0 0 1 1 * 1960/2', 'year', '1960/2'],
    ]) {
      const error = (() => {
        try {
          compileCron(cron, 'UTC');
        } catch (e) {
          return e;
        }
        throw new Error(`${cron} was accepted`);
      })() as BadUserInputError;
      expect(error).toBeInstanceOf(BadUserInputError);
      expect(error.details).toMatchObject({ field: 'cron', cronField: field });
      expect(error.message).toContain(JSON.stringify(value));
    }
  });

  it('knows names, ranges, lists and steps', () => {
    expect(upcoming('0 9 * * MON-FRI', 'UTC', '2026-01-02T10:00:00Z', 2)).toEqual(['2026-01-05T09:00:00.000Z', '2026-01-06T09:00:00.000Z']);
    expect(upcoming('0 0 1 JAN,JUL *', 'UTC', '2026-01-02T00:00:00Z', 1)).toEqual(['2026-07-01T00:00:00.000Z']);
    expect(upcoming('10-50/20 * * * *', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-01T00:10:00.000Z',
      '2026-01-01T00:30:00.000Z',
      '2026-01-01T00:50:00.000Z',
    ]);
  });

  it.each([
    ['@yearly', '2027-01-01T00:00:00.000Z'],
    ['@annually', '2027-01-01T00:00:00.000Z'],
    ['@monthly', '2026-02-01T00:00:00.000Z'],
    ['@weekly', '2026-01-04T00:00:00.000Z'],
    ['@daily', '2026-01-02T00:00:00.000Z'],
    ['@midnight', '2026-01-02T00:00:00.000Z'],
    ['@hourly', '2026-01-01T01:00:00.000Z'],
    ['@DAILY', '2026-01-02T00:00:00.000Z'],
  ])('macro %s', (macro, first) => {
    expect(upcoming(macro, 'UTC', '2026-01-01T00:00:00Z', 1)).toEqual([first]);
  });

  it('has exactly the documented macros', () => {
    expect(Object.keys(CRON_MACROS).sort()).toEqual(['@annually', '@daily', '@hourly', '@midnight', '@monthly', '@weekly', '@yearly']);
  });

  it('normalises whitespace and macro case', () => {
    expect(compileCron('  */5   *  * * *  ').expression).toBe('*/5 * * * *');
    expect(compileCron('@Hourly').expression).toBe('@hourly');
  });

  it.each([
    ['* * * * * * * *', /expected 5 fields .*6 .*7 .*got 8/],
    ['* * * *', /got 4/],
    ['', /must not be empty/],
    ['@reboot', /unknown macro/],
    ['@every 5m', /unknown macro/],
    ['61 * * * *', /Invalid value for minute: 61/],
    ['* * * * MOO', /illegal characters/],
    ['/15 * * * *', /stepping/],
  ])('refuses %j on the field cron with the reason', (cron, reason) => {
    const error = refusal(() => compileCron(cron, 'UTC'));
    expect(error.details.field).toBe('cron');
    expect(error.message).toMatch(reason);
  });

  it.each([
    ['61 * * * *', 'minute'],
    ['0 25 * * *', 'hour'],
    ['0 0 32 * *', 'day-of-month'],
    ['0 0 * 13 *', 'month'],
    ['* * * * MOO', 'day-of-week'],
    ['0 2 * * * 1969', 'year'],
    ['0 2 * * * 2100', 'year'],
    ['0 2 * * * 2026-2200', 'year'],
    ['0 2 * * * MON', 'year'],
    ['61 0 2 * * * *', 'second'],
    ['0 0 2 * * * 3000', 'year'],
  ])('names the cron field at fault in %j', (cron, field) => {
    const error = refusal(() => compileCron(cron, 'UTC'));
    expect(error.details).toMatchObject({ field: 'cron', cronField: field });
    expect(error.message).toContain(`${field} field`);
  });

  it('refuses an expression that can never fire', () => {
    const now = at('2026-01-01T00:00:00Z');
    for (const cron of ['0 0 30 2 *', '0 0 31 4,6,9,11 *', '0 2 * * * 2025']) {
      const error = refusal(() => validateCron(cron, 'UTC', now));
      expect(error.details.field).toBe('cron');
      expect(error.message).toMatch(/never fires/);
    }
    expect(iso(nextOccurrence(validateCron('0 0 29 2 *', 'UTC', now), now))).toBe('2028-02-29T00:00:00.000Z');
  });
});

describe('time zones', () => {
  it('reads the fields in the given zone', () => {
    expect(upcoming('0 9 * * *', 'Europe/Paris', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-01T08:00:00.000Z']);
    expect(upcoming('0 9 * * *', 'Europe/Paris', '2026-07-01T00:00:00Z', 1)).toEqual(['2026-07-01T07:00:00.000Z']);
    expect(upcoming('0 9 * * *', 'Asia/Kolkata', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-01T03:30:00.000Z']);
  });

  it('defaults to UTC and canonicalises names', () => {
    expect(normalizeTimezone(undefined)).toBe('UTC');
    expect(normalizeTimezone('america/new_york')).toBe('America/New_York');
  });

  it('refuses an unknown zone on the field timezone', () => {
    for (const zone of ['Mars/Olympus', '+05:00', '  ']) {
      expect(refusal(() => compileCron('* * * * *', zone)).details.field).toBe('timezone');
    }
  });
});

describe('daylight saving time (America/New_York, 2026)', () => {
  it('a local time skipped by the jump forward fires once, at the first instant after the gap', () => {
    // 2026-03-08 02:00 EST jumps to 03:00 EDT: 02:30 does not exist that day.
    expect(upcoming('30 2 * * *', 'America/New_York', '2026-03-07T00:00:00Z', 4)).toEqual([
      '2026-03-07T07:30:00.000Z', // 02:30 EST, the day before
      '2026-03-08T07:00:00.000Z', // 03:00 EDT, once
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
      '2026-03-10T06:30:00.000Z',
    ]);
  });

  it('times inside the gap collapse into one firing; no instant fires twice', () => {
    expect(upcoming('*/30 * * * *', 'America/New_York', '2026-03-08T06:00:00Z', 4)).toEqual([
      '2026-03-08T06:30:00.000Z', // 01:30 EST
      '2026-03-08T07:00:00.000Z', // 03:00 EDT: stands for 02:00, 02:30 and 03:00
      '2026-03-08T07:30:00.000Z', // 03:30 EDT
      '2026-03-08T08:00:00.000Z', // 04:00 EDT
    ]);
  });

  it('a local time repeated by the jump back fires once, on its first pass', () => {
    // 2026-11-01 02:00 EDT goes back to 01:00 EST: 01:30 happens twice.
    expect(upcoming('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual([
      '2026-11-01T05:30:00.000Z', // 01:30 EDT
      '2026-11-02T06:30:00.000Z', // the next day, 01:30 EST
    ]);
    expect(upcoming('*/30 * * * *', 'America/New_York', '2026-11-01T04:00:00Z', 5)).toEqual([
      '2026-11-01T04:30:00.000Z', // 00:30 EDT
      '2026-11-01T05:00:00.000Z', // 01:00 EDT
      '2026-11-01T05:30:00.000Z', // 01:30 EDT; 01:00 and 01:30 EST do not fire again
      '2026-11-01T07:00:00.000Z', // 02:00 EST
      '2026-11-01T07:30:00.000Z',
    ]);
  });

  it('started during the repeated hour, it does not fire the repeated times again', () => {
    expect(upcoming('*/10 * * * *', 'America/New_York', '2026-11-01T06:15:00Z', 1)).toEqual(['2026-11-01T07:00:00.000Z']);
  });

  it('from inside the repeated hour, the next occurrence is found without stepping through every repeated time', () => {
    // Every second, from 01:00:01 EST (the second pass): 02:00:00 EST is next. Stepping one naive
    // second at a time through the rest of the repeated hour took 3,600 croner steps and as many
    // time-zone conversions (about 0.1 s on the event loop, for a listing or a creation).
    const c = compileCron('* * * * * * *', 'America/New_York');
    const steps = jest.spyOn(c.naive, 'nextRun');
    try {
      expect(iso(nextOccurrence(c, at('2026-11-01T06:00:01Z')))).toBe('2026-11-01T07:00:00.000Z');
      expect(steps.mock.calls.length).toBeLessThan(10);
    } finally {
      steps.mockRestore();
    }
    // First pass 05:00-06:00Z (01:00-02:00 EDT), second pass 06:00-07:00Z (01:00-02:00 EST).
    const next = (cron: string, from: string) => iso(nextOccurrence(compileCron(cron, 'America/New_York'), at(from)));
    expect(
      [
        ['* * * * * * *', '2026-11-01T05:59:58Z'],
        ['* * * * * * *', '2026-11-01T05:59:59Z'],
        ['* * * * * * *', '2026-11-01T06:59:59Z'],
        ['* * * * * * *', '2026-11-01T07:00:00Z'],
        ['*/10 * * * *', '2026-11-01T04:50:00Z'],
        ['*/10 * * * *', '2026-11-01T05:55:00Z'],
        ['*/10 * * * *', '2026-11-01T06:15:00Z'],
        ['*/10 * * * *', '2026-11-01T07:00:00Z'],
        ['30 1 * * *', '2026-11-01T05:10:00Z'],
        ['30 1 * * *', '2026-11-01T05:30:00Z'],
        ['30 1 * * *', '2026-11-01T06:20:00Z'],
        ['0 * * * *', '2026-11-01T05:00:00Z'],
        ['0 * * * *', '2026-11-01T06:30:00Z'],
        ['15,45 1,2 * * *', '2026-11-01T05:00:00Z'],
        ['15,45 1,2 * * *', '2026-11-01T05:50:00Z'],
        ['15,45 1,2 * * *', '2026-11-01T06:20:00Z'],
        ['15,45 1,2 * * *', '2026-11-01T07:20:00Z'],
      ].map(([cron, from]) => [cron, from, next(cron, from)]),
    ).toEqual([
      ['* * * * * * *', '2026-11-01T05:59:58Z', '2026-11-01T05:59:59.000Z'],
      ['* * * * * * *', '2026-11-01T05:59:59Z', '2026-11-01T07:00:00.000Z'],
      ['* * * * * * *', '2026-11-01T06:59:59Z', '2026-11-01T07:00:00.000Z'],
      ['* * * * * * *', '2026-11-01T07:00:00Z', '2026-11-01T07:00:01.000Z'],
      ['*/10 * * * *', '2026-11-01T04:50:00Z', '2026-11-01T05:00:00.000Z'],
      ['*/10 * * * *', '2026-11-01T05:55:00Z', '2026-11-01T07:00:00.000Z'],
      ['*/10 * * * *', '2026-11-01T06:15:00Z', '2026-11-01T07:00:00.000Z'],
      ['*/10 * * * *', '2026-11-01T07:00:00Z', '2026-11-01T07:10:00.000Z'],
      ['30 1 * * *', '2026-11-01T05:10:00Z', '2026-11-01T05:30:00.000Z'],
      ['30 1 * * *', '2026-11-01T05:30:00Z', '2026-11-02T06:30:00.000Z'],
      ['30 1 * * *', '2026-11-01T06:20:00Z', '2026-11-02T06:30:00.000Z'],
      ['0 * * * *', '2026-11-01T05:00:00Z', '2026-11-01T07:00:00.000Z'],
      ['0 * * * *', '2026-11-01T06:30:00Z', '2026-11-01T07:00:00.000Z'],
      ['15,45 1,2 * * *', '2026-11-01T05:00:00Z', '2026-11-01T05:15:00.000Z'],
      ['15,45 1,2 * * *', '2026-11-01T05:50:00Z', '2026-11-01T07:15:00.000Z'],
      ['15,45 1,2 * * *', '2026-11-01T06:20:00Z', '2026-11-01T07:15:00.000Z'],
      ['15,45 1,2 * * *', '2026-11-01T07:20:00Z', '2026-11-01T07:45:00.000Z'],
    ]);
    // Lord Howe goes back half an hour (02:00 +11:00 to 01:30 +10:30).
    expect(upcoming('*/10 * * * *', 'Australia/Lord_Howe', '2026-04-04T15:05:00Z', 2)).toEqual(['2026-04-04T15:30:00.000Z', '2026-04-04T15:40:00.000Z']);
  });

  it('seconds-level expressions cross the jump forward without a burst', () => {
    const c = compileCron('*/20 * * * * * *', 'America/New_York');
    const range = occurrencesBetween(c, at('2026-03-08T06:59:00Z'), at('2026-03-08T07:01:00Z'))!;
    // 01:59:20, 01:59:40, then 03:00:00 (standing for the whole skipped hour), 03:00:20, 03:00:40, 03:01:00
    expect(range).toEqual({ first: at('2026-03-08T06:59:20Z'), last: at('2026-03-08T07:01:00Z'), count: 6, countCapped: false });
  });
});

describe('missed occurrences', () => {
  const c = compileCron('*/1 * * * *', 'UTC');

  it('finds the latest occurrence in a range, whatever its length', () => {
    expect(iso(latestOccurrence(c, at('2026-01-01T00:00:00Z'), at('2026-01-01T00:10:30Z')))).toBe('2026-01-01T00:10:00.000Z');
    expect(iso(latestOccurrence(compileCron('@yearly'), at('2020-06-01T00:00:00Z'), at('2026-06-01T00:00:00Z')))).toBe('2026-01-01T00:00:00.000Z');
    expect(latestOccurrence(c, at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:59Z'))).toBeNull();
  });

  it('counts them, and says when it stopped counting', () => {
    expect(occurrencesBetween(c, at('2026-01-01T00:00:00Z'), at('2026-01-01T00:10:00Z'))).toEqual({
      first: at('2026-01-01T00:01:00Z'),
      last: at('2026-01-01T00:10:00Z'),
      count: 10,
      countCapped: false,
    });
    expect(occurrencesBetween(c, at('2026-01-01T00:00:00Z'), at('2026-01-01T00:10:00Z'), 4)).toEqual({
      first: at('2026-01-01T00:01:00Z'),
      last: at('2026-01-01T00:10:00Z'),
      count: 4,
      countCapped: true,
    });
    expect(occurrencesBetween(c, at('2026-01-01T00:00:00Z'), at('2026-01-01T00:00:30Z'))).toBeNull();
  });
});

describe('across a year boundary', () => {
  it('a year field stops firing after its last year', () => {
    const c = compileCron('0 2 * * * 2026', 'UTC');
    expect(nextOccurrences(c, at('2026-12-30T12:00:00Z'), 5).map(iso)).toEqual(['2026-12-31T02:00:00.000Z']);
    expect(nextOccurrence(c, at('2026-12-31T02:00:00Z'))).toBeNull();
  });

  it('a year list and range fire in those years only', () => {
    expect(upcoming('0 0 1 1 * 2027,2029', 'UTC', '2026-06-01T00:00:00Z', 3)).toEqual(['2027-01-01T00:00:00.000Z', '2029-01-01T00:00:00.000Z']);
    expect(upcoming('59 23 31 12 * 2026-2027', 'Europe/Paris', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-12-31T22:59:00.000Z',
      '2027-12-31T22:59:00.000Z',
    ]);
  });

  it('crosses New Year in the zone, not in UTC', () => {
    // 00:30 on January 1st in Tokyo is still December 31st in UTC.
    expect(upcoming('30 0 1 1 * *', 'Asia/Tokyo', '2026-12-31T00:00:00Z', 1)).toEqual(['2026-12-31T15:30:00.000Z']);
    expect(upcoming('0 0 0 1 1 * 2027', 'UTC', '2026-12-31T23:59:59Z', 1)).toEqual(['2027-01-01T00:00:00.000Z']);
  });
});

describe('the original six-field form across daylight saving time (America/New_York, 2026)', () => {
  it('`30 2 * * * *` skipped by the jump forward fires once at 03:00 EDT', () => {
    expect(upcoming('30 2 * * * *', 'America/New_York', '2026-03-07T00:00:00Z', 3)).toEqual([
      '2026-03-07T07:30:00.000Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
  });

  it('`30 1 * * * 2026` repeated by the jump back fires once, on its first pass', () => {
    expect(upcoming('30 1 * * * 2026', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
  });
});

describe('in words and upcoming', () => {
  it.each([
    ['0 2 * * * *', 'At 02:00'],
    ['*/5 * * * *', 'Every 5 minutes'],
    ['0 9 * * MON-FRI', 'At 09:00, Monday through Friday'],
    ['0 2 * * * 2027', 'At 02:00, only in 2027'],
    ['*/10 * * * * * *', 'Every 10 seconds'],
    ['@daily', 'At 00:00'],
  ])('describes %j as %j', (cron, words) => {
    expect(describeCron(compileCron(cron, 'UTC'))).toBe(words);
  });

  it('gives local times with their offset in the zone', () => {
    const c = compileCron('30 2 * * * *', 'America/New_York');
    expect(nextOccurrences(c, at('2026-03-07T00:00:00Z'), 2).map((t) => localIso(c.timezone, t))).toEqual(['2026-03-07T02:30:00-05:00', '2026-03-08T03:00:00-04:00']);
    expect(localIso('UTC', at('2026-01-01T02:00:00Z'))).toBe('2026-01-01T02:00:00Z');
    expect(localIso('Asia/Kolkata', at('2026-01-01T02:00:00Z'))).toBe('2026-01-01T07:30:00+05:30');
  });
});
