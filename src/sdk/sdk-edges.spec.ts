/**
 * Edges of the workflow context found by probing WorkflowReplay directly.
 */
import { describe, expect, it } from '@jest/globals';
import { defineWorkflow } from './definitions.js';
import { HistoryEvent, WorkflowReplay } from './workflow-context.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const WF = '0190aaaa-0000-7000-8000-0000000000r1';

const start = (name: string): HistoryEvent[] => [
  { revision: 0, type: 'WorkflowDispatched', data: { workflowId: WF, name, input: [], seqBase: 0 } },
  { revision: 1, type: 'DecisionStarted', data: { startedAt: new Date(T0).toISOString() } },
];

describe('waitForEvent with a timeout too far for a date', () => {
  // A timeout that toMs takes (a finite number, or e.g. '99999999999w') but that puts the timer
  // past the last date JavaScript can write: the call rejects (RangeError from toISOString), but
  // the wait it had already registered stays and takes the next event of that name, which the
  // code never sees. The source's own comment says a bad duration must reject "before any wait
  // is registered (a wait left behind took the next event of that name)".
  it('leaves no wait behind: the next waitForEvent of that name gets the event', async () => {
    const wf = defineWorkflow('FarTimeout', async (ctx) => {
      const first = await ctx.waitForEvent('go', { timeout: '99999999999w' }).then(
        () => 'waited',
        (e: Error) => `refused: ${e.name}`,
      );
      const second = await ctx.waitForEvent('go');
      return [first, second];
    });
    const replay = new WorkflowReplay(wf, WF, []);
    const first = await replay.feed(start('FarTimeout'));
    expect(first).toEqual([]);
    const commands = await replay.feed([
      { revision: 2, type: 'DecisionCompleted', data: { commands: first } },
      { revision: 3, type: 'WorkflowEventReceived', data: { name: 'go', data: [42] } },
      { revision: 4, type: 'DecisionStarted', data: { startedAt: new Date(T0 + 1000).toISOString() } },
    ]);
    expect(commands).toEqual([{ type: 'CompleteWorkflow', result: ['refused: RangeError', ['go', 42]] }]);
  });
});

describe('ctx methods taken off the context', () => {
  // Every ctx method works when taken off the context (`const { run, step } = ctx`) except
  // `sleep`, which calls `this.sleepUntil`: destructured, it throws a TypeError and fails the workflow.
  it('sleep works destructured, as run, step, sleepUntil and waitForEvent do', async () => {
    const wf = defineWorkflow('Destructured', async (ctx) => {
      const { sleep } = ctx;
      await sleep('1s');
      return 'slept';
    });
    const commands = await new WorkflowReplay(wf, WF, [], start('Destructured')).execute();
    expect(commands).toEqual([{ type: 'StartTimer', seq: 0, fireAt: new Date(T0 + 1000).toISOString() }]);
  });
});

describe('an Error whose message or name String() cannot write', () => {
  // toError never throws (a throw there is an unhandled rejection, which ends the worker
  // process), but errorText then wrote `String(error.message)`: an Error whose message is an
  // object without a prototype (or whose message getter throws) threw from the code that records
  // the failure, and the workflow's decision was never made (the rejection went unhandled).
  const unprintable = () => Object.assign(new Error('x'), { message: Object.create(null) as string });
  it('fails the workflow with a description of the error', async () => {
    const wf = defineWorkflow('ThrowsUnprintable', async () => {
      throw unprintable();
    });
    const commands = await new WorkflowReplay(wf, WF, [], start('ThrowsUnprintable')).execute();
    expect(commands).toEqual([{ type: 'FailWorkflow', error: expect.objectContaining({ message: expect.any(String) }) }]);
  });
  it('fails the step with a description of the error', async () => {
    const wf = defineWorkflow('StepThrowsUnprintable', async (ctx) => {
      return ctx.step('bad', () => {
        throw unprintable();
      }).catch((e: Error) => `caught: ${e.name}`);
    });
    const commands = await new WorkflowReplay(wf, WF, [], start('StepThrowsUnprintable')).execute();
    expect(commands).toEqual([
      { type: 'RecordStep', seq: 0, name: 'bad', error: { message: expect.any(String) } },
      { type: 'CompleteWorkflow', result: 'caught: TaskFailedError' },
    ]);
  });
});

describe('a query handler that throws an Error String() cannot write', () => {
  // "One that throws ... answers { error: message } (the decision and the other queries' answers
  // are unaffected)": this one threw from answerQueries, and the worker failed the decision (WORKER_ERROR), again at each retry.
  it('answers { error } and leaves the other answers', async () => {
    const wf = defineWorkflow('QueryThrowsUnprintable', async (ctx) => {
      ctx.onQuery('bad', () => {
        throw Object.assign(new Error('x'), { message: Object.create(null) as string });
      });
      ctx.onQuery('good', () => 'fine');
      await ctx.waitForEvent('never');
    });
    const replay = new WorkflowReplay(wf, WF, [], start('QueryThrowsUnprintable'));
    await replay.execute();
    const answers = JSON.parse(replay.answerQueries()!);
    expect(answers).toEqual({ bad: { error: expect.any(String) }, good: 'fine' });
  });
});

describe("an event literally named '*'", () => {
  // `onEvent('*', handler)` is called as handler(name, ...data) for events no other handler or
  // wait takes. An event whose own name was '*' went through the named path instead and the
  // wildcard handler got its data without the name (handler(...data)).
  it("reaches a wildcard handler as every other event does: handler('*', ...data)", async () => {
    const seen: unknown[][] = [];
    const wf = defineWorkflow('Star', async (ctx) => {
      ctx.onEvent('*', (...args: unknown[]) => {
        seen.push(args);
      });
      await ctx.waitForEvent('stop');
      return seen;
    });
    const replay = new WorkflowReplay(wf, WF, []);
    const first = await replay.feed(start('Star'));
    const commands = await replay.feed([
      { revision: 2, type: 'DecisionCompleted', data: { commands: first } },
      { revision: 3, type: 'WorkflowEventReceived', data: { name: '*', data: [1, 2] } },
      { revision: 4, type: 'WorkflowEventReceived', data: { name: 'other', data: [3] } },
      { revision: 5, type: 'WorkflowEventReceived', data: { name: 'stop', data: [] } },
      { revision: 6, type: 'DecisionStarted', data: { startedAt: new Date(T0 + 1000).toISOString() } },
    ]);
    expect(commands).toEqual([{ type: 'CompleteWorkflow', result: [['*', 1, 2], ['other', 3]] }]);
  });
});
