/**
 * The event backlog's decider under random sequences of sends (some large), pauses, resumes, decisions
 * (completed, continuing as new, failing the workflow, failed, lapsed) and retries: releases point
 * at queued events, each once; events reach the code in the order sent; and no decision (as the
 * code gets its history, retries rewound) gets more than EVENTS_PER_DECISION new events.
 */
import { describe, expect, it } from '@jest/globals';
import { replayableHistory } from '../../protocol/workflow-retry.js';
import { EVENTS_PER_DECISION, ExistingWorkflow, WorkflowCommand, WorkflowEvent, WorkflowState, workflowDecider } from './workflow.decider.js';

const K = EVENTS_PER_DECISION;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const dispatched: WorkflowEvent = {
  type: 'WorkflowDispatched',
  data: { workflowId: '0190aaaa-0000-7000-8000-000000000009', appId: 'demo', environment: 'test', name: 'Loop', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: new Date(T0).toISOString() },
};
function rng(seed: number) { return () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff; }; }

describe('fuzz', () => {
  for (let seed = 1; seed <= 30; seed++) it(`seed ${seed}`, () => {
    const r = rng(seed);
    const events: WorkflowEvent[] = [];
    let state: WorkflowState = workflowDecider.initialState();
    const append = (es: WorkflowEvent[]) => { for (const e of es) { const s = { ...e, revision: BigInt(events.length) } as WorkflowEvent; events.push(s); state = workflowDecider.evolve(state, s); } };
    const tryDo = (c: WorkflowCommand) => { try { append(workflowDecider.decide(c, state)); } catch { /* refused */ } };
    append([dispatched]);
    let sent = 0, d = 0, now = T0;
    for (let step = 0; step < 400; step++) {
      now += 1000;
      const ws = state as ExistingWorkflow;
      if (ws.status === 'completed' || ws.status === 'terminated') break;
      const x = r();
      if (x < 0.5) { const n = Math.floor(r() * 300); for (let i = 0; i < n; i++) tryDo({ type: 'DeliverEvent', name: 'u', data: [sent++, 'x'.repeat(r() < 0.1 ? 30000 : 1)] }); }
      else if (x < 0.55) tryDo({ type: 'PauseWorkflow' });
      else if (x < 0.62) tryDo({ type: 'ResumeWorkflow' });
      else if (x < 0.75) tryDo({ type: 'StartDecision', decisionId: `d${++d}`, workerId: 'w', workflows: ['Loop'], now, leaseMs: 60_000 });
      else if (x < 0.9 && ws.decision) {
        const y = r();
        const commands = y < 0.1 ? [{ type: 'ContinueAsNew', seq: ws.seqBase, args: [], at: new Date(now).toISOString(), events: [] }] : y < 0.2 ? [{ type: 'FailWorkflow', error: { message: 'x' } }] : [];
        tryDo({ type: 'CompleteDecision', decisionId: ws.decision.id, commands: commands as any, ids: {} });
      } else if (x < 0.93 && ws.decision) tryDo({ type: 'FailDecision', decisionId: ws.decision.id, code: 'X', message: 'x', historyPosition: null, now });
      else if (x < 0.97) tryDo({ type: 'RetryWorkflow', resetTasks: [], now });
      else tryDo({ type: 'Tick', now: now + 120_000 });
    }
    // Invariants: releases point at queued events, each once, in order; sends reach the code in order.
    const byRev = new Map(events.map((e) => [Number(e.revision), e]));
    const released = new Set<number>();
    const order: number[] = [];
    for (const e of events) {
      if (e.type === 'WorkflowEventReceived') {
        const q = (e.data as any).queuedAt;
        if (q !== undefined) { expect(byRev.get(q)?.type).toBe('WorkflowEventQueued'); expect(released.has(q)).toBe(false); released.add(q); order.push((byRev.get(q)!.data as any).data[0]); }
        else order.push((e.data as any).data[0]);
      }
    }
    for (let i = 1; i < order.length; i++) expect(order[i]).toBeGreaterThan(order[i - 1]);
    // Per decision (as the code gets it, retries rewound), at most K new events.
    const history = replayableHistory(events.map((e) => ({ revision: Number(e.revision), type: e.type, data: e.data as any })));
    let current = 0;
    const completed = new Set(history.filter((e) => e.type === 'DecisionCompleted').map((e) => e.data.decisionId));
    for (const e of history) {
      if (e.type === 'WorkflowEventReceived') current++;
      if (e.type === 'WorkflowContinuedAsNew') current = 0;
      if (e.type === 'DecisionStarted') { expect(current).toBeLessThanOrEqual(K); if (completed.has(e.data.decisionId)) current = 0; }
    }
  });
});
