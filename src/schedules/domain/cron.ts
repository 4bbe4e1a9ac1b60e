import { Cron } from 'croner';
import { BadUserInputError } from '../../shared/errors.js';

/**
 * Cron expressions in a time zone, and the instants they fire at. Pure: every function takes the
 * times it works from; nothing here reads the clock.
 *
 * Syntax: 5 fields (`minute hour day-of-month month day-of-week`) or 6 with a leading `second`
 * field, or one of the macros below. Field syntax is croner's: `*`, lists `1,5`, ranges `1-5`,
 * steps `*\/15` and `10-50/20`, names (`JAN`, `MON`), and its extensions `L` (last day of the
 * month, or `5L` the last Friday), `W` (nearest weekday) and `#` (`MON#2`, the second Monday).
 * Day-of-month and day-of-week combine with OR when both are restricted, as in Vixie cron.
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

/** A parsed expression in a zone. Build it with `compileCron`. */
export interface CompiledCron {
  /** The expression as given, whitespace-normalised (macros kept as written, lower-cased). */
  readonly expression: string;
  /** The 5- or 6-field pattern the expression stands for. */
  readonly pattern: string;
  /** Canonical IANA name. */
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

/** Normalises and checks an expression; throws BAD_USER_INPUT on `cron` with the parser's reason. */
export function normalizeCron(raw: string): { expression: string; pattern: string } {
  const expression = raw.trim().split(/\s+/).join(' ');
  if (expression === '') throw new BadUserInputError('cron', 'must not be empty');
  if (expression.startsWith('@')) {
    const macro = expression.toLowerCase();
    const pattern = CRON_MACROS[macro];
    if (!pattern) {
      throw new BadUserInputError('cron', `unknown macro ${JSON.stringify(expression)}; use one of ${Object.keys(CRON_MACROS).join(', ')}`);
    }
    return { expression: macro, pattern };
  }
  const fields = expression.split(' ').length;
  if (fields !== 5 && fields !== 6) {
    throw new BadUserInputError(
      'cron',
      `expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading seconds field, got ${fields}`,
    );
  }
  return { expression, pattern: expression };
}

/** Canonical IANA name of a time zone; throws BAD_USER_INPUT on `timezone` for an unknown one. */
export function normalizeTimezone(raw: string | null | undefined): string {
  if (raw == null) return DEFAULT_TIMEZONE;
  const name = raw.trim();
  if (name === '') throw new BadUserInputError('timezone', 'must not be empty; omit it for UTC');
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    throw new BadUserInputError('timezone', `unknown time zone ${JSON.stringify(raw)}; use an IANA name such as "Europe/Paris" or "UTC"`);
  }
}

const compiled = new Map<string, CompiledCron>();

/** Parses `cron` in `timezone` (memoised). Throws BAD_USER_INPUT naming `cron` or `timezone`. */
export function compileCron(cron: string, timezone: string | null = DEFAULT_TIMEZONE): CompiledCron {
  const key = `${timezone}\u0000${cron}`;
  const hit = compiled.get(key);
  if (hit) return hit;
  const zone = normalizeTimezone(timezone);
  const { expression, pattern } = normalizeCron(cron);
  let naive: Cron;
  try {
    naive = new Cron(pattern, { paused: true, mode: '5-or-6-parts', utcOffset: NAIVE_OFFSET_MIN });
  } catch (error) {
    throw new BadUserInputError('cron', String((error as Error).message).replace(/^Cron(Pattern|Options)?:\s*/, ''));
  }
  const result: CompiledCron = { expression, pattern, timezone: zone, naive };
  if (compiled.size >= 10_000) compiled.delete(compiled.keys().next().value!);
  compiled.set(key, result);
  return result;
}

/**
 * Compiles and checks that the expression fires at least once after `now`: `0 0 30 2 *` parses
 * but never fires, and is refused.
 */
export function validateCron(cron: string, timezone: string | null, now: number): CompiledCron {
  const c = compileCron(cron, timezone);
  if (nextOccurrence(c, now) === null) {
    throw new BadUserInputError('cron', `${JSON.stringify(c.expression)} never fires (no matching date exists)`);
  }
  return c;
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
    naive = nextNaive;
  }
  return null;
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

const isUtc = (timezone: string): boolean => timezone === 'UTC' || timezone === 'Etc/UTC';

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
