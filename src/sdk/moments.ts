/**
 * Moments to wait for, in a time zone: the original service's `Wait().at('15:30').monday()`
 * helpers. A {@link Moment} is resolved against the workflow's deterministic clock when
 * `ctx.sleepUntil(moment)` is called, so replay finds the same instant.
 */

const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;
/** A day of the week, in lower case English: `'sunday'` to `'saturday'` (see {@link onWeekday}). */
export type Weekday = (typeof WEEKDAYS)[number];

/** The next instant (strictly after the workflow's now) matching every field given. */
export interface Moment {
  /** Always `'moment'`: tells a moment from a date in `ctx.sleepUntil`. */
  readonly kind: 'moment';
  /** Wall-clock time `HH:MM` or `HH:MM:SS` (default `00:00` when a day is given, else required). */
  readonly at?: string;
  /** Day of the week. */
  readonly weekday?: Weekday;
  /** Day of the month, 1–31 (months without that day are skipped). */
  readonly dayOfMonth?: number;
  /** IANA time zone of the wall clock (default UTC). */
  readonly timezone?: string;
}

/**
 * The next time the wall clock shows `time` (today if still ahead, else tomorrow).
 * @example
 * await ctx.sleepUntil(at('15:30', 'Europe/Paris'));
 */
export function at(time: string, timezone?: string): Moment {
  return moment({ at: time, timezone });
}

/**
 * The next given weekday, at `time` (default midnight).
 * @example
 * await ctx.sleepUntil(onWeekday('monday', '09:00', 'America/New_York'));
 */
export function onWeekday(weekday: Weekday, time?: string, timezone?: string): Moment {
  return moment({ weekday, at: time, timezone });
}

/** The next Monday at `time` (default midnight); see {@link onWeekday}. */
export const monday = (time?: string, timezone?: string): Moment => onWeekday('monday', time, timezone);
/** The next Tuesday. */
export const tuesday = (time?: string, timezone?: string): Moment => onWeekday('tuesday', time, timezone);
/** The next Wednesday. */
export const wednesday = (time?: string, timezone?: string): Moment => onWeekday('wednesday', time, timezone);
/** The next Thursday. */
export const thursday = (time?: string, timezone?: string): Moment => onWeekday('thursday', time, timezone);
/** The next Friday. */
export const friday = (time?: string, timezone?: string): Moment => onWeekday('friday', time, timezone);
/** The next Saturday. */
export const saturday = (time?: string, timezone?: string): Moment => onWeekday('saturday', time, timezone);
/** The next Sunday. */
export const sunday = (time?: string, timezone?: string): Moment => onWeekday('sunday', time, timezone);

/**
 * The next time it is day `day` of a month, at `time` (default midnight).
 * @example
 * await ctx.sleepUntil(dayOfMonth(1, '08:00', 'Asia/Tokyo')); // the next first of a month
 */
export function dayOfMonth(day: number, time?: string, timezone?: string): Moment {
  return moment({ dayOfMonth: day, at: time, timezone });
}

function moment(fields: Omit<Moment, 'kind'>): Moment {
  const m: Moment = { kind: 'moment', ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) };
  // Fail where the moment is written, not later inside the workflow's replay.
  resolveMoment(m, Date.UTC(2000, 0, 1));
  return m;
}

export const isMoment = (value: unknown): value is Moment => typeof value === 'object' && value !== null && (value as Moment).kind === 'moment';

/** The first instant after `after` (epoch ms) that matches the moment. */
export function resolveMoment(m: Moment, after: number): number {
  const timezone = m.timezone ?? 'UTC';
  // Offsets ("+05:00") are zones to some Node versions' Intl and not others': IANA names only.
  if (/^[+-]\d/.test(timezone)) throw new RangeError(`unknown time zone: ${timezone} (use an IANA name)`);
  let parts: Intl.DateTimeFormat;
  try {
    parts = new Intl.DateTimeFormat('en-US', { timeZone: timezone, year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric', hourCycle: 'h23' });
  } catch {
    throw new RangeError(`unknown time zone: ${timezone}`);
  }
  if (m.at === undefined && m.weekday === undefined && m.dayOfMonth === undefined) throw new RangeError('a moment needs a time, a weekday or a day of the month');
  const time = /^(\d{1,2}):(\d{2})(?::(\d{2}))?$/.exec(m.at ?? '00:00');
  if (!time || Number(time[1]) > 23 || Number(time[2]) > 59 || Number(time[3] ?? 0) > 59) throw new RangeError(`invalid time ${JSON.stringify(m.at)}: expected HH:MM or HH:MM:SS`);
  if (m.weekday !== undefined && !WEEKDAYS.includes(m.weekday)) throw new RangeError(`invalid weekday ${JSON.stringify(m.weekday)}`);
  if (m.dayOfMonth !== undefined && (!Number.isInteger(m.dayOfMonth) || m.dayOfMonth < 1 || m.dayOfMonth > 31)) throw new RangeError(`invalid day of month ${m.dayOfMonth}: expected 1 to 31`);
  const [h, min, s] = [Number(time[1]), Number(time[2]), Number(time[3] ?? 0)];
  const local = wallClock(parts, after);
  // Walk the local calendar day by day (at most ~4 years for a 31st of February-like miss).
  for (let d = 0; d < 1500; d++) {
    const day = new Date(Date.UTC(local.year, local.month - 1, local.day + d));
    if (m.weekday !== undefined && WEEKDAYS[day.getUTCDay()] !== m.weekday) continue;
    if (m.dayOfMonth !== undefined && day.getUTCDate() !== m.dayOfMonth) continue;
    const instant = toInstant(parts, day.getUTCFullYear(), day.getUTCMonth() + 1, day.getUTCDate(), h, min, s);
    if (instant > after) return instant;
  }
  throw new RangeError('no such moment in the next four years');
}

interface Wall {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

function wallClock(format: Intl.DateTimeFormat, instant: number): Wall {
  const get = (type: string) => Number(format.formatToParts(instant).find((p) => p.type === type)!.value);
  return { year: get('year'), month: get('month'), day: get('day'), hour: get('hour'), minute: get('minute'), second: get('second') };
}

/**
 * The instant at which the zone's wall clock shows this local time. A time skipped by a
 * daylight-saving jump resolves to the same wall time after the jump (an hour later); a repeated
 * time resolves to its first pass.
 */
function toInstant(format: Intl.DateTimeFormat, year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  const target = Date.UTC(year, month - 1, day, hour, minute, second);
  let guess = target;
  for (let i = 0; i < 3; i++) {
    const w = wallClock(format, guess);
    const shown = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
    const diff = target - shown;
    if (diff === 0) break;
    guess += diff;
  }
  const shows = (instant: number) => {
    const w = wallClock(format, instant);
    return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  };
  if (shows(guess) !== target) {
    // Skipped by a jump forward: the instant an hour on, which shows the wall time plus the jump.
    return [guess - 3_600_000, guess, guess + 3_600_000].find((t) => shows(t) > target) ?? guess;
  }
  // Prefer the earlier of two instants showing the same wall time (the first pass of a repeated hour).
  const earlier = guess - 3_600_000;
  return shows(earlier) === target ? earlier : guess;
}
