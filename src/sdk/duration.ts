/** Milliseconds, or a string such as `"500ms"`, `"90s"`, `"15m"`, `"2h"`, `"3d"`, `"1w"`. */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd' | 'w'}`;

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

export function toMs(duration: Duration): number {
  if (typeof duration === 'number') {
    if (!Number.isFinite(duration) || duration < 0) throw new RangeError(`invalid duration: ${duration}`);
    return duration;
  }
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)\s*$/.exec(duration);
  if (!match) throw new RangeError(`invalid duration: ${JSON.stringify(duration)} (use e.g. 500, "90s", "3d")`);
  return Number(match[1]) * UNITS[match[2]];
}
