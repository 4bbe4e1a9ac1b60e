import { describe, expect, it } from '@jest/globals';
import type { WorkflowEvent } from '../workflows/domain/workflow.decider.js';
import { ManualClock } from '../shared/clock.js';
import { EngineState } from './engine-state.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const id = (n: number) => `0190aaaa-0000-7000-8000-${String(n).padStart(12, '0')}`;

const dispatched = (workflowId: string): WorkflowEvent => ({
  type: 'WorkflowDispatched',
  data: { workflowId, appId: 'demo', environment: 'test', name: 'Order', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: at(0) },
});
/** A workflow that made its first decision as `Order_v1` (so it keeps that version) and then received an event: its next decision is claimable. */
const pinnedAndWoken = (decisionId: string): WorkflowEvent[] => [
  { type: 'DecisionStarted', data: { decisionId, workerId: 'w', version: 'Order_v1', startedAt: at(0), leaseExpiresAt: at(60_000) } },
  { type: 'DecisionCompleted', data: { decisionId, commands: [] } },
  { type: 'WorkflowEventReceived', data: { name: 'go', data: [] } },
];

describe('EngineState: claimable decisions of a version a worker does not serve', () => {
  it('cost a poll of the workers serving another version nothing, however many there are', () => {
    const state = new EngineState(new ManualClock(T0));
    for (let n = 0; n < 5_000; n++) for (const e of [dispatched(id(n)), ...pinnedAndWoken(`d${n}`)]) state.applyWorkflow(id(n), e);
    // A v1 worker is offered them.
    expect(state.candidates('demo', 'test', ['Order_v1'], [], 10, new Set())).toHaveLength(10);
    // Count the workflows a v2-only worker's poll looks at.
    let looked = 0;
    const get = state.workflows.get.bind(state.workflows);
    state.workflows.get = (key: string) => {
      looked++;
      return get(key);
    };
    expect(state.candidates('demo', 'test', ['Order_v2'], [], 10, new Set())).toEqual([]);
    expect(looked).toBeLessThan(100);
  });

  it('do not wake a poll parked for another version', async () => {
    const state = new EngineState(new ManualClock(T0));
    const [started, completed, received] = pinnedAndWoken('d1');
    for (const e of [dispatched(id(1)), started, completed]) state.applyWorkflow(id(1), e);
    let woken = false;
    void state.watch('demo', 'test', ['Order_v2'], []).park(1_000).then(() => (woken = true));
    state.applyWorkflow(id(1), received);
    await Promise.resolve();
    await Promise.resolve();
    // Woken, the v2 poll looks at every claimable v1 decision and parks again: once per v1 decision that becomes claimable.
    expect(woken).toBe(false);
  });
});
