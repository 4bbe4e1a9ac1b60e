/**
 * A backlog of events (sent while a workflow is paused, or while no worker runs) reaches its code
 * in parts: at most EVENTS_PER_DECISION new events a decision. More are recorded as
 * `WorkflowEventQueued` and released, in order, as `WorkflowEventReceived { queuedAt }` (a
 * reference to the queued event, no copy of its data) with each decision that leaves the run
 * going; a continue-as-new carries the references; causes stay exactly-once. The state keeps two
 * numbers a queued event, never its data, and refuses a send past MAX_QUEUED_EVENTS.
 */
import { describe, expect, it } from '@jest/globals';
import { replayableHistory } from '../../protocol/workflow-retry.js';
import type { DecisionCommand } from './workflow-commands.js';
import { EVENTS_PER_DECISION, MAX_QUEUED_EVENTS, RELEASE_BYTES, ExistingWorkflow, WorkflowCommand, WorkflowEvent, WorkflowState, workflowDecider } from './workflow.decider.js';

const K = EVENTS_PER_DECISION;
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const WF = '0190aaaa-0000-7000-8000-000000000002';
const dispatched: WorkflowEvent = {
  type: 'WorkflowDispatched',
  data: { workflowId: WF, appId: 'demo', environment: 'test', name: 'Loop', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: at(0) },
};

/** A stream: each decide's events appended (with revisions) and folded, as the engine does. */
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
  send(i: number | string, causeId?: string): WorkflowEvent[] {
    return this.do({ type: 'DeliverEvent', name: 'update', data: [i], ...(causeId ? { causeId } : {}) });
  }
  decide(id: string, commands: DecisionCommand[] = [], ms = 10): WorkflowEvent[] {
    this.do({ type: 'StartDecision', decisionId: id, workerId: 'w1', workflows: ['Loop'], now: T0 + ms, leaseMs: 60_000 });
    return this.do({ type: 'CompleteDecision', decisionId: id, commands, ids: {} });
  }
  /** The name and data an event carries to the code: a release's are those of the queued event it points at. */
  sent(e: WorkflowEvent): { name: string; data: unknown[]; causeId?: string } {
    if (e.type !== 'WorkflowEventReceived' && e.type !== 'WorkflowEventQueued') throw new Error(`not an event sent: ${e.type}`);
    if (e.type === 'WorkflowEventReceived' && e.data.queuedAt !== undefined) {
      const queued = this.events[e.data.queuedAt];
      expect(queued.type).toBe('WorkflowEventQueued');
      return queued.data as { name: string; data: unknown[] };
    }
    return e.data as { name: string; data: unknown[] };
  }
  get ws(): ExistingWorkflow {
    return this.state as ExistingWorkflow;
  }
  /** The data of the events the code of each decision got new (received between two DecisionStarteds). */
  newPerDecision(): unknown[][] {
    const out: unknown[][] = [];
    let current: unknown[] = [];
    for (const e of this.events) {
      if (e.type === 'WorkflowEventReceived') current.push(this.sent(e).data[0]);
      if (e.type === 'DecisionStarted') {
        out.push(current);
        current = [];
      }
    }
    return [...out, current];
  }
  /**
   * How many events the code of each decision gets new in the history as workers get it
   * (`replayableHistory`: a retry rewinds the failing decision, so what it saw comes again).
   */
  newPerDecisionReplayed(): number[] {
    const history = replayableHistory(this.events.map((e) => ({ revision: Number(e.revision), type: e.type, data: e.data as never })));
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

const types = (events: WorkflowEvent[]) => events.map((e) => e.type);
const count = (events: WorkflowEvent[], type: string) => events.filter((e) => e.type === type).length;

describe('events beyond EVENTS_PER_DECISION', () => {
  it('are queued once the run has K events its code has not seen; each completed decision releases the next K, in order', () => {
    const run = new Run(dispatched);
    run.decide('d1');
    run.do({ type: 'PauseWorkflow' });
    for (let i = 0; i < 2.5 * K; i++) run.send(i);
    expect(count(run.events, 'WorkflowEventReceived')).toBe(K);
    expect(count(run.events, 'WorkflowEventQueued')).toBe(1.5 * K);
    expect(run.ws.queued?.size).toBe(1.5 * K);

    // Resume: the run already has K unseen, nothing is released yet.
    expect(types(run.do({ type: 'ResumeWorkflow' }))).toEqual(['WorkflowResumed']);
    const first = run.decide('d2');
    expect(types(first.slice(0, 1))).toEqual(['DecisionCompleted']);
    expect(first.slice(1).every((e) => e.type === 'WorkflowEventReceived' && e.data.queuedAt !== undefined && e.data.data === undefined)).toBe(true);
    expect(first).toHaveLength(1 + K);
    run.decide('d3');
    run.decide('d4');
    expect(run.ws.queued).toBeUndefined();
    const got = run.newPerDecision();
    // Before d1: none; d2 got the first K (received while paused); d3 the next K; d4 the last half K; nothing after.
    expect(got.map((g) => g.length)).toEqual([0, K, K, K / 2, 0]);
    expect(got.flat()).toEqual(Array.from({ length: 2.5 * K }, (_, i) => i));
  });

  it('while earlier events are queued, a new one is queued too (order kept), even when a decision made room', () => {
    const run = new Run(dispatched);
    for (let i = 0; i < K + 2; i++) run.send(i);
    // The first decision starts; an event sent while it runs goes behind the two kept back.
    run.do({ type: 'StartDecision', decisionId: 'd1', workerId: 'w1', workflows: ['Loop'], now: T0, leaseMs: 60_000 });
    expect(types(run.send('late'))).toEqual(['WorkflowEventQueued']);
    const done = run.do({ type: 'CompleteDecision', decisionId: 'd1', commands: [], ids: {} });
    expect(done.slice(1).map((e) => run.sent(e).data[0])).toEqual([K, K + 1, 'late']);
    // Nothing kept back any more: the next event is received at once.
    expect(types(run.send('next'))).toEqual(['WorkflowEventReceived']);
  });

  it('counts what arrived during a decision against the next one: events received while it ran leave less room', () => {
    const run = new Run(dispatched);
    for (let i = 0; i < K + 5; i++) run.send(i); // K received, 5 queued
    run.do({ type: 'StartDecision', decisionId: 'd1', workerId: 'w1', workflows: ['Loop'], now: T0, leaseMs: 60_000 });
    // The code sees K; none of the queued are released before its completion.
    const done = run.do({ type: 'CompleteDecision', decisionId: 'd1', commands: [], ids: {} });
    expect(done).toHaveLength(6);
    expect(run.ws.unseen).toBe(5);
  });

  it('a decision that fails or times out releases nothing: the one made again sees the same K', () => {
    const run = new Run(dispatched);
    for (let i = 0; i < K + 3; i++) run.send(i);
    run.do({ type: 'StartDecision', decisionId: 'd1', workerId: 'w1', workflows: ['Loop'], now: T0, leaseMs: 60_000 });
    expect(types(run.do({ type: 'FailDecision', decisionId: 'd1', code: 'DECISION_REJECTED', message: 'too big', historyPosition: null, now: T0 }))).toEqual(['DecisionFailed']);
    expect(run.ws.queued?.size).toBe(3);
    run.decide('d2', [], 5_000);
    expect(run.ws.queued).toBeUndefined();
  });

  it('a decision that ends the workflow drops the queue with the run, as received events are dropped', () => {
    const run = new Run(dispatched);
    for (let i = 0; i < K + 3; i++) run.send(i);
    const done = run.decide('d1', [{ type: 'CompleteWorkflow', result: 1 }]);
    expect(types(done)).toEqual(['DecisionCompleted', 'WorkflowCompleted']);
    expect(run.do({ type: 'DeliverEvent', name: 'update', data: [0] })).toEqual([]);
  });

  it('a continue-as-new carries the queue into the new run after the untaken events, as references to where the events are recorded', () => {
    const run = new Run(dispatched);
    for (let i = 0; i < K + 10; i++) run.send(i);
    const queuedAt = run.events.filter((e) => e.type === 'WorkflowEventQueued').map((e) => Number(e.revision));
    const untaken = [{ name: 'update', data: ['u'] }];
    const done = run.decide('d1', [{ type: 'ContinueAsNew', seq: 0, args: [], at: at(10), events: untaken }]);
    expect(types(done.slice(0, 3))).toEqual(['DecisionCompleted', 'WorkflowContinuedAsNew', 'WorkflowEventReceived']);
    // The new run's first event lists where the kept-back events are (numbers), not their data.
    const continued = done[1] as Extract<WorkflowEvent, { type: 'WorkflowContinuedAsNew' }>;
    expect(continued.data.queued).toEqual({ at: queuedAt, bytes: queuedAt.map((r) => JSON.stringify((run.events[r].data as { data: unknown[] }).data).length) });
    const carried = done.slice(3);
    expect(carried.map((e) => e.data)).toEqual(queuedAt.map((r) => ({ queuedAt: r })));
    expect(carried.map((e) => run.sent(e).data[0])).toEqual(Array.from({ length: 10 }, (_, i) => K + i));
    expect(run.ws.run).toBe(2);
    expect(run.ws.unseen).toBe(11);
    expect(run.ws.queued).toBeUndefined();

    // A bigger backlog: the new run's first decision gets K (the untaken first), the rest stay queued where they are.
    const big = new Run(dispatched);
    for (let i = 0; i < 3 * K; i++) big.send(i);
    const carriedBig = big.decide('d1', [{ type: 'ContinueAsNew', seq: 0, args: [], at: at(10), events: [] }]).slice(2);
    expect(count(carriedBig, 'WorkflowEventReceived')).toBe(K);
    expect(count(carriedBig, 'WorkflowEventQueued')).toBe(0);
    expect(big.ws.queued?.size).toBe(K);
    // A cold load of the new run (from its WorkflowContinuedAsNew on) folds to the same queue.
    const from = big.events.findIndex((e) => e.type === 'WorkflowContinuedAsNew');
    const cold = big.events.slice(from).reduce((s, e) => workflowDecider.evolve(s, e), workflowDecider.initialState()) as ExistingWorkflow;
    expect(cold.queued?.toArray()).toEqual(big.ws.queued?.toArray());
    expect(cold.unseen).toBe(K);
    // The new run's decisions take the rest, in order, each event once.
    big.decide('d2');
    big.decide('d3');
    expect(big.ws.queued).toBeUndefined();
    const afterContinue = big.events.slice(from).filter((e) => e.type === 'WorkflowEventReceived').map((e) => big.sent(e).data[0]);
    expect(afterContinue).toEqual(Array.from({ length: 2 * K }, (_, i) => K + i));
  });

  it('a queued send from another workflow is recognised when the effect is carried out again, queued, released or carried over', () => {
    const run = new Run(dispatched);
    for (let i = 0; i < K; i++) run.send(i);
    expect(types(run.send('x', 'cause-1'))).toEqual(['WorkflowEventQueued']);
    expect(run.send('x', 'cause-1')).toEqual([]);
    run.decide('d1');
    expect(run.events.filter((e) => e.type === 'WorkflowEventReceived' && run.sent(e).causeId === 'cause-1')).toHaveLength(1);
    expect(run.send('x', 'cause-1')).toEqual([]);
    // Queued, then carried into a new run: still known there.
    for (let i = 0; i < K + 1; i++) run.send(i);
    run.send('y', 'cause-2');
    run.decide('d2', [{ type: 'ContinueAsNew', seq: 0, args: [], at: at(10) }]);
    expect(run.ws.run).toBe(2);
    expect(run.send('y', 'cause-2')).toEqual([]);
  });

  it('a retried workflow releases what its failure left queued, once the decision made again (which gets the K its failing one saw) completes', () => {
    const run = new Run(dispatched);
    for (let i = 0; i < K + 4; i++) run.send(i);
    run.decide('d1', [{ type: 'FailWorkflow', error: { message: 'boom' } }]);
    expect(run.ws.status).toBe('failed');
    // The retry rewinds d1 (replayableHistory): its K events are new again to the next decision.
    const retried = run.do({ type: 'RetryWorkflow', resetTasks: [], now: T0 + 100 });
    expect(types(retried)).toEqual(['WorkflowRetried']);
    expect(run.ws.unseen).toBe(K);
    expect(types(run.decide('d2', [], 200))).toEqual(['DecisionCompleted', ...Array<string>(4).fill('WorkflowEventReceived')]);
  });

  it('a pause alone queues nothing: a few events sent to a paused workflow are received, as before', () => {
    const run = new Run(dispatched);
    run.decide('d1');
    run.do({ type: 'PauseWorkflow' });
    expect(types(run.send(1))).toEqual(['WorkflowEventReceived']);
    expect(types(run.do({ type: 'ResumeWorkflow' }))).toEqual(['WorkflowResumed']);
  });
});

describe('a release', () => {
  it('takes at most RELEASE_BYTES of event data, and always one event', () => {
    const run = new Run(dispatched);
    for (let i = 0; i < K; i++) run.send(i);
    for (let i = 0; i < 10; i++) run.do({ type: 'DeliverEvent', name: 'big', data: ['x'.repeat(RELEASE_BYTES / 4)] });
    const first = run.decide('d1');
    // Three of 16 KiB fit in 64 KiB with their quotes; the fourth goes over.
    expect(count(first, 'WorkflowEventReceived')).toBe(3);
    run.do({ type: 'DeliverEvent', name: 'huge', data: ['x'.repeat(2 * RELEASE_BYTES)] });
    run.decide('d2');
    run.decide('d3');
    run.decide('d4');
    const fourth = run.decide('d5');
    expect(fourth.filter((e) => e.type === 'WorkflowEventReceived').map((e) => run.sent(e).name)).toEqual(['huge']);
  });
});

describe('the state of a backlog', () => {
  it('holds two numbers a queued event (where it is recorded, the size of its data), never its name or data', () => {
    const run = new Run(dispatched);
    for (let i = 0; i < K; i++) run.send(i);
    for (let i = 0; i < 50; i++) run.do({ type: 'DeliverEvent', name: 'secret-name', data: [`secret-data-${i}`, { big: 'x'.repeat(1000) }], causeId: `cause-${i}` });
    expect(run.ws.queued?.size).toBe(50);
    const queuedEvents = run.events.filter((e) => e.type === 'WorkflowEventQueued');
    expect(run.ws.queued!.toArray()).toEqual(queuedEvents.map((e) => ({ at: Number(e.revision), bytes: Buffer.byteLength(JSON.stringify((e.data as { data: unknown[] }).data)) })));
    for (const q of run.ws.queued!) expect(Object.keys(q).sort()).toEqual(['at', 'bytes']);
    const held = JSON.stringify(run.state, (_, v) => (typeof v === 'bigint' ? String(v) : v));
    expect(held).not.toContain('secret-data');
    expect(held).not.toContain('secret-name');
    expect(held).not.toContain('xxxxxxxxxx');
    // Their releases point at them and copy nothing.
    const released = run.decide('d1').filter((e) => e.type === 'WorkflowEventReceived');
    expect(released.map((e) => e.data)).toEqual(queuedEvents.map((e) => ({ queuedAt: Number(e.revision) })));
    expect(JSON.stringify(released)).not.toContain('secret');
  });

  it(`refuses a send past MAX_QUEUED_EVENTS (${MAX_QUEUED_EVENTS}) with RATE_LIMITED and records nothing; takes sends again once a decision released some`, () => {
    const run = new Run(dispatched);
    for (let i = 0; i < K + MAX_QUEUED_EVENTS; i++) run.send(i);
    expect(run.ws.queued?.size).toBe(MAX_QUEUED_EVENTS);
    const before = { events: run.events.length, state: run.state };
    let refused: unknown;
    try {
      run.send('one too many');
    } catch (error) {
      refused = error;
    }
    expect(refused).toMatchObject({ code: 'RATE_LIMITED', details: { limit: 'MAX_QUEUED_EVENTS', workflowId: WF } });
    expect((refused as Error).message).toContain('MAX_QUEUED_EVENTS');
    expect(run.events).toHaveLength(before.events);
    expect(run.state).toBe(before.state);
    run.decide('d1');
    expect(run.ws.queued?.size).toBe(MAX_QUEUED_EVENTS - K);
    expect(types(run.send('room again'))).toEqual(['WorkflowEventQueued']);
  });
});

describe('a backlog and retries of a failed workflow', () => {
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
    const perDecision = run.newPerDecisionReplayed();
    expect(Math.max(...perDecision)).toBeLessThanOrEqual(K);
  });
});
