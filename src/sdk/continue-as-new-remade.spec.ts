/**
 * A decision that continues as new while an event arrived is discarded and made again with the
 * event. The worker makes it again by replaying the whole run (a finished run is not held), and
 * that replay runs the code at the discarded decision's DecisionStarted too: when the code
 * continues as new there without waiting on a step (the common case), the event (recorded after
 * that DecisionStarted) is fed after the code ended. A first version built the carried events
 * when `continueAsNew` was called, so the redone decision carried nothing and the event was lost
 * (found in review); they are now built when the decision's commands are handed over.
 */
import { describe, expect, it } from '@jest/globals';
import { fold } from '../shared/decider.js';
import { WorkflowEvent, workflowDecider, WorkflowCommand } from '../workflows/domain/workflow.decider.js';
import { defineTask, defineWorkflow, WorkflowDefinition } from './definitions.js';
import { HistoryEvent, WorkflowReplay } from './workflow-context.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const WF = '0190aaaa-0000-7000-8000-00000000000b';
const POLICY = { maxAttempts: 1, initialDelayMs: 100, backoffFactor: 2, maxDelayMs: 1000 };

class Stream {
  readonly events: WorkflowEvent[] = [];
  constructor(readonly workflow: WorkflowDefinition, readonly input: unknown[]) {
    this.apply({ type: 'DispatchWorkflow', workflowId: WF, appId: 'demo', environment: 'test', name: workflow.name, tag: null, input: input as never[], now: T0 } as never);
  }
  apply(command: WorkflowCommand | Record<string, unknown>): WorkflowEvent[] {
    const events = workflowDecider.decide(command as WorkflowCommand, fold(workflowDecider, this.events));
    this.events.push(...events);
    return events;
  }
  history(): HistoryEvent[] {
    return this.events.map((e, revision) => ({ revision, type: e.type, data: JSON.parse(JSON.stringify(e.data)) }));
  }
  start(id: string): void {
    this.apply({ type: 'StartDecision', decisionId: id, workerId: 'w', workflows: [this.workflow.name], now: T0, leaseMs: 10_000 });
  }
  complete(id: string, commands: unknown[]): WorkflowEvent[] {
    return this.apply({ type: 'CompleteDecision', decisionId: id, commands: JSON.parse(JSON.stringify(commands)), ids: {} });
  }
  /** A worker that does not hold the run: replays the whole history. */
  replay(): Promise<unknown[]> {
    return new WorkflowReplay(this.workflow, WF, this.input, this.history()).execute();
  }
}

const work = defineTask('work', () => 1);

describe('an event recorded while a continue-as-new decision ran', () => {
  it('reaches the new run when the decision is made again (code continues as new right after a task)', async () => {
    const loop = defineWorkflow('Loop', async (ctx, round: number) => {
      await ctx.run(work);
      return ctx.continueAsNew(round + 1);
    });
    const s = new Stream(loop, [0]);
    s.start('d1');
    s.complete('d1', await s.replay()); // ScheduleTask 0
    s.apply({ type: 'StartTask', seq: 0, attemptId: 'a1', workerId: 'w', now: T0, leaseMs: 10_000, retryPolicy: POLICY, timeoutMs: null });
    s.apply({ type: 'CompleteTask', seq: 0, attemptId: 'a1', result: 1 });
    s.start('d2');
    const first = await s.replay();
    expect(first).toEqual([expect.objectContaining({ type: 'ContinueAsNew' })]);
    // The event arrives while d2 is in flight: d2 is discarded.
    s.apply({ type: 'DeliverEvent', name: 'order', data: ['sent during the decision'], causeId: 'c-1' });
    expect(s.complete('d2', first).map((e) => e.type)).toEqual(['DecisionDiscarded']);
    // Made again (a fresh replay of the whole run, as src/sdk/worker.ts does for a run it does not hold).
    s.start('d3');
    const again = await s.replay();
    const recorded = s.complete('d3', again);
    expect(recorded.map((e) => e.type)).toEqual(['DecisionCompleted', 'WorkflowContinuedAsNew', 'WorkflowEventReceived']);
    expect(recorded[2].data).toEqual({ name: 'order', data: ['sent during the decision'], causeId: 'c-1' });
  });

  it('reaches the new run when the first decision continues as new at once', async () => {
    const loop = defineWorkflow('Loop0', async (ctx, round: number) => ctx.continueAsNew(round + 1));
    const s = new Stream(loop, [0]);
    s.start('d1');
    const first = await s.replay();
    s.apply({ type: 'DeliverEvent', name: 'order', data: ['x'] });
    expect(s.complete('d1', first).map((e) => e.type)).toEqual(['DecisionDiscarded']);
    s.start('d2');
    const recorded = s.complete('d2', await s.replay());
    expect(recorded.filter((e) => e.type === 'WorkflowEventReceived')).toHaveLength(1);
  });
});

describe('the bound on carried events', () => {
  it('one recent untaken event larger than MAX_CARRIED_EVENT_BYTES (but within the default 256 KiB payload) does not drop every older one', async () => {
    const loop = defineWorkflow('LoopBig', async (ctx) => {
      await ctx.waitForEvent('go');
      return ctx.continueAsNew(1);
    });
    const s = new Stream(loop, []);
    s.start('d1');
    s.complete('d1', await s.replay());
    s.apply({ type: 'DeliverEvent', name: 'small', data: ['kept?'] });
    s.apply({ type: 'DeliverEvent', name: 'big', data: ['x'.repeat(250_000)] });
    s.apply({ type: 'DeliverEvent', name: 'go', data: [] });
    s.start('d2');
    const warn = console.warn;
    console.warn = () => {};
    const [command] = (await s.replay()) as Array<{ events?: Array<{ name: string }> }>;
    console.warn = warn;
    expect((command.events ?? []).map((e) => e.name)).toEqual(['small']);
  });
});
