import { describe, expect, it } from '@jest/globals';
import type { WorkflowEvent } from '../workflows/domain/workflow.decider.js';
import { ManualClock } from '../shared/clock.js';
import { EngineState } from './engine-state.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const id = (n: number) => `0190aaaa-0000-7000-8000-${String(n).padStart(12, '0')}`;
const dispatched = (workflowId: string): WorkflowEvent => ({
  type: 'WorkflowDispatched',
  data: { workflowId, appId: 'demo', environment: 'test', name: 'Sleeper', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: at(0) },
});

describe('EngineState.queueSnapshot (sampled at every /metrics scrape)', () => {
  it('looks at the work that can be claimed, not at every workflow waiting on a timer', () => {
    const state = new EngineState(new ManualClock(T0));
    // 5,000 workflows asleep on a 30-day timer: nothing to claim.
    for (let n = 0; n < 5_000; n++) {
      for (const e of [
        dispatched(id(n)),
        { type: 'DecisionStarted', data: { decisionId: `d${n}`, workerId: 'w', version: 'Sleeper', startedAt: at(0), leaseExpiresAt: at(1000) } },
        { type: 'DecisionCompleted', data: { decisionId: `d${n}`, commands: [] } },
        { type: 'TimerStarted', data: { seq: 0, fireAt: at(30 * 86_400_000) } },
      ] as WorkflowEvent[]) state.applyWorkflow(id(n), e);
    }
    // Three new ones whose first decision waits for a worker.
    for (let n = 5_000; n < 5_003; n++) state.applyWorkflow(id(n), dispatched(id(n)));

    // Count the engine's index entries the snapshot visits.
    const indexed = (state as unknown as { indexed: Map<string, unknown> }).indexed;
    let visited = 0;
    const values = indexed.values.bind(indexed);
    const get = indexed.get.bind(indexed);
    indexed.values = function* () {
      for (const v of values()) {
        visited++;
        yield v;
      }
    } as typeof indexed.values;
    indexed.get = (key: string) => {
      visited++;
      return get(key);
    };
    const { queues } = state.queueSnapshot();
    expect(queues).toEqual([{ appId: 'demo', environment: 'test', kind: 'decision', name: 'Sleeper', depth: 3, oldestSince: T0 }]);
    expect(visited).toBeLessThan(100);
  });
});
