/**
 * The depth limit inside decision commands. A value a worker or client may send
 * (MAX_JSON_DEPTH levels: a task's result, a workflow's input) must be passable through the
 * command that carries it on (a workflow completing with its task's result, a step's result, a
 * task's arguments): the command's own envelope (the commands array and the command object) is
 * not part of the value. And a step whose result is too deep is named, so that the SDK fails
 * that step instead of running it again with every retried decision.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { DEFAULT_LIMITS } from '../shared/limits.js';
import { screenReport } from './worker-input-limits.js';
import type { ReportWorkInput } from './worker-protocol.types.js';

const REF = 'wf:0192f0a0-0000-7000-8000-000000000001';
const DEPTH = DEFAULT_LIMITS.jsonDepth;

/** A JSON value nested `levels` deep (arrays), as its own text measures it. */
const nested = (levels: number): unknown => JSON.parse('['.repeat(levels) + ']'.repeat(levels));

function screen(commands: unknown[]) {
  const input = { appId: 'demo', environment: 'dev', workerId: 'w', decisions: [{ ref: REF, decisionId: 'd1', commands: JSON.stringify(commands) }] } as ReportWorkInput;
  const { input: screened, rejected } = screenReport(input, DEFAULT_LIMITS);
  return { kept: (screened.decisions ?? []).length, rejected };
}

describe('values at MAX_JSON_DEPTH inside decision commands', () => {
  it('a task result at the limit is one a task report may carry', () => {
    const input = { appId: 'demo', environment: 'dev', workerId: 'w', tasks: [{ ref: `${REF}#0`, attemptId: 'a', result: JSON.stringify(nested(DEPTH)) }] } as ReportWorkInput;
    expect(screenReport(input, DEFAULT_LIMITS).rejected).toEqual([]);
  });

  it('a workflow may complete with it, a step may return it, a task may take it as its arguments', () => {
    expect(screen([{ type: 'CompleteWorkflow', result: nested(DEPTH) }])).toEqual({ kept: 1, rejected: [] });
    expect(screen([{ type: 'RecordStep', seq: 0, name: 'rows', result: nested(DEPTH) }])).toEqual({ kept: 1, rejected: [] });
    expect(screen([{ type: 'ScheduleTask', seq: 0, name: 'T', args: nested(DEPTH) }])).toEqual({ kept: 1, rejected: [] });
  });

  it('one level more is refused; for a step, naming the step', () => {
    expect(screen([{ type: 'CompleteWorkflow', result: nested(DEPTH + 1) }]).rejected).toEqual([expect.objectContaining({ code: 'BAD_USER_INPUT', field: 'decisions.commands' })]);
    const { rejected } = screen([{ type: 'RecordStep', seq: 7, name: 'rows', result: nested(DEPTH + 1) }]);
    expect(rejected).toEqual([expect.objectContaining({ code: 'BAD_USER_INPUT', field: 'decisions.commands', message: expect.stringContaining('(RecordStep): the result of step #7 ') })]);
  });
});

describe('event data at MAX_JSON_DEPTH inside decision commands', () => {
  const at = '2030-01-01T00:00:00.000Z';
  it('an event sendEventToWorkflows took (data nested 64 deep) can be carried into the next run, or sent on to other workflows', () => {
    expect(screen([{ type: 'ContinueAsNew', seq: 0, args: [], at, events: [{ name: 'E', data: nested(DEPTH) }] }])).toEqual({ kept: 1, rejected: [] });
    expect(screen([{ type: 'ControlWorkflows', seq: 0, selector: { name: 'Other' }, action: 'send', event: { name: 'E', data: nested(DEPTH) } }])).toEqual({ kept: 1, rejected: [] });
  });
  it('one level more is refused', () => {
    expect(screen([{ type: 'ContinueAsNew', seq: 0, args: [], at, events: [{ name: 'E', data: nested(DEPTH + 1) }] }]).kept).toBe(0);
    expect(screen([{ type: 'ControlWorkflows', seq: 0, selector: { name: 'Other' }, action: 'send', event: { name: 'E', data: nested(DEPTH + 1) } }]).kept).toBe(0);
  });
});
