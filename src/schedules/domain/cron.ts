import { Cron } from 'croner';
import cronstrue from 'cronstrue';
import { BadUserInputError } from '../../shared/errors.js';

/**
 * Cron expressions in a time zone, and the instants they fire at. Pure: every function takes the
 * times it works from; nothing here reads the clock.
 *
 * Syntax, by the number of fields:
 * - 5: standard cron, `minute hour day-of-month month day-of-week`.
 * - 6: the original service's form, `minute hour day-of-month month day-of-week year`, the year
 *   from 1970 to 2099: `0 2 * * * *` is every day at 02:00. (Schedules recorded before Baton read
 *   six fields this way were seconds-first; they keep that meaning, see `SixFieldForm`.)
 * - 7: `second minute hour day-of-month month day-of-week year`, for second-level schedules.
 * - a macro below.
 * Field syntax is croner's: `*` (or `?`, "no specific value", the same), lists `1,5`, ranges `1-5`, steps `*\/15`, `10-50/20` and `5/15` (from 5), names
 * (`JAN`, `MON`), and its extensions `L` (last day of the month, or `5L` the last Friday), `W`
 * (nearest weekday) and `#` (`MON#2`, the second Monday). Day-of-month and day-of-week combine
 * with OR when both are restricted, as in Vixie cron.
 *
 * Daylight saving time, decided here rather than left to croner (whose `timezone` mode moves a
 * skipped time forward by the length of the gap, and can return the same instant twice):
 * - A local time that a jump forward skips fires once, at the first instant after the gap
 *   (America/New_York, 2026-03-08: `30 2 * * *` fires at 03:00 EDT). Several skipped times
 *   collapse into that one firing.
 * - A local time that a jump back repeats fires once, on its first pass (2026-11-01:
 *   `30 1 * * *` fires at 01:30 EDT, not again at 01:30 EST).
 *
 * How: croner enumerates occurrences on the naive local timeline (wall-clock fields, no zone),
 * where it is fast and unambiguous; each naive occurrence is then resolved to an instant in the
 * zone with the rules above.
 */

export const CRON_MACROS: Readonly<Record<string, string>> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

export const DEFAULT_TIMEZONE = 'UTC';

/** How many missed occurrences are counted one by one before a count says "at least". */
export const COUNT_CAP = 1000;

/**
 * How a six-field expression is read: `year` (the original service's `minute hour day-of-month
 * month day-of-week year`), which every schedule created now records, or `seconds` (a leading
 * seconds field), which schedules recorded before that change keep.
 */
export type SixFieldForm = 'year' | 'seconds';

/** The fields of the canonical seven-field pattern, in order. */
export const CRON_FIELDS = ['second', 'minute', 'hour', 'day-of-month', 'month', 'day-of-week', 'year'] as const;
export type CronFieldName = (typeof CRON_FIELDS)[number];

export const MIN_YEAR = 1970;
export const MAX_YEAR = 2099;

/** A parsed expression in a zone. Build it with `compileCron`. */
export interface CompiledCron {
  /** The expression as given, whitespace-normalised (macros kept as written, lower-cased). */
  readonly expression: string;
  /** The seven-field pattern (`second minute hour day-of-month month day-of-week year`) it stands for. */
  readonly pattern: string;
  /** IANA name, as the schedule was given it (case corrected). */
  readonly timezone: string;
  /** Occurrences on the naive local timeline. */
  readonly naive: Cron;
}

/**
 * croner treats a `utcOffset` of 0 as "none given" and falls back to the host's local time, and
 * its `timezone` mode builds an `Intl.DateTimeFormat` per step (about 50x slower). A fixed offset
 * of one minute takes its fast numeric path; naive times are shifted by that minute on the way in
 * and out.
 */
const NAIVE_OFFSET_MIN = 1;
const NAIVE_SHIFT_MS = NAIVE_OFFSET_MIN * 60_000;

/**
 * Normalises an expression and names its fields: the seven-field pattern it stands for, and which
 * field each of the user's fields is. Throws BAD_USER_INPUT on `cron` for a wrong field count.
 */
export function normalizeCron(raw: string, sixFields: SixFieldForm = 'year'): { expression: string; pattern: string; fields: CronFieldName[] } {
  const expression = raw.trim().split(/\s+/).join(' ');
  if (expression === '') throw new BadUserInputError('cron', 'must not be empty');
  if (expression.startsWith('@')) {
    const macro = expression.toLowerCase();
    const pattern = CRON_MACROS[macro];
    if (!pattern) {
      throw new BadUserInputError('cron', `unknown macro ${JSON.stringify(expression)}; use one of ${Object.keys(CRON_MACROS).join(', ')}`);
    }
    return { expression: macro, pattern: `0 ${pattern} *`, fields: [...CRON_FIELDS] };
  }
  const parts = expression.split(' ');
  const fields: CronFieldName[] | undefined =
    parts.length === 5
      ? CRON_FIELDS.slice(1, 6)
      : parts.length === 6
        ? sixFields === 'year'
          ? CRON_FIELDS.slice(1)
          : CRON_FIELDS.slice(0, 6)
        : parts.length === 7
          ? [...CRON_FIELDS]
          : undefined;
  if (!fields) {
    throw new BadUserInputError(
      'cron',
      `expected 5 fields (minute hour day-of-month month day-of-week), 6 (the same and a year), or 7 (second minute hour day-of-month month day-of-week year), got ${parts.length}`,
    );
  }
  const given = parts.map((value, i) => quartzField(fields[i], value));
  const pattern = CRON_FIELDS.map((field) => {
    const i = fields.indexOf(field);
    return i >= 0 ? given[i] : field === 'second' ? '0' : '*';
  }).join(' ');
  return { expression, pattern, fields };
}

/** The smallest and largest value of each field, as croner reads them. */
const FIELD_BOUNDS: Readonly<Record<CronFieldName, readonly [number, number]>> = {
  second: [0, 59],
  minute: [0, 59],
  hour: [0, 23],
  'day-of-month': [1, 31],
  month: [1, 12],
  'day-of-week': [0, 6],
  year: [1970, 2099],
};

/**
 * The two forms of Quartz-style crons (the family of the original service's six fields with a
 * year, `L`, `W` and `#`) that croner reads otherwise or not at all:
 * - `?` (the whole field) is "no specific value": `0 2 ? * MON *` is Mondays. croner turns it into
 *   `*` only after deciding which day fields are restricted, so it counted as a restriction and,
 *   OR-ed with the other day field, fired every day.
 * - `N/step` starts at N: `0/15` is `*\/15`, `5/15` is `5-59/15`. croner refuses a start without
 *   an end.
 */
function quartzField(field: CronFieldName, value: string): string {
  if (value === '?') return '*';
  return value
    .split(',')
    .map((token) => {
      // croner steps `*` from the field's own lowest value, year 0 for the year (which it then
      // refuses): a year step runs from 1970, the first year Baton takes.
      if (field === 'year' && /^\*\/\d+$/.test(token)) return `${MIN_YEAR}-${MAX_YEAR}${token.slice(1)}`;
      const start = /^(\d+)\/(\d+)$/.exec(token);
      if (!start) return token;
      const [min, max] = FIELD_BOUNDS[field];
      const from = Number(start[1]);
      return from === min ? `*/${start[2]}` : from > min && from <= max ? `${from}-${max}/${start[2]}` : token;
    })
    .join(',');
}

/** A refusal that names the cron field at fault in `extensions.cronField` (and in the message). */
function fieldError(field: CronFieldName, value: string, reason: string): BadUserInputError {
  return new BadUserInputError('cron', `${field} field ${JSON.stringify(value)}: ${reason}`, { cronField: field });
}

const croner = (pattern: string): Cron => new Cron(pattern, { paused: true, mode: '7-part', utcOffset: NAIVE_OFFSET_MIN });
/**
 * croner's refusal, without its prefix. croner counts days of the month and months from 0 inside
 * and names that count (`32` was "Invalid value for day: 31", `13` "month: 12"): the value is
 * named as written.
 */
const cronerReason = (error: unknown): string =>
  String((error as Error).message)
    .replace(/^Cron(Pattern|Options)?:\s*/, '')
    .replace(/^Invalid value for (day|nearestWeekdays|month): (-?\d+)$/, (_, target: string, value: string) => `Invalid value for ${target === 'month' ? 'month' : 'day'}: ${Number(value) + 1}`);

/** Years outside 1970–2099 are refused, as the original service did. */
function checkYears(value: string): void {
  for (const token of value.split(',')) {
    const bounds = token.split('/')[0];
    for (const year of bounds.split('-')) {
      if (year === '*' || year === '?') continue;
      if (!/^\d+$/.test(year) || Number(year) < MIN_YEAR || Number(year) > MAX_YEAR) {
        throw fieldError('year', value, `years are ${MIN_YEAR}-${MAX_YEAR}, in numbers, e.g. 2027, 2026-2030 or */2`);
      }
    }
  }
}

/**
 * Parses the seven-field pattern with croner. When croner refuses it, each of the user's fields is
 * tried alone (every other field `*`) to name the one at fault.
 */
function parsePattern(pattern: string, fields: CronFieldName[], written: string[]): Cron {
  const values = pattern.split(' ');
  // Refusals quote the field as the user wrote it (`5/0`, not the `5-59/0` it stands for).
  const asWritten = (field: CronFieldName) => written[fields.indexOf(field)];
  if (fields.includes('year')) checkYears(asWritten('year'));
  try {
    return croner(pattern);
  } catch (error) {
    for (const field of fields) {
      const i = CRON_FIELDS.indexOf(field);
      const alone = CRON_FIELDS.map((_, j) => (j === i ? values[j] : '*')).join(' ');
      try {
        croner(alone);
      } catch (fieldError_) {
        throw fieldError(field, asWritten(field), cronerReason(fieldError_));
      }
    }
    throw new BadUserInputError('cron', cronerReason(error));
  }
}

/**
 * The IANA name of a time zone as the user gave it, with its case corrected; throws BAD_USER_INPUT
 * on `timezone` for an unknown one. Not the runtime's resolved name: ICU resolves a link to its
 * older CLDR name (Node 20: `Asia/Kolkata` is `Asia/Calcutta`, `Europe/Kyiv` `Europe/Kiev`), and
 * newer runtimes stopped doing so, so a schedule read back a zone other than the one it was
 * given, and which one depended on the Node version. A link written all in lower or upper case
 * (`us/eastern`, `ASIA/KOLKATA`) takes the resolved name: its proper case cannot be told.
 */
export function normalizeTimezone(raw: string | null | undefined): string {
  if (raw == null) return DEFAULT_TIMEZONE;
  const name = raw.trim();
  if (name === '') throw new BadUserInputError('timezone', 'must not be empty; omit it for UTC');
  // Offsets such as "+05:00" are time zones to Node 24's Intl but not to Node 20's, and they have no
  // daylight-saving rules: Baton takes IANA names only, on every Node.
  if (/^[+-]\d/.test(name)) throw new BadUserInputError('timezone', `${JSON.stringify(raw)} is an offset, not a time zone; use an IANA name such as "Etc/GMT-5" or "Asia/Karachi"`);
  try {
    const resolved = new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
    const caseUnknown = name === name.toLowerCase() || name === name.toUpperCase();
    return resolved.toLowerCase() === name.toLowerCase() || caseUnknown ? resolved : name;
  } catch {
    throw new BadUserInputError('timezone', `unknown time zone ${JSON.stringify(raw)}; use an IANA name such as "Europe/Paris" or "UTC"`);
  }
}

const compiled = new Map<string, CompiledCron>();

/**
 * Parses `cron` in `timezone` (memoised). Throws BAD_USER_INPUT naming `cron` or `timezone`; a
 * refusal of one field also names it in `extensions.cronField` (`minute`, `day-of-week`, `year`...).
 */
export function compileCron(cron: string, timezone: string | null = DEFAULT_TIMEZONE, sixFields: SixFieldForm = 'year'): CompiledCron {
  const key = `${timezone}\u0000${sixFields}\u0000${cron}`;
  const hit = compiled.get(key);
  if (hit) return hit;
  const zone = normalizeTimezone(timezone);
  const { expression, pattern, fields } = normalizeCron(cron, sixFields);
  const naive = parsePattern(pattern, fields, expression.startsWith('@') ? pattern.split(' ') : expression.split(' '));
  const result: CompiledCron = { expression, pattern, timezone: zone, naive };
  if (compiled.size >= 10_000) compiled.delete(compiled.keys().next().value!);
  compiled.set(key, result);
  return result;
}

/**
 * Compiles and checks that the expression fires at least once after `now`: `0 0 30 2 *` parses
 * but never fires, and is refused.
 */
export function validateCron(cron: string, timezone: string | null, now: number, sixFields: SixFieldForm = 'year'): CompiledCron {
  const c = compileCron(cron, timezone, sixFields);
  if (nextOccurrence(c, now) === null) {
    throw new BadUserInputError('cron', `${JSON.stringify(c.expression)} never fires (no matching date exists, or its years are past)`);
  }
  return c;
}

/** The next `count` occurrences strictly after `after` (fewer when the expression stops firing). */
export function nextOccurrences(c: CompiledCron, after: number, count: number): number[] {
  const out: number[] = [];
  for (let t: number | null = after; out.length < count; ) {
    t = nextOccurrence(c, t);
    if (t === null) break;
    out.push(t);
  }
  return out;
}

/** The first occurrence strictly after `after` (epoch ms), or null when there is none. */
export function nextOccurrence(c: CompiledCron, after: number): number | null {
  let naive = wallTime(c.timezone, after);
  for (let guard = 0; guard < 10_000; guard++) {
    const next = naiveNext(c, naive);
    if (next === null) return null;
    const nextNaive = next.getTime() + NAIVE_SHIFT_MS;
    const at = resolveWallTime(c.timezone, nextNaive);
    if (at > after) return at;
    // `after` is in the second pass of a repeated hour, and this time's first pass is before it:
    // so is that of every repeated time after it. Go on from the end of the repetition rather
    // than one repeated time after another (3,600 steps for an every-second expression).
    naive = Math.max(nextNaive, repetitionEnd(c.timezone, at, after));
  }
  return null;
}

/**
 * The last naive wall time before the end of the repetition that a jump back between `first`
 * (an instant of the first pass) and `after` makes; -Infinity when the clock did not go back.
 */
function repetitionEnd(timezone: string, first: number, after: number): number {
  const firstOffset = offsetAt(timezone, first);
  if (firstOffset <= offsetAt(timezone, after)) return -Infinity;
  // The jump: the first instant after `first` with another offset.
  let lo = first;
  let hi = after;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (offsetAt(timezone, mid) === firstOffset) lo = mid;
    else hi = mid;
  }
  // Wall times up to the jump's, read on the first pass's offset, were all shown before it.
  return hi + firstOffset - 1;
}

/**
 * croner's next naive occurrence. Its search recurses year by year, and for some expressions that
 * never match (`0 0 31 4,6,9,11 *`) it overflows the stack instead of answering null: that is a
 * "never" too.
 */
function naiveNext(c: CompiledCron, naive: number): Date | null {
  try {
    return c.naive.nextRun(new Date(naive - NAIVE_SHIFT_MS));
  } catch (error) {
    if (error instanceof RangeError) return null;
    throw error;
  }
}

/** The last occurrence in (`after`, `atOrBefore`], or null when there is none. */
export function latestOccurrence(c: CompiledCron, after: number, atOrBefore: number): number | null {
  if (atOrBefore <= after) return null;
  // Look back from `atOrBefore` over a doubling window: a few steps whatever the gap's length.
  for (let window = 1000; ; window *= 2) {
    const start = Math.max(after, atOrBefore - window);
    let found = nextOccurrence(c, start);
    if (found !== null && found <= atOrBefore) {
      for (let next = nextOccurrence(c, found); next !== null && next <= atOrBefore; next = nextOccurrence(c, next)) found = next;
      return found;
    }
    if (start === after) return null;
  }
}

export interface OccurrenceRange {
  first: number;
  last: number;
  /** How many occurrences; with `countCapped`, more than this many (counting stops at the cap). */
  count: number;
  countCapped: boolean;
}

/** The occurrences in (`after`, `atOrBefore`], summarised; null when there is none. */
export function occurrencesBetween(c: CompiledCron, after: number, atOrBefore: number, cap = COUNT_CAP): OccurrenceRange | null {
  const first = nextOccurrence(c, after);
  if (first === null || first > atOrBefore) return null;
  let last = first;
  for (let count = 1; ; count++) {
    const next = nextOccurrence(c, last);
    if (next === null || next > atOrBefore) return { first, last, count, countCapped: false };
    if (count === cap) return { first, last: latestOccurrence(c, last, atOrBefore)!, count, countCapped: true };
    last = next;
  }
}

// --- time zones ----------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timezone, f);
  }
  return f;
}

const utcZones = new Map<string, boolean>();
/** Whether a zone is UTC under any of its names (`UTC`, `Etc/UTC`, `Etc/Universal`, `Zulu`...): no Intl work then. */
function isUtc(timezone: string): boolean {
  let utc = utcZones.get(timezone);
  if (utc === undefined) {
    utc = new Intl.DateTimeFormat('en-US', { timeZone: timezone }).resolvedOptions().timeZone === 'UTC';
    if (utcZones.size < 1000) utcZones.set(timezone, utc);
  }
  return utc;
}

/** The wall-clock time in `timezone` at `instant`, as naive epoch ms (the fields read as UTC). */
export function wallTime(timezone: string, instant: number): number {
  if (isUtc(timezone)) return instant;
  const seconds = Math.floor(instant / 1000) * 1000;
  const fields: Record<string, number> = {};
  for (const part of formatter(timezone).formatToParts(new Date(seconds))) {
    if (part.type !== 'literal') fields[part.type] = Number(part.value);
  }
  const naive = Date.UTC(fields.year, fields.month - 1, fields.day, fields.hour === 24 ? 0 : fields.hour, fields.minute, fields.second);
  return naive + (instant - seconds);
}

/** UTC offset in ms at `instant` (wall time minus instant). */
export const offsetAt = (timezone: string, instant: number): number => wallTime(timezone, instant) - instant;

const DAY = 86_400_000;

/**
 * The instant a naive wall-clock time stands for in `timezone`: the earlier of two when a jump
 * back repeats it, and the first instant after the gap when a jump forward skips it.
 */
export function resolveWallTime(timezone: string, naive: number): number {
  if (isUtc(timezone)) return naive;
  const before = naive - offsetAt(timezone, naive - DAY);
  const after = naive - offsetAt(timezone, naive + DAY);
  const candidates = [before, after].filter((at) => wallTime(timezone, at) === naive).sort((a, b) => a - b);
  if (candidates.length > 0) return candidates[0];
  // Skipped by a jump forward: the transition lies between the two candidate instants.
  let lo = Math.min(before, after);
  let hi = Math.max(before, after);
  const loOffset = offsetAt(timezone, lo);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (offsetAt(timezone, mid) === loOffset) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** `instant` as the wall-clock time in `timezone`, ISO 8601 with its UTC offset (`2026-03-08T03:00:00-04:00`). */
export function localIso(timezone: string, instant: number): string {
  const offsetMin = Math.round(offsetAt(timezone, instant) / 60_000);
  const wall = new Date(instant + offsetMin * 60_000).toISOString().slice(0, 19);
  if (offsetMin === 0) return `${wall}Z`;
  const abs = Math.abs(offsetMin);
  return `${wall}${offsetMin < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** The expression in words (cronstrue, 24-hour clock), from its seven-field pattern. */
export function describeCron(c: CompiledCron): string {
  const fields = c.pattern.split(' ');
  // A zero second and any year say nothing: give cronstrue the five standard fields then.
  // `FRI#L` (croner's other spelling of `5L`, the last Friday) is unknown to cronstrue.
  fields[5] = fields[5].replace(/(\w+)#L\b/gi, '$1L');
  // `0-7` (Sunday to Sunday again) is every day; cronstrue says "Sunday through Sunday".
  fields[5] = fields[5].replace(/(^|,)0-7(?=$|,|\/)/, '$10-6');
  const pattern = fields[0] === '0' && fields[6] === '*' ? fields.slice(1, 6).join(' ') : fields.join(' ');
  try {
    return cronstrue.toString(pattern, { use24HourTimeFormat: true });
  } catch {
    // A form cronstrue does not know: the expression itself rather than its "An error occurred".
    return c.expression;
  }
}
