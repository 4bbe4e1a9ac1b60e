/**
 * `ctx` calls made where nothing can record them.
 *
 * A step's function runs once, live, and is never run on replay (its recorded outcome is handed
 * back instead); a query handler runs at the end of the decisions a worker makes, and not while a
 * run is replayed. `ctx` calls from either were taken as calls of the workflow code:
 * - `ctx.run`, `ctx.sleep`, `ctx.waitForEvent`, `ctx.step` inside a step's function wait on
 *   something only a later decision can settle, while the decision waits on the step: the decision
 *   never ended (in a worker, its heartbeats kept its lease for ever: the workflow hung, a decision
 *   slot held, nothing logged);
 * - `ctx.dispatch` inside a step was recorded by the live decision, but a replay (another worker,
 *   a restart, an evicted run) does not make it: the workflow then failed NON_DETERMINISTIC;
 * - `ctx.random()` / `ctx.uuid()` in a query handler drew from the workflow's sequence in the
 *   worker that held the run and not in a replay: the code saw other values depending on where
 *   its decisions were made (the docs say handlers "must not call ctx methods", but nothing said so);
 *   `ctx.run` there failed the next decision as NON_DETERMINISTIC, naming no query.
 * Such calls now throw at once, saying where they were made.
 */
import { describe, expect, it } from '@jest/globals';
import { defineTask, defineWorkflow } from './definitions.js';
import { HistoryEvent, WorkflowReplay } from './workflow-context.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const WF = '0190aaaa-0000-7000-8000-0000000000s1';
const start = (name: string): HistoryEvent[] => [
  { revision: 0, type: 'WorkflowDispatched', data: { workflowId: WF, name, input: [], seqBase: 0 } },
  { revision: 1, type: 'DecisionStarted', data: { startedAt: new Date(T0).toISOString() } },
];
const task = defineTask('t', () => 1);

/** The decision's commands, or 'never ended' once `ms` have passed without them. */
async function decide(replay: WorkflowReplay, events: HistoryEvent[], ms = 3000): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise((resolve) => (timer = setTimeout(() => resolve('never ended'), ms)));
  try {
    return await Promise.race([replay.feed(events), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

describe('ctx calls inside a step function', () => {
  it.each([
    ['ctx.run', (ctx: any) => ctx.run(task)],
    ['ctx.sleep', (ctx: any) => ctx.sleep('1s')],
    ['ctx.waitForEvent', (ctx: any) => ctx.waitForEvent('go')],
    ['ctx.step', (ctx: any) => ctx.step('inner', () => 5)],
    ['ctx.workflow', (ctx: any) => ctx.workflow('Child')],
  ])('%s: the decision ends, failing the step with an error that says so', async (call, body) => {
    const wf = defineWorkflow('InStep', async (ctx) => ctx.step('outer', () => body(ctx)));
    const commands = await decide(new WorkflowReplay(wf, WF, []), start('InStep'));
    expect(commands).not.toBe('never ended');
    const failed = (commands as Array<{ type: string; error?: { message: string } }>).find((c) => c.type === 'FailWorkflow');
    expect(failed?.error?.message).toContain(call);
    expect(failed?.error?.message).toContain('step');
  });

  it('ctx.dispatch: the live decision records nothing that a replay would not make again', async () => {
    const wf = defineWorkflow('DispatchInStep', async (ctx) => {
      await ctx.step('outer', () => ctx.dispatch(task)).catch(() => 'refused');
      await ctx.sleep('1s');
      return 'done';
    });
    const live = (await decide(new WorkflowReplay(wf, WF, []), start('DispatchInStep'))) as Array<{ type: string; seq: number; name?: string; result?: unknown; error?: unknown }>;
    // As the service records the decision: each step's outcome in an event of its own.
    const step = live.find((c) => c.type === 'RecordStep')!;
    const history: HistoryEvent[] = [
      ...start('DispatchInStep'),
      { revision: 2, type: 'DecisionCompleted', data: { commands: live.map((c) => (c.type === 'RecordStep' ? { type: c.type, seq: c.seq, name: c.name } : c)) } },
      step.error !== undefined
        ? { revision: 3, type: 'StepFailed', data: { seq: step.seq, name: step.name, error: step.error } }
        : { revision: 3, type: 'StepCompleted', data: { seq: step.seq, name: step.name, result: step.result } },
      { revision: 4, type: 'TimerFired', data: { seq: live.find((c) => c.type === 'StartTimer')!.seq } },
      { revision: 5, type: 'DecisionStarted', data: { startedAt: new Date(T0 + 1000).toISOString() } },
    ];
    // Another worker (or this one after a restart) replays the run from its history.
    await expect(new WorkflowReplay(wf, WF, [], history).execute()).resolves.toEqual([{ type: 'CompleteWorkflow', result: 'done' }]);
  });
});

describe('ctx calls inside a query handler', () => {
  const rest = (first: unknown): HistoryEvent[] => [
    { revision: 2, type: 'DecisionCompleted', data: { commands: first } },
    { revision: 3, type: 'TimerFired', data: { seq: 0 } },
    { revision: 4, type: 'DecisionStarted', data: { startedAt: new Date(T0 + 1000).toISOString() } },
  ];

  it.each([
    ['ctx.random', (ctx: any) => ctx.random()],
    ['ctx.uuid', (ctx: any) => ctx.uuid()],
  ])('%s: the run draws the same values whether its worker held it or replayed it, and the answer says why it has none', async (call, read) => {
    const wf = defineWorkflow('QueryDraws', async (ctx) => {
      ctx.onQuery('q', () => read(ctx));
      await ctx.sleep('1s');
      return [ctx.random(), ctx.uuid()];
    });
    // The worker that made the first decision holds the run and answers its queries after it.
    const held = new WorkflowReplay(wf, WF, []);
    const first = await held.feed(start('QueryDraws'));
    const answers = JSON.parse(held.answerQueries()!) as { q: unknown };
    const heldEnd = await held.feed(rest(first));
    // Another worker replays the whole run.
    const replayed = await new WorkflowReplay(wf, WF, [], [...start('QueryDraws'), ...rest(first)]).execute();
    expect(heldEnd).toEqual(replayed);
    expect(answers.q).toEqual({ error: expect.stringContaining(call) });
  });

  it('ctx.run: the answer is an error naming the query, and the next decision of the held run is made', async () => {
    const wf = defineWorkflow('QueryRuns', async (ctx) => {
      ctx.onQuery('q', () => ctx.run(task));
      await ctx.sleep('1s');
      return 'done';
    });
    const held = new WorkflowReplay(wf, WF, []);
    const first = await held.feed(start('QueryRuns'));
    const answers = JSON.parse(held.answerQueries()!) as { q: unknown };
    expect(answers.q).toEqual({ error: expect.stringContaining('ctx.run') });
    await expect(held.feed(rest(first))).resolves.toEqual([{ type: 'CompleteWorkflow', result: 'done' }]);
  });
});
