/**
 * The event backlog: what the code of each decision gets new, as the engine hands the
 * history to workers (replayableHistory: a retry rewinds the failing decision, so the events that
 * decision saw reach the next decision again), stays within EVENTS_PER_DECISION.
 */
import { describe, expect, it } from '@jest/globals';
import { replayableHistory } from '../../protocol/workflow-retry.js';
import type { DecisionCommand } from './workflow-commands.js';
import { EVENTS_PER_DECISION, WorkflowCommand, WorkflowEvent, WorkflowState, workflowDecider } from './workflow.decider.js';

const K = EVENTS_PER_DECISION;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const WF = '0190aaaa-0000-7000-8000-000000000003';
const dispatched: WorkflowEvent = {
  type: 'WorkflowDispatched',
  data: { workflowId: WF, appId: 'demo', environment: 'test', name: 'Loop', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: new Date(T0).toISOString() },
};

class Run {
  events: WorkflowEvent[] = [];
  state: WorkflowState = workflowDecider.initialState();
  constructor(...initial: WorkflowEvent[]) {
    this.append(initial);
  }
  append(events: WorkflowEvent[]): WorkflowEvent[] {
    for (const e of events) {
      const stored = { ...e, revision: BigInt(this.events.length) } as WorkflowEvent;
      this.events.push(stored);
      this.state = workflowDecider.evolve(this.state, stored);
    }
    return events;
  }
  do(command: WorkflowCommand): WorkflowEvent[] {
    return this.append(workflowDecider.decide(command, this.state));
  }
  decide(id: string, commands: DecisionCommand[] = [], ms = 10): WorkflowEvent[] {
    this.do({ type: 'StartDecision', decisionId: id, workerId: 'w1', workflows: ['Loop'], now: T0 + ms, leaseMs: 60_000 });
    return this.do({ type: 'CompleteDecision', decisionId: id, commands, ids: {} });
  }
  /** How many events the code of each decision gets new, in the history as workers get it (retries rewound). */
  newPerDecision(): number[] {
    const history = replayableHistory(this.events.map((e) => ({ revision: Number(e.revision), type: e.type, data: e.data as any })));
    const out: number[] = [];
    let current = 0;
    for (const e of history) {
      if (e.type === 'WorkflowEventReceived') current++;
      if (e.type === 'DecisionStarted') {
        out.push(current);
        current = 0;
      }
    }
    return out;
  }
}

describe('review: a backlog and retries of a failed workflow', () => {
  it('the decision after a retry gets at most EVENTS_PER_DECISION new events, however many times the workflow failed and was retried', () => {
    const run = new Run(dispatched);
    run.decide('d0');
    run.do({ type: 'PauseWorkflow' });
    for (let i = 0; i < 5 * K; i++) run.do({ type: 'DeliverEvent', name: 'update', data: [i] });
    run.do({ type: 'ResumeWorkflow' });
    // Each decision fails the workflow (a task it awaits failed, say), and an operator retries it.
    for (let r = 1; r <= 3; r++) {
      run.decide(`d${r}`, [{ type: 'FailWorkflow', error: { message: 'boom' } }], 10 * r);
      expect(run.state.status).toBe('failed');
      run.do({ type: 'RetryWorkflow', resetTasks: [], now: T0 + 10 * r + 5 });
    }
    run.do({ type: 'StartDecision', decisionId: 'd4', workerId: 'w1', workflows: ['Loop'], now: T0 + 100, leaseMs: 60_000 });
    // The failing decisions are rewound: d4's code gets everything since d0 as new. Releases on each
    // retry piled K more onto it each time (4K here), the size the backlog exists to prevent.
    const perDecision = run.newPerDecision();
    expect(Math.max(...perDecision)).toBeLessThanOrEqual(K);
  });
});
