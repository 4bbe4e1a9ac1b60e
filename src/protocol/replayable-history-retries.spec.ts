import { describe, expect, it } from '@jest/globals';
import { replayableHistory, type RetryHistoryEvent } from './workflow-retry.js';

/**
 * A run whose one task keeps failing and which is retried `retries` times (an operator's
 * `retryWorkflows` on a schedule through an outage): each retry adds a handful of events. Every
 * event counts the reads of its `type`, the work `replayableHistory` does per event.
 */
function retriedRun(retries: number): { history: RetryHistoryEvent[]; reads: () => number } {
  let reads = 0;
  const history: RetryHistoryEvent[] = [];
  const add = (type: string, data: unknown = {}) => {
    const event = { revision: history.length, data } as RetryHistoryEvent;
    Object.defineProperty(event, 'type', { get: () => (reads++, type), enumerable: true });
    history.push(event);
  };
  add('WorkflowDispatched');
  add('DecisionStarted', { decisionId: 'd0' });
  add('DecisionCompleted', { decisionId: 'd0' });
  add('TaskScheduled', { seq: 0 });
  for (let r = 1; r <= retries; r++) {
    add('TaskStarted', { seq: 0, attempt: 1 });
    add('TaskFailed', { seq: 0 });
    add('DecisionStarted', { decisionId: `d${r}` });
    add('DecisionCompleted', { decisionId: `d${r}` });
    add('WorkflowFailed', {});
    add('WorkflowRetried', { resetTasks: [0] });
  }
  return { history, reads: () => reads };
}

describe('replayableHistory of a run retried many times', () => {
  it('reads each event a bounded number of times, however many retries the run holds', () => {
    const perEvent = (retries: number) => {
      const { history, reads } = retriedRun(retries);
      const kept = replayableHistory(history);
      // What the code sees: its one completed decision, and the task it waits on (started again at every retry).
      expect(kept.filter((e) => e.type === 'DecisionStarted')).toHaveLength(1);
      expect(kept.some((e) => e.type === 'TaskFailed' || e.type === 'WorkflowFailed')).toBe(false);
      const before = reads();
      replayableHistory(history);
      return (reads() - before) / history.length;
    };
    const small = perEvent(50);
    const large = perEvent(1_000);
    // Linear work reads each event a constant number of times: the same at 50 retries as at 1,000.
    expect(large).toBeLessThan(Math.max(2 * small, 20));
  });
});
