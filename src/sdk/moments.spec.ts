import { describe, expect, it } from '@jest/globals';
import { at, dayOfMonth, monday, onWeekday, resolveMoment } from './moments.js';

const utc = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe('wait moments', () => {
  it('at(time): today when still ahead, else tomorrow, in the given zone', () => {
    // 10:00 UTC is 11:00 in Paris (winter): 15:30 Paris is 14:30 UTC the same day.
    expect(iso(resolveMoment(at('15:30', 'Europe/Paris'), utc('2026-01-15T10:00:00Z')))).toBe('2026-01-15T14:30:00.000Z');
    // 15:00 UTC is 16:00 in Paris: past 15:30, so tomorrow.
    expect(iso(resolveMoment(at('15:30', 'Europe/Paris'), utc('2026-01-15T15:00:00Z')))).toBe('2026-01-16T14:30:00.000Z');
    // Exactly at the moment: strictly after, so the next day.
    expect(iso(resolveMoment(at('08:00'), utc('2026-01-15T08:00:00Z')))).toBe('2026-01-16T08:00:00.000Z');
  });

  it('follows daylight saving time: the same wall time is another UTC instant in summer', () => {
    expect(iso(resolveMoment(at('09:00', 'America/New_York'), utc('2026-01-10T00:00:00Z')))).toBe('2026-01-10T14:00:00.000Z');
    expect(iso(resolveMoment(at('09:00', 'America/New_York'), utc('2026-07-10T00:00:00Z')))).toBe('2026-07-10T13:00:00.000Z');
    // 02:30 does not exist on the spring-forward day in Paris (29 March 2026): it resolves after the jump.
    expect(iso(resolveMoment(at('02:30', 'Europe/Paris'), utc('2026-03-28T12:00:00Z')))).toBe('2026-03-29T01:30:00.000Z');
    // 02:30 happens twice on the fall-back day (25 October 2026): the first pass.
    expect(iso(resolveMoment(at('02:30', 'Europe/Paris'), utc('2026-10-24T12:00:00Z')))).toBe('2026-10-25T00:30:00.000Z');
  });

  it('weekdays and days of the month', () => {
    // Thursday 15 January 2026 → Monday 19 January.
    expect(iso(resolveMoment(monday('09:00'), utc('2026-01-15T12:00:00Z')))).toBe('2026-01-19T09:00:00.000Z');
    expect(iso(resolveMoment(onWeekday('thursday', '13:00'), utc('2026-01-15T12:00:00Z')))).toBe('2026-01-15T13:00:00.000Z');
    expect(iso(resolveMoment(dayOfMonth(1), utc('2026-01-15T12:00:00Z')))).toBe('2026-02-01T00:00:00.000Z');
    // The 31st skips months without one; across the year's end.
    expect(iso(resolveMoment(dayOfMonth(31, '23:59'), utc('2026-11-15T00:00:00Z')))).toBe('2026-12-31T23:59:00.000Z');
    expect(iso(resolveMoment(dayOfMonth(31), utc('2027-01-31T12:00:00Z')))).toBe('2027-03-31T00:00:00.000Z');
  });

  it('refuses what cannot be a moment where it is written', () => {
    expect(() => at('25:00')).toThrow(RangeError);
    expect(() => at('9h')).toThrow(/HH:MM/);
    expect(() => at('09:00', 'Mars/Olympus')).toThrow(/time zone/);
    expect(() => dayOfMonth(32)).toThrow(/day of month/);
    expect(() => onWeekday('funday' as never)).toThrow(/weekday/);
  });
});
