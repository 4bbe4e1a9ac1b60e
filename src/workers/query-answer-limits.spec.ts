/**
 * Query answers over a JSON limit are replaced by `{ error }` and the decision is kept
 * (refusing it stopped the workflow: the same decision carried the same answers again).
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { DEFAULT_LIMITS } from '../shared/limits.js';
import { screenReport } from './worker-input-limits.js';
import type { ReportWorkInput } from './worker-protocol.types.js';

const REF = 'wf:0192f0a0-0000-7000-8000-000000000001';

function screen(queries: string) {
  const input = { appId: 'demo', environment: 'dev', workerId: 'w', decisions: [{ ref: REF, decisionId: 'd1', commands: '[]', queries }] } as ReportWorkInput;
  const { input: screened, rejected } = screenReport(input, DEFAULT_LIMITS);
  const kept = screened.decisions ?? [];
  return { rejected, queries: kept.length === 1 ? (JSON.parse(kept[0].queries!) as Record<string, any>) : null };
}

describe('query answers over a limit', () => {
  it('one answer over a limit is replaced by { error }; the others and the decision are kept', () => {
    const { rejected, queries } = screen(JSON.stringify({ fine: 'ok', long: 'x'.repeat(200_000), wide: Array.from({ length: 10_001 }, () => 0), deep: JSON.parse('['.repeat(65) + ']'.repeat(65)) }));
    expect(rejected).toEqual([]);
    expect(queries!.fine).toBe('ok');
    expect(queries!.long).toEqual({ error: expect.stringContaining('longer than') });
    expect(queries!.wide).toEqual({ error: expect.stringContaining('more than 10000') });
    expect(queries!.deep).toEqual({ error: expect.stringContaining('nested deeper') });
  });

  it('answers over the byte limit together: the largest give way until the rest fits', () => {
    const { rejected, queries } = screen(JSON.stringify({ a: 'a'.repeat(100_000), b: 'b'.repeat(110_000), c: 'c'.repeat(90_000), d: 'small' }));
    expect(rejected).toEqual([]);
    expect(queries!.b).toEqual({ error: expect.stringContaining('together') });
    expect(queries!.a).toHaveLength(100_000);
    expect(queries!.c).toHaveLength(90_000);
    expect(queries!.d).toBe('small');
  });

  it('an answer at the limits is kept as it is; text that is not a JSON object is still refused', () => {
    const deep = JSON.parse('['.repeat(64) + ']'.repeat(64));
    expect(screen(JSON.stringify({ deep, long: 'x'.repeat(131_072) })).queries).toEqual({ deep, long: 'x'.repeat(131_072) });
    for (const bad of ['{', '[]', '"x"']) expect(screen(bad).rejected).toEqual([expect.objectContaining({ code: 'BAD_USER_INPUT', field: 'decisions.queries' })]);
  });
});
