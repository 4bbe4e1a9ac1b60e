/**
 * An event another workflow sent (`ctx.select(...).send`, carried out by the
 * effects reactor with a `causeId`) must be recognised when the effect is carried out again, "so
 * a replay from an older checkpoint or the reactor running on every instance yields one event,
 * without relying on the store's unique event ids" (ARCHITECTURE, Effects). The effect is carried
 * out again whenever its ControlApplied was not recorded (the store did not answer that append,
 * the instance died in between, or another instance's reactor is behind). A workflow that took
 * the event and then continued as new has dropped its causes (only untaken events carry theirs):
 * the repeat is recorded as a second event, and the new run takes it again. On the embedded store
 * the repeated append reuses the first one's event id and the store answers it as the first
 * append; EventStoreDB checks ids only at the expected position, so it stores the duplicate.
 */
import { describe, expect, it } from '@jest/globals';
import { CARRIED_CAUSES, ExistingWorkflow, WorkflowEvent, WorkflowState, workflowDecider } from './workflow.decider.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const WF = '0190aaaa-0000-7000-8000-0000000000c1';
const dispatched: WorkflowEvent = {
  type: 'WorkflowDispatched',
  data: { workflowId: WF, appId: 'demo', environment: 'test', name: 'Loop', tag: null, input: [[]], parent: null, scheduleId: null, dispatchedAt: at(0) },
};
const started = (decisionId: string, ms: number): WorkflowEvent => ({
  type: 'DecisionStarted',
  data: { decisionId, workerId: 'w1', version: 'Loop', startedAt: at(ms), leaseExpiresAt: at(ms + 60_000) },
});
const fold = (events: WorkflowEvent[]): WorkflowState =>
  events.reduce((s, e, i) => workflowDecider.evolve(s, { ...e, revision: BigInt(i) } as WorkflowEvent), workflowDecider.initialState());

describe('an event sent by another workflow, delivered again after the run that took it continued as new', () => {
  it('is recognised as the same delivery (nothing is recorded)', () => {
    // Run 1 waits for `item`; the effect of a send (cause c-1) delivers it; run 1's next decision
    // takes it and continues as new (nothing untaken to carry).
    const item: WorkflowEvent = { type: 'WorkflowEventReceived', data: { name: 'item', data: ['once'], causeId: 'c-1' } };
    const history: WorkflowEvent[] = [
      dispatched,
      started('d1', 0),
      { type: 'DecisionCompleted', data: { decisionId: 'd1', commands: [] } },
      item,
      started('d2', 10),
    ];
    const state = fold(history);
    expect(workflowDecider.decide({ type: 'DeliverEvent', name: 'item', data: ['once'], causeId: 'c-1' }, state)).toEqual([]);
    const appended = workflowDecider.decide({ type: 'CompleteDecision', decisionId: 'd2', commands: [{ type: 'ContinueAsNew', seq: 1, args: [['once']], at: at(10) }], ids: {} }, state);
    expect(appended.map((e) => e.type)).toEqual(['DecisionCompleted', 'WorkflowContinuedAsNew']);
    const afterContinue = fold([...history, ...appended]);

    // The same effect carried out again (its ControlApplied was not recorded): the same cause.
    const again = workflowDecider.decide({ type: 'DeliverEvent', name: 'item', data: ['once'], causeId: 'c-1' }, afterContinue);
    expect(again).toEqual([]);
  });

  it('carries the newest CARRIED_CAUSES causes, oldest first, which a cold load from the continue-as-new alone knows', () => {
    const history: WorkflowEvent[] = [dispatched, started('d1', 0), { type: 'DecisionCompleted', data: { decisionId: 'd1', commands: [] } }];
    for (let i = 0; i < CARRIED_CAUSES + 44; i++) history.push({ type: 'WorkflowEventReceived', data: { name: 'item', data: [i], causeId: `c-${i}` } });
    history.push(started('d2', 10));
    const state = fold(history);
    const [, continued] = workflowDecider.decide({ type: 'CompleteDecision', decisionId: 'd2', commands: [{ type: 'ContinueAsNew', seq: 1, args: [[]], at: at(10) }], ids: {} }, state);
    expect(continued.type).toBe('WorkflowContinuedAsNew');
    const causes = (continued.data as { causes?: string[] }).causes!;
    expect(causes).toHaveLength(CARRIED_CAUSES);
    expect(causes[0]).toBe('c-44');
    expect(causes.at(-1)).toBe(`c-${CARRIED_CAUSES + 43}`);
    // A cold load starts at the continue-as-new (its stream read from there).
    const cold = workflowDecider.evolve(workflowDecider.initialState(), { ...continued, revision: 500n } as WorkflowEvent) as ExistingWorkflow;
    expect(workflowDecider.decide({ type: 'DeliverEvent', name: 'item', data: [300], causeId: `c-${CARRIED_CAUSES + 43}` }, cold)).toEqual([]);
    expect(workflowDecider.decide({ type: 'DeliverEvent', name: 'item', data: [0], causeId: 'c-0' }, cold)).toHaveLength(1);
    // A run that took no sends carries none.
    const quiet = fold([dispatched, started('d1', 0)]);
    const [, plain] = workflowDecider.decide({ type: 'CompleteDecision', decisionId: 'd1', commands: [{ type: 'ContinueAsNew', seq: 0, args: [[]], at: at(10) }], ids: {} }, quiet);
    expect(plain.data).not.toHaveProperty('causes');
  });

  it("a workflow's pause, resume and terminate of another carry its cause: a repeat changes nothing, after an operator's change too", () => {
    const running = fold([dispatched, started('d1', 0), { type: 'DecisionCompleted', data: { decisionId: 'd1', commands: [] } }]);
    const paused = workflowDecider.decide({ type: 'PauseWorkflow', causeId: 'p-1' }, running);
    expect(paused).toEqual([{ type: 'WorkflowPaused', data: { causeId: 'p-1' } }]);
    const afterPause = workflowDecider.evolve(running, paused[0]) as ExistingWorkflow;
    expect(afterPause.causes?.has('p-1')).toBe(true);
    // An operator resumes it; the same effect carried out again must not pause it a second time.
    const resumed = workflowDecider.evolve(afterPause, { type: 'WorkflowResumed', data: {} });
    expect(workflowDecider.decide({ type: 'PauseWorkflow', causeId: 'p-1' }, resumed)).toEqual([]);
    // An API pause (no cause) still pauses it; another workflow's pause (another cause) too.
    expect(workflowDecider.decide({ type: 'PauseWorkflow' }, resumed)).toEqual([{ type: 'WorkflowPaused', data: {} }]);
    expect(workflowDecider.decide({ type: 'PauseWorkflow', causeId: 'p-2' }, resumed)).toHaveLength(1);
    const terminated = workflowDecider.decide({ type: 'TerminateWorkflow', reason: 'requested by workflow x', causeId: 't-1' }, resumed);
    expect(terminated).toEqual([{ type: 'WorkflowTerminated', data: { reason: 'requested by workflow x', causeId: 't-1' } }]);
    const ended = workflowDecider.evolve(resumed, terminated[0]) as ExistingWorkflow;
    expect(ended.status).toBe('terminated');
    expect(ended.causes?.has('t-1')).toBe(true);
  });
});
