import { describe, expect, it, jest } from '@jest/globals';
import type { WorkflowEvent } from '../workflows/domain/workflow.decider.js';
import { ManualClock } from '../shared/clock.js';
import { EngineState } from './engine-state.js';

/**
 * A change of a workflow's status (pause, resume, its end) re-examines its items in the engine's
 * index. It re-examined every task and timer its run ever had, the completed and fired ones too,
 * none of which can be claimable or due: pause + resume of a workflow whose run completed
 * 100,000 tasks held the event loop 1.5 s (10,000: 114 ms), with nothing open.
 */
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const wf = '0190aaaa-0000-7000-8000-000000000001';
const policy = { maxAttempts: 3, initialDelayMs: 1000, backoffFactor: 2, maxDelayMs: 60_000 };

function workflowWithHistory(done: number): { state: EngineState; apply: (e: WorkflowEvent) => void } {
  const state = new EngineState(new ManualClock(T0));
  let revision = 0n;
  const apply = (e: WorkflowEvent) => state.applyWorkflow(wf, { ...e, revision: revision++ } as WorkflowEvent);
  apply({ type: 'WorkflowDispatched', data: { workflowId: wf, appId: 'demo', environment: 'test', name: 'Loop', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: at(0) } } as WorkflowEvent);
  for (let seq = 0; seq < done; seq++) {
    apply({ type: 'TaskScheduled', data: { seq, name: 'Step', args: [] } } as unknown as WorkflowEvent);
    apply({ type: 'TaskStarted', data: { seq, attempt: 1, attemptId: `a${seq}`, workerId: 'w', startedAt: at(0), leaseExpiresAt: at(30_000), deadlineAt: null, retryPolicy: policy } } as WorkflowEvent);
    apply({ type: 'TaskCompleted', data: { seq, attemptId: `a${seq}`, result: 1 } } as WorkflowEvent);
    apply({ type: 'TimerStarted', data: { seq: done + seq, fireAt: at(1) } } as WorkflowEvent);
    apply({ type: 'TimerFired', data: { seq: done + seq } } as WorkflowEvent);
  }
  return { state, apply };
}

describe('EngineState: a status change re-examines the open items, not the run history', () => {
  it('pause and resume of a workflow that completed 10,000 tasks and fired 10,000 timers re-examine only what is open', () => {
    const { state, apply } = workflowWithHistory(10_000);
    // Open: one task waiting for a worker, one timer a day away.
    apply({ type: 'TaskScheduled', data: { seq: 20_000, name: 'Step', args: [] } } as unknown as WorkflowEvent);
    apply({ type: 'TimerStarted', data: { seq: 20_001, fireAt: at(86_400_000) } } as WorkflowEvent);
    expect(state.candidates('demo', 'test', [], ['Step'], 10, new Set()).map((c) => c.ref)).toEqual([`wf:${wf}#20000`]);

    const examined = jest.spyOn(EngineState.prototype as unknown as { reindexWorkflowItem: () => void }, 'reindexWorkflowItem');
    apply({ type: 'WorkflowPaused', data: {} } as WorkflowEvent);
    expect(state.candidates('demo', 'test', [], ['Step'], 10, new Set())).toEqual([]);
    apply({ type: 'WorkflowResumed', data: {} } as WorkflowEvent);
    const calls = examined.mock.calls.length;
    examined.mockRestore();
    // The open task and timer (and the decision), at each change: not 40,000 items each time.
    expect(calls).toBeLessThanOrEqual(10);
    expect(state.candidates('demo', 'test', [], ['Step'], 10, new Set()).map((c) => c.ref)).toEqual([`wf:${wf}#20000`]);
    expect(state.takeDue(T0 + 86_400_000)).toContain(`tm:${wf}#20001`);
  });
});
