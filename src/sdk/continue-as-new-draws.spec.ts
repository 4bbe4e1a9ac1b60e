/**
 * `ctx.uuid()` is documented as "128 bits derived from the workflow id and how many were asked for
 * before", and `ctx.random()` as deterministic: both are meant to differ from one call to the next
 * over a workflow's life. After `ctx.continueAsNew`, the new run (same workflow id, an empty
 * history) started both over: it drew exactly the ids and numbers of the first run, so a
 * long-running loop that keys records or idempotency keys on `ctx.uuid()` wrote duplicates once per
 * run. The runs are told apart by `seqBase` (the new run's calls are numbered after the old one's).
 */
import { describe, expect, it } from '@jest/globals';
import { fold } from '../shared/decider.js';
import { WorkflowCommand, WorkflowEvent, workflowDecider } from '../workflows/domain/workflow.decider.js';
import { defineTask, defineWorkflow } from './definitions.js';
import { HistoryEvent, WorkflowReplay } from './workflow-context.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const WF = '0190aaaa-0000-7000-8000-00000000000c';
const POLICY = { maxAttempts: 1, initialDelayMs: 100, backoffFactor: 2, maxDelayMs: 1000 };

const work = defineTask('work', (_ctx, ..._args: unknown[]) => 1);
const loop = defineWorkflow('IdsLoop', async (ctx, round: number) => {
  const drawn = [ctx.uuid(), ctx.uuid(), ctx.random()];
  await ctx.run(work, round, ...drawn);
  if (round < 1) return ctx.continueAsNew(round + 1);
  return 'done';
});

/** What the task of each run was given: its two uuids and its random number. `recordedBefore` strips `ownDraws` (a continue-as-new recorded before the field). */
async function drawsOfTwoRuns(recordedBefore: boolean): Promise<unknown[][]> {
    const events: WorkflowEvent[] = [];
    const apply = (command: Record<string, unknown>) => {
      const out = workflowDecider.decide(command as unknown as WorkflowCommand, fold(workflowDecider, events));
      events.push(...out);
      return out;
    };
    const history = (from: number): HistoryEvent[] =>
      events.slice(from).map((e, i) => {
        const data = JSON.parse(JSON.stringify(e.data));
        if (recordedBefore) delete data.ownDraws;
        return { revision: from + i, type: e.type, data };
      });
    apply({ type: 'DispatchWorkflow', workflowId: WF, appId: 'demo', environment: 'test', name: 'IdsLoop', tag: null, input: [0], now: T0 });
    const drawn: unknown[][] = [];
    let runFrom = 0;
    let input: unknown[] = [0];
    for (let decision = 1; decision <= 4; decision++) {
      apply({ type: 'StartDecision', decisionId: `d${decision}`, workerId: 'w', workflows: ['IdsLoop'], now: T0 + decision, leaseMs: 10_000 });
      // As the worker does for a run it does not hold: a replay of the current run only.
      const commands = (await new WorkflowReplay(loop, WF, input, history(runFrom)).execute()) as Array<{ type: string; seq: number; args?: unknown[] }>;
      const recorded = apply({ type: 'CompleteDecision', decisionId: `d${decision}`, commands: JSON.parse(JSON.stringify(commands)), ids: {} });
      const task = commands.find((c) => c.type === 'ScheduleTask');
      if (task) {
        drawn.push(task.args!.slice(1));
        apply({ type: 'StartTask', seq: task.seq, attemptId: `a${decision}`, workerId: 'w', now: T0, leaseMs: 10_000, retryPolicy: POLICY, timeoutMs: null });
        apply({ type: 'CompleteTask', seq: task.seq, attemptId: `a${decision}`, result: 1 });
      }
      const continued = recorded.find((e) => e.type === 'WorkflowContinuedAsNew');
      if (continued) {
        runFrom = events.indexOf(continued);
        input = (continued.data as { input: unknown[] }).input;
      }
      if (recorded.some((e) => e.type === 'WorkflowCompleted')) break;
    }
    expect(drawn).toHaveLength(2);
    return drawn;
}

describe('ctx.uuid() and ctx.random() across continueAsNew', () => {
  it('draw new values in the new run, not the first run over again', async () => {
    const [first, second] = await drawsOfTwoRuns(false);
    expect(second[0]).not.toBe(first[0]);
    expect(second[1]).not.toBe(first[1]);
    expect(second[2]).not.toBe(first[2]);
  });

  it('draw what they drew when the continue-as-new was recorded before runs drew their own (a replay stays deterministic)', async () => {
    const [first, second] = await drawsOfTwoRuns(true);
    expect(second).toEqual(first);
    // The first run's values do not depend on it.
    expect((await drawsOfTwoRuns(false))[0]).toEqual(first);
  });
});
