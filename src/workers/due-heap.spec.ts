import { describe, expect, it } from '@jest/globals';
import type { WorkflowEvent } from '../workflows/domain/workflow.decider.js';
import { ManualClock } from '../shared/clock.js';
import { EngineState } from './engine-state.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const DAY = 86_400_000;
const id = (n: number) => `0190aaaa-0000-7000-8000-${String(n).padStart(12, '0')}`;

const dispatched = (workflowId: string): WorkflowEvent => ({
  type: 'WorkflowDispatched',
  data: { workflowId, appId: 'demo', environment: 'test', name: 'Loop', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: at(0) },
});
const decide = (decisionId: string): WorkflowEvent[] => [
  { type: 'DecisionStarted', data: { decisionId, workerId: 'w', version: 'Loop', startedAt: at(0), leaseExpiresAt: at(1000) } },
  { type: 'DecisionCompleted', data: { decisionId, commands: [] } },
];

/** The engine's heap of due times, as many entries as it holds (live and stale). */
const heapSize = (state: EngineState): number => (state as unknown as { due: { size: number } }).due.size;

describe('EngineState: the heap of due times holds the items that wait on time, not every due time ever set', () => {
  it('a workflow that starts and cancels a 30-day timer 5,000 times holds one live timer at most: the heap stays bounded', () => {
    const clock = new ManualClock(T0);
    const state = new EngineState(clock);
    const wf = id(1);
    const apply = (...events: WorkflowEvent[]) => events.forEach((e) => state.applyWorkflow(wf, e));
    apply(dispatched(wf), ...decide('d0'));
    for (let seq = 0; seq < 5_000; seq++) {
      apply({ type: 'TimerStarted', data: { seq, fireAt: at(30 * DAY) } });
      apply({ type: 'TimerCanceled', data: { seq } });
    }
    // Nothing of this workflow waits on time any more: stale entries must not pile up with its history.
    expect(heapSize(state)).toBeLessThan(2_000);
    // What is live is still due in order once the stale entries went.
    apply({ type: 'TimerStarted', data: { seq: 5_000, fireAt: at(2 * DAY) } }, { type: 'TimerStarted', data: { seq: 5_001, fireAt: at(DAY) } });
    expect(state.takeDue(T0 + DAY)).toEqual([`tm:${wf}#5001`]);
    expect(state.takeDue(T0 + 2 * DAY)).toEqual([`tm:${wf}#5000`]);
  });

  it('5,000 workflows that end with a 30-day timer pending leave no due time behind', () => {
    const clock = new ManualClock(T0);
    const state = new EngineState(clock);
    for (let n = 0; n < 5_000; n++) {
      const wf = id(n);
      const apply = (...events: WorkflowEvent[]) => events.forEach((e) => state.applyWorkflow(wf, e));
      apply(dispatched(wf), ...decide(`d${n}`), { type: 'TimerStarted', data: { seq: 0, fireAt: at(30 * DAY) } });
      apply({ type: 'WorkflowTerminated', data: { reason: 'done' } } as unknown as WorkflowEvent);
    }
    expect(state.workflows.size).toBe(0);
    expect(heapSize(state)).toBeLessThan(2_000);
  });
});
