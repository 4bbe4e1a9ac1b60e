/**
 * The screen of worker reports (`screenReport`): a decision whose commands break a rule is
 * rejected on its own, BAD_USER_INPUT naming `decisions.commands` (or `tasks.next.*`) and the
 * command's field, and never reaches the engine; the other items of the report go on. The rules
 * for names, cron expressions, time zones and selectors are the public API's.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { MAX_SEQ, parseRef } from '../protocol/work-refs.js';
import { DEFAULT_LIMITS } from '../shared/limits.js';
import { commandShapes, isIsoDateTime, reportedCommands, screenReport } from './worker-input-limits.js';
import type { ReportWorkInput } from './worker-protocol.types.js';

const WF = '0192f0a0-0000-7000-8000-000000000001';
const REF = `wf:${WF}`;
const NOW = Date.parse('2026-06-01T00:00:00.000Z');

/** Screens one decision with these commands (a JSON text, or a value to stringify); answers what the screen did. */
function screen(commands: unknown) {
  const text = typeof commands === 'string' ? commands : JSON.stringify(commands);
  const input = { appId: 'demo', environment: 'dev', workerId: 'w', decisions: [{ ref: REF, decisionId: 'd1', commands: text }] } as ReportWorkInput;
  const { input: screened, rejected } = screenReport(input, DEFAULT_LIMITS, NOW);
  return { kept: screened.decisions ?? [], rejected };
}

function expectRejected(commands: unknown, ...fragments: string[]) {
  const { kept, rejected } = screen(commands);
  expect(kept).toEqual([]);
  expect(rejected).toEqual([{ ref: REF, code: 'BAD_USER_INPUT', message: expect.stringMatching(/^decisions\.commands: /), field: 'decisions.commands' }]);
  for (const fragment of fragments) expect(rejected[0].message).toContain(fragment);
  return rejected[0].message;
}

function expectKept(commands: unknown) {
  const { kept, rejected } = screen(commands);
  expect(rejected).toEqual([]);
  expect(kept).toHaveLength(1);
}

const task = (seq: unknown, name: unknown = 'T') => ({ type: 'ScheduleTask', seq, name, args: [] });
const timer = (seq: unknown, fireAt: unknown = '2030-01-01T00:00:00.000Z') => ({ type: 'StartTimer', seq, fireAt });
const schedule = (fields: Record<string, unknown>) => ({ type: 'CreateSchedule', seq: 0, kind: 'task', name: 'S', args: [], cron: '*/5 * * * *', timezone: null, tag: null, ...fields });
const control = (fields: Record<string, unknown>) => ({ type: 'ControlWorkflows', seq: 0, selector: { name: 'Other' }, action: 'pause', ...fields });

describe('seq: a whole number a ref can name (0 to MAX_SEQ), one per call', () => {
  it('MAX_SEQ is the largest seq a task ref can carry', () => {
    expect(MAX_SEQ).toBe(999_999_999);
    expect(parseRef(`wf:${WF}#${MAX_SEQ}`)).toEqual({ kind: 'workflowTask', workflowId: WF, seq: MAX_SEQ });
    expect(parseRef(`wf:${WF}#${MAX_SEQ + 1}`)).toBeNull();
  });

  it.each([
    ['1e300', '[{"type":"ScheduleTask","seq":1e300,"name":"T","args":[]}]'],
    ['1000000000 (10 digits)', '[{"type":"ScheduleTask","seq":1000000000,"name":"T","args":[]}]'],
    ['9007199254740993 (rounded by JSON.parse)', '[{"type":"ScheduleTask","seq":9007199254740993,"name":"T","args":[]}]'],
    ['-1', '[{"type":"ScheduleTask","seq":-1,"name":"T","args":[]}]'],
    ['1.5', '[{"type":"ScheduleTask","seq":1.5,"name":"T","args":[]}]'],
    ['"1" (a string)', '[{"type":"ScheduleTask","seq":"1","name":"T","args":[]}]'],
    ['missing', '[{"type":"ScheduleTask","name":"T","args":[]}]'],
    ['1e300 on a timer', '[{"type":"StartTimer","seq":1e300,"fireAt":"2030-01-01T00:00:00.000Z"}]'],
    ['1e300 on a child workflow', '[{"type":"StartChildWorkflow","seq":1e300,"name":"C","args":[],"wait":true}]'],
  ])('a seq of %s is refused', (_label, commands) => {
    expectRejected(commands, 'needs a seq: a whole number from 0 to 999999999');
  });

  it('seq 0 and MAX_SEQ are taken', () => {
    expectKept([task(0), task(MAX_SEQ, 'U')]);
  });

  it('two calls sharing a seq are refused, whatever their types', () => {
    expectRejected([task(0), timer(0)], 'command 1 (StartTimer) reuses seq 0 of command 0 (ScheduleTask)');
    expectRejected([task(4), task(4)], 'reuses seq 4');
    expectRejected([{ type: 'StartChildWorkflow', seq: 2, name: 'C', args: [], wait: false }, { type: 'DispatchTask', seq: 2, name: 'D', args: [] }], 'reuses seq 2');
  });

  it('a CancelTimer names its timer\'s seq (in the same decision or an earlier one), and no other call\'s', () => {
    expectKept([timer(3), { type: 'CancelTimer', seq: 3 }]);
    expectKept([{ type: 'CancelTimer', seq: 7 }]);
    expectRejected([task(3), { type: 'CancelTimer', seq: 3 }], 'command 1 (CancelTimer) names seq 3, which is command 0 (ScheduleTask), not a timer');
  });
});

describe('nothing follows a command that ends the run', () => {
  it.each([
    ['CompleteWorkflow, FailWorkflow', [{ type: 'CompleteWorkflow', result: 1 }, { type: 'FailWorkflow', error: { message: 'x' } }]],
    ['CompleteWorkflow, ScheduleTask', [{ type: 'CompleteWorkflow', result: 1 }, task(0)]],
    ['FailWorkflow, CompleteWorkflow', [{ type: 'FailWorkflow', error: { message: 'x' } }, { type: 'CompleteWorkflow', result: 1 }]],
    ['ContinueAsNew, StartTimer', [{ type: 'ContinueAsNew', seq: 1, args: [], at: '2026-06-01T00:00:00.000Z' }, timer(2)]],
  ])('%s is refused', (_label, commands) => {
    expectRejected(commands, 'which ends the run: nothing may come after it');
  });

  it('calls before the final command are taken', () => {
    expectKept([task(0), { type: 'RecordStep', seq: 1, name: 's', result: 2 }, { type: 'CompleteWorkflow', result: null }]);
  });
});

describe('CreateSchedule: cron and time zone checked as scheduleWorkflow and scheduleTask check them', () => {
  it('a bad cron field is refused, naming cron and the field at fault', () => {
    expectRejected([schedule({ cron: '99 * * * *' })], 'command 0 (CreateSchedule): cron: minute field "99"');
    expectRejected([schedule({ cron: '* * * 13 *' })], 'cron: month field');
    expectRejected([schedule({ cron: 'every day' })], 'cron: ');
    expectRejected([schedule({ cron: '0 0 30 2 *' })], 'cron: ', 'never fires');
    expectRejected([schedule({ cron: '' })], 'cron must be a string of 1 to 256 characters');
    expectRejected([schedule({ cron: '* * * * *\u0000' })], 'cron must not contain control characters');
    expectRejected([schedule({ cron: 5 })], 'cron must be a string');
  });

  it('an unknown time zone, an empty one or an offset is refused, naming timezone', () => {
    expectRejected([schedule({ timezone: 'Mars/Olympus' })], 'command 0 (CreateSchedule): timezone: unknown time zone "Mars/Olympus"');
    expectRejected([schedule({ timezone: '' })], 'timezone: must not be empty');
    expectRejected([schedule({ timezone: '+05:00' })], 'timezone: ', 'is an offset');
    expectRejected([schedule({ timezone: 'x'.repeat(65) })], 'timezone must be a string of at most 64 characters');
    expectRejected([schedule({ timezone: 7 })], 'timezone must be a string');
  });

  it('a good expression is taken, in UTC or in a named zone, for a task or a workflow', () => {
    expectKept([schedule({}), schedule({ seq: 1, cron: '0 9 * * MON-FRI', timezone: 'Europe/Paris', kind: 'workflow', tag: 'daily' }), schedule({ seq: 2, cron: '@hourly' })]);
  });

  it('names and tags follow the public API\'s rules', () => {
    expectRejected([schedule({ name: 'S\u0000' })], 'name must not contain control characters');
    expectRejected([schedule({ tag: '' })], 'tag must be a string of 1 to 256 characters');
    expectRejected([schedule({ kind: 'job' })], 'kind must be workflow or task');
  });
});

describe('names: 1 to 256 characters, no control characters, as NameField', () => {
  it.each([
    ['a task named "T\\u0000x"', [task(0, 'T\u0000x')], 'name must not contain control characters'],
    ['a standalone task named "D\\u0001"', [{ type: 'DispatchTask', seq: 0, name: 'D\u0001', args: [] }], 'name must not contain control characters'],
    ['a child workflow named "C\\u0000"', [{ type: 'StartChildWorkflow', seq: 0, name: 'C\u0000', args: [], wait: true }], 'name must not contain control characters'],
    ['a child workflow tagged with DEL', [{ type: 'StartChildWorkflow', seq: 0, name: 'C', tag: 'a\u007f', args: [], wait: true }], 'tag must not contain control characters'],
    ['a child workflow with an empty name', [{ type: 'StartChildWorkflow', seq: 0, name: '', args: [], wait: true }], 'name must be a string of 1 to 256 characters'],
    ['a child workflow with wait "yes"', [{ type: 'StartChildWorkflow', seq: 0, name: 'C', args: [], wait: 'yes' }], 'wait must be a boolean'],
    ['an event named "e\\u0000"', [control({ action: 'send', event: { name: 'e\u0000', data: [] } })], 'event.name must not contain control characters'],
    ['a selector name with a C1 control', [control({ selector: { name: 'W\u0085' } })], 'selector.name must not contain control characters'],
    ['a step named "s\\u0000"', [{ type: 'RecordStep', seq: 0, name: 's\u0000', result: 1 }], 'name must not contain control characters'],
    ['a task name of 257 characters', [task(0, 'n'.repeat(257))], 'name must be a string of 1 to 256 characters'],
    ['a task name with a lone surrogate', [task(0, 'x\ud800')], 'name must not contain'],
  ])('%s is refused', (_label, commands, fragment) => {
    expectRejected(commands, fragment);
  });

  it('a name of 256 characters, with astral characters, is taken', () => {
    expectKept([task(0, 'n'.repeat(254) + '😀'), { type: 'StartChildWorkflow', seq: 1, name: 'Child_v2', tag: 'email:ada@example.com', args: [], wait: false }]);
  });
});

describe('selectors: the three forms of WorkflowSelectorInput (and { id, name })', () => {
  it('takes { id }, { id, name }, { name } and { name, tag }', () => {
    expectKept([
      control({ seq: 0, selector: { id: WF } }),
      control({ seq: 1, selector: { id: WF, name: 'Other' } }),
      control({ seq: 2, selector: { name: 'Other' } }),
      control({ seq: 3, selector: { name: 'Other', tag: 't' }, action: 'send', event: { name: 'go', data: [1] } }),
    ]);
  });

  it('refuses a tag alone, an id with a tag, an empty selector and a null id', () => {
    expectRejected([control({ selector: { tag: 't' } })], 'selector: a tag alone is not a selector');
    expectRejected([control({ selector: { id: WF, tag: 't' } })], 'selector: an id selector takes no tag');
    expectRejected([control({ selector: {} })], 'selector: give { id }, { name } or { name, tag }');
    expectRejected([control({ selector: { id: null, name: 'Other' } })], 'selector.id must be a string');
    expectRejected([control({ selector: { id: 'x'.repeat(65) } })], 'selector.id must be a string of 1 to 64 characters');
  });
});

describe('dates: timers and continue-as-new take ISO 8601 date-times', () => {
  it('isIsoDateTime takes what toISOString writes, offsets and fractions; not bare numbers, dates alone or days that do not exist', () => {
    for (const good of ['2030-01-01T00:00:00.000Z', '2030-01-01T00:00:00Z', '2030-01-01T00:00Z', '2030-06-30T23:59:59.123456+02:00', '2028-02-29T00:00:00Z', new Date(NOW).toISOString()]) {
      expect([good, isIsoDateTime(good)]).toEqual([good, true]);
    }
    for (const bad of ['0', '1', '2030', '2030-01-01', '2030-01-01T00:00:00', '2030-02-31T00:00:00Z', '2027-02-29T00:00:00Z', '2030-13-01T00:00:00Z', '2030-01-01T24:00:00Z', ' 2030-01-01T00:00:00Z', '2030-01-01T00:00:00+25:00', 5, null]) {
      expect([bad, isIsoDateTime(bad)]).toEqual([bad, false]);
    }
  });

  it('a timer at "0" or on February 31st is refused; a continue-as-new at "1" too', () => {
    expectRejected([timer(0, '0')], 'command 0 (StartTimer) needs an ISO 8601 fireAt');
    expectRejected([timer(0, '2030-02-31T00:00:00Z')], 'needs an ISO 8601 fireAt');
    expectRejected([{ type: 'ContinueAsNew', seq: 0, args: [], at: '1' }], 'command 0 (ContinueAsNew) needs args and an ISO 8601 at');
  });

  it('a continue-as-new carries the events its run never took: each a name and a data array', () => {
    const at = '2030-01-01T00:00:00.000Z';
    expectKept([{ type: 'ContinueAsNew', seq: 0, args: [], at, events: [{ name: 'item', data: [1] }] }]);
    expectRejected([{ type: 'ContinueAsNew', seq: 0, args: [], at, events: {} }], 'events must be an array');
    expectRejected([{ type: 'ContinueAsNew', seq: 0, args: [], at, events: [{ name: '', data: [] }] }], 'events[0].name');
    expectRejected([{ type: 'ContinueAsNew', seq: 0, args: [], at, events: [{ name: 'item', data: 'x' }] }], 'events[0].data');
  });
});

describe('failures: an error as a task report takes it', () => {
  it('refuses a non-string name, a non-boolean nonRetryable, a negative retryAfterMs, a missing message', () => {
    expectRejected([{ type: 'FailWorkflow', error: { message: 'm', name: { x: 1 } } }], 'error.name must be a string');
    expectRejected([{ type: 'FailWorkflow', error: { message: 'm', nonRetryable: 'yes' } }], 'error.nonRetryable must be a boolean');
    expectRejected([{ type: 'FailWorkflow', error: { message: 'm', retryAfterMs: -5 } }], 'error.retryAfterMs must be a whole number');
    expectRejected([{ type: 'FailWorkflow', error: { name: 'E' } }], 'error must be an object with a message');
    expectRejected([{ type: 'RecordStep', seq: 0, name: 's', error: { message: 'm', name: 5 } }], 'error.name must be a string');
  });

  it('takes what the SDK sends', () => {
    expectKept([{ type: 'FailWorkflow', error: { message: 'boom', name: 'TypeError' } }]);
    expectKept([{ type: 'RecordStep', seq: 0, name: 's', error: { message: 'm' } }, { type: 'RecordStep', seq: 1, name: 's' }]);
  });
});

describe('a report with several items', () => {
  it('rejects the bad decision alone; the good one and the task results go on', () => {
    const good = `wf:${WF.replace(/1$/, '2')}`;
    const input = {
      appId: 'demo',
      environment: 'dev',
      workerId: 'w',
      decisions: [
        { ref: REF, decisionId: 'd1', commands: '[{"type":"ScheduleTask","seq":1e300,"name":"T","args":[]}]' },
        { ref: good, decisionId: 'd2', commands: JSON.stringify([task(0), { type: 'CompleteWorkflow', result: 1 }]) },
      ],
      tasks: [{ ref: `task:${WF}`, attemptId: 'a', result: '1' }],
    } as ReportWorkInput;
    const { input: screened, rejected } = screenReport(input, DEFAULT_LIMITS, NOW);
    expect(screened.decisions?.map((d) => d.ref)).toEqual([good]);
    expect(screened.tasks).toHaveLength(1);
    expect(rejected).toEqual([{ ref: REF, code: 'BAD_USER_INPUT', message: expect.stringContaining('decisions.commands: command 0 (ScheduleTask) needs a seq'), field: 'decisions.commands' }]);
  });

  it('a task result\'s next decision is screened the same way: a bad one is dropped, the result kept', () => {
    const ref = `wf:${WF}#0`;
    const next = (commands: unknown[]) => ({ basisDecisionId: 'd0', version: 'F_v1', startedAt: new Date(NOW).toISOString(), commands: JSON.stringify(commands) });
    const input = {
      appId: 'demo',
      environment: 'dev',
      workerId: 'w',
      tasks: [
        { ref, attemptId: 'a1', result: '1', next: next([timer(1e300)]) },
        { ref: `wf:${WF}#1`, attemptId: 'a2', result: '1', next: next([schedule({ seq: 5, timezone: 'Mars/Olympus' })]) },
        { ref: `wf:${WF}#2`, attemptId: 'a3', result: '1', next: next([task(6), task(6, 'U')]) },
        { ref: `wf:${WF}#3`, attemptId: 'a4', result: '1', next: { ...next([task(7)]), startedAt: '0' } },
        { ref: `wf:${WF}#4`, attemptId: 'a5', result: '1', next: next([task(8), { type: 'CompleteWorkflow', result: 1 }]) },
      ],
    } as ReportWorkInput;
    const { input: screened, rejected } = screenReport(input, DEFAULT_LIMITS, NOW);
    expect(screened.tasks?.map((t) => t.next === null)).toEqual([true, true, true, true, false]);
    expect(rejected.map((r) => [r.ref, r.code])).toEqual([
      [ref, 'BAD_USER_INPUT'],
      [`wf:${WF}#1`, 'BAD_USER_INPUT'],
      [`wf:${WF}#2`, 'BAD_USER_INPUT'],
      [`wf:${WF}#3`, 'BAD_USER_INPUT'],
    ]);
    expect(rejected[0].message).toContain('tasks.next.commands: command 0 (StartTimer) needs a seq');
    expect(rejected[1].message).toContain('tasks.next.commands: command 0 (CreateSchedule): timezone: unknown time zone');
    expect(rejected[2].message).toContain('reuses seq 6');
    expect(rejected[3].message).toContain('tasks.next.startedAt: must be an ISO 8601 date-time');
  });
});

describe('task reports: one outcome each', () => {
  it('refuses a result with an error, a result or an error with released; takes each alone', () => {
    const ref = `task:${WF}`;
    const tasks = [
      { ref, attemptId: 'a1', result: '1', error: { message: 'm' } },
      { ref, attemptId: 'a2', error: { message: 'm' }, released: true },
      { ref, attemptId: 'a3', result: '1', released: true },
      { ref, attemptId: 'a4', result: '1', released: false },
      { ref, attemptId: 'a5', error: { message: 'm' }, result: null },
      { ref, attemptId: 'a6', released: true },
    ];
    const { input, rejected } = screenReport({ appId: 'demo', environment: 'dev', workerId: 'w', tasks } as ReportWorkInput, DEFAULT_LIMITS, NOW);
    expect(input.tasks?.map((t) => t.attemptId)).toEqual(['a4', 'a5', 'a6']);
    expect(rejected.map((r) => [r.code, r.message])).toEqual([
      ['BAD_USER_INPUT', 'tasks: an attempt has one outcome: a result, an error or released, not result and error'],
      ['BAD_USER_INPUT', 'tasks: an attempt has one outcome: a result, an error or released, not error and released'],
      ['BAD_USER_INPUT', 'tasks: an attempt has one outcome: a result, an error or released, not result and released'],
    ]);
  });
});

describe('commandShapes (what the engine parses the commands with)', () => {
  it('refuses the same shapes the screen does, with the field given', () => {
    expect(() => commandShapes([task(1e300)], 'tasks.next.commands')).toThrow(/^tasks\.next\.commands: command 0 \(ScheduleTask\) needs a seq/);
    expect(() => commandShapes([task(1), timer(1)], 'decisions.commands')).toThrow(/reuses seq 1/);
    expect(() => commandShapes([{ type: 'CompleteWorkflow', result: 1 }, task(0)], 'decisions.commands')).toThrow(/ends the run/);
    expect(commandShapes([task(0), { type: 'CompleteWorkflow', result: 1 }], 'decisions.commands')).toHaveLength(2);
  });
});

describe('reportedCommands (what the engine records)', () => {
  it('hands the engine the commands the screen parsed, and parses a report that was not screened', () => {
    const commands = [task(0), { type: 'CompleteWorkflow', output: 1 }];
    const { kept } = screen(commands);
    const first = reportedCommands(kept[0]);
    expect(first).toEqual(commands);
    // The same parse, not a second one.
    expect(reportedCommands(kept[0])).toBe(first);
    const unscreened = { commands: JSON.stringify(commands) };
    expect(reportedCommands(unscreened)).toEqual(commands);
    expect(reportedCommands(unscreened)).not.toBe(reportedCommands(unscreened));
    expect(() => reportedCommands({ commands: '[{"type":"Nope"}]' })).toThrow(/command 0 has no known type/);
  });
});

describe('an inline step whose result breaks a JSON limit is named', () => {
  const step = (seq: number, result: unknown) => ({ type: 'RecordStep', seq, name: 'rows', result });
  it('over the limit of one value (an array past MAX_JSON_ARRAY_LENGTH, a string past MAX_JSON_STRING_LENGTH)', () => {
    expectRejected([step(0, 'ok'), step(3, Array.from({ length: 10_001 }, () => 0))], 'command 1 (RecordStep): the result of step #3 holds an array of more than 10000 elements');
    expectRejected([step(4, 'x'.repeat(131_073))], 'command 0 (RecordStep): the result of step #4 holds a string longer than');
  });
  it('also when the decision as a whole broke it (an array past the decision\'s own length limit)', () => {
    expectRejected([step(5, Array.from({ length: 20_001 }, () => 0))], 'command 0 (RecordStep): the result of step #5 holds an array of more than 10000 elements');
  });
  it('a step that failed, or a result within the limits, is taken', () => {
    expectKept([step(0, Array.from({ length: 10_000 }, () => 0)), { type: 'RecordStep', seq: 1, name: 'x', error: { message: 'no' } }]);
  });
});
