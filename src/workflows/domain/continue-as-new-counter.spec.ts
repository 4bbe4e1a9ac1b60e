/**
 * The `eventsDuringDecision` counter that discards a continue-as-new decision: events outside a
 * decision do not count; every end of a decision resets it; the eager next decision cannot
 * continue as new over an event.
 */
import { describe, expect, it } from '@jest/globals';
import { fold } from '../../shared/decider.js';
import { WorkflowCommand, WorkflowEvent, workflowDecider } from './workflow.decider.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const WF = '0190aaaa-0000-7000-8000-0000000000c1';
const dispatched: WorkflowEvent = {
  type: 'WorkflowDispatched',
  data: { workflowId: WF, appId: 'demo', environment: 'test', name: 'Loop', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: at(0) },
} as never;
const started = (id: string, ms = 0): WorkflowEvent => ({ type: 'DecisionStarted', data: { decisionId: id, workerId: 'w1', version: 'Loop', startedAt: at(ms), leaseExpiresAt: at(ms + 1000) } });
const received = (n: number): WorkflowEvent => ({ type: 'WorkflowEventReceived', data: { name: 'e', data: [n] } });
const can = (id: string): WorkflowCommand => ({ type: 'CompleteDecision', decisionId: id, commands: [{ type: 'ContinueAsNew', seq: 0, args: [], at: at(10) }], ids: {} });
const decide = (given: WorkflowEvent[], c: WorkflowCommand) => workflowDecider.decide(c, fold(workflowDecider, given)).map((e) => e.type);

describe('eventsDuringDecision', () => {
  it('counts only events recorded while a decision is in flight, and every end of a decision resets it', () => {
    // Before the decision: seen by its code, not counted.
    expect(decide([dispatched, received(1), started('d1')], can('d1'))).toEqual(['DecisionCompleted', 'WorkflowContinuedAsNew']);
    expect(decide([dispatched, started('d1'), received(1)], can('d1'))).toEqual(['DecisionDiscarded']);
    for (const end of [
      { type: 'DecisionTimedOut', data: { decisionId: 'd1' } },
      { type: 'DecisionFailed', data: { decisionId: 'd1', code: 'X', message: 'x', historyPosition: null, retryAt: at(0) } },
      { type: 'DecisionDiscarded', data: { decisionId: 'd1', reason: 'x' } },
      { type: 'DecisionCompleted', data: { decisionId: 'd1', commands: [] } },
    ] as WorkflowEvent[]) {
      expect(decide([dispatched, started('d1'), received(1), end, started('d2', 5)], can('d2'))).toEqual(['DecisionCompleted', 'WorkflowContinuedAsNew']);
    }
    // Paused and resumed while d1 ran: the events still count.
    expect(decide([dispatched, started('d1'), { type: 'WorkflowPaused', data: {} }, received(1), { type: 'WorkflowResumed', data: {} }], can('d1'))).toEqual(['DecisionDiscarded']);
    // A new run starts at 0 (its carried events do not count).
    const state = fold(workflowDecider, [dispatched, started('d1'), received(1)]);
    expect((state as { eventsDuringDecision?: number }).eventsDuringDecision).toBe(1);
  });

  it('the eager next decision (CompleteTaskAndDecide) cannot continue as new over an event recorded since its basis', () => {
    const running: WorkflowEvent[] = [
      dispatched,
      started('d1'),
      { type: 'DecisionCompleted', data: { decisionId: 'd1', commands: [{ type: 'ScheduleTask', seq: 0, name: 't', args: [] }] } },
      { type: 'TaskScheduled', data: { seq: 0, name: 't', args: [] } },
      { type: 'TaskStarted', data: { seq: 0, attempt: 1, attemptId: 'a1', workerId: 'w1', startedAt: at(1), leaseExpiresAt: at(1001), deadlineAt: null, retryPolicy: { maxAttempts: 1, initialDelayMs: 1, backoffFactor: 1, maxDelayMs: 1 } } },
    ] as never;
    const eager: WorkflowCommand = {
      type: 'CompleteTaskAndDecide',
      seq: 0,
      attemptId: 'a1',
      result: 1,
      next: { basisDecisionId: 'd1', decisionId: 'd2', workerId: 'w1', version: 'Loop', now: T0 + 20, leaseMs: 1000, commands: [{ type: 'ContinueAsNew', seq: 1, args: [], at: at(20) }], ids: {} },
    } as never;
    expect(decide(running, eager)).toEqual(['TaskCompleted', 'DecisionStarted', 'DecisionCompleted', 'WorkflowContinuedAsNew']);
    expect(decide([...running, received(1)], eager)).toEqual(['TaskCompleted']);
  });
});
