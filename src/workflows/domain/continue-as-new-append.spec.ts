/**
 * A decision that continues as new, carrying events: one CompleteDecision is one append, and
 * README (MAX_DECISION_BYTES) promises it is about the size of the reported commands ("EventStoreDB
 * also needs its MaxAppendSize above it"). The untaken events are stored once (in the new run, not
 * also inside the recorded ContinueAsNew command), and events received while the decision ran are
 * not copied into the append at all: the decision is discarded and made again with them.
 */
import { describe, expect, it } from '@jest/globals';
import type { Json } from '../../event-store/event-store.port.js';
import { DEFAULT_LIMITS } from '../../shared/limits.js';
import { WorkflowEvent, WorkflowState, workflowDecider } from './workflow.decider.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const WF = '0190aaaa-0000-7000-8000-000000000001';
const dispatched: WorkflowEvent = {
  type: 'WorkflowDispatched',
  data: { workflowId: WF, appId: 'demo', environment: 'test', name: 'Loop', tag: null, input: [0], parent: null, scheduleId: null, dispatchedAt: at(0) },
};
const started: WorkflowEvent = { type: 'DecisionStarted', data: { decisionId: 'd1', workerId: 'w1', version: 'Loop', startedAt: at(0), leaseExpiresAt: at(60_000) } };
const received = (i: number, bytes: number): WorkflowEvent => ({ type: 'WorkflowEventReceived', data: { name: 'tick', data: [String(i).padEnd(bytes, 'x')] } });
const fold = (events: WorkflowEvent[]): WorkflowState => events.reduce((s, e) => workflowDecider.evolve(s, e), workflowDecider.initialState());
const appendBytes = (events: WorkflowEvent[]) => events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e.data)), 0);
/** EventStoreDB's default MaxAppendSize; MAX_DECISION_BYTES (960 KiB) was chosen under it. */
const ESDB_MAX_APPEND = 1024 * 1024;

describe('the append of a decision that continues as new', () => {
  it('stays about the size of the reported commands when it carries untaken events (they are not stored twice)', () => {
    // 4 untaken events of 200 KB: the command is 800 KB, under MAX_DECISION_BYTES (960 KiB).
    const events = [0, 1, 2, 3].map((i) => ({ name: 'tick', data: [String(i).padEnd(200_000, 'x')] as Json[] }));
    const commands = [{ type: 'ContinueAsNew' as const, seq: 0, args: [1] as Json[], at: at(10), events }];
    expect(Buffer.byteLength(JSON.stringify(commands))).toBeLessThan(DEFAULT_LIMITS.decisionBytes);
    const appended = workflowDecider.decide({ type: 'CompleteDecision', decisionId: 'd1', commands, ids: {} }, fold([dispatched, started]));
    expect(appended.map((e) => e.type)).toEqual(['DecisionCompleted', 'WorkflowContinuedAsNew', 'WorkflowEventReceived', 'WorkflowEventReceived', 'WorkflowEventReceived', 'WorkflowEventReceived']);
    expect(appendBytes(appended)).toBeLessThan(ESDB_MAX_APPEND);
  });

  it('is bounded whatever arrived while the decision ran (events received during a long decision are copied into one append)', () => {
    // 20 events of 200 KB sent while a decision with a long inline step ran (heartbeats keep its lease).
    const during = Array.from({ length: 20 }, (_, i) => received(i, 200_000));
    const state = fold([dispatched, started, ...during]);
    const appended = workflowDecider.decide({ type: 'CompleteDecision', decisionId: 'd1', commands: [{ type: 'ContinueAsNew', seq: 0, args: [1], at: at(10) }], ids: {} }, state);
    expect(appendBytes(appended)).toBeLessThan(ESDB_MAX_APPEND);
  });
});

describe('an untaken event carried into the new run', () => {
  it('keeps its causeId, so a repeated delivery of the same cause (the effects reactor re-doing a send after a crash) is still recognised', () => {
    // Run 1 received `ping` from another workflow's send (causeId c-1); its code saw it and never
    // took it, so the SDK lists it in ContinueAsNew.events, with its causeId.
    const ping: WorkflowEvent = { type: 'WorkflowEventReceived', data: { name: 'ping', data: [1], causeId: 'c-1' } };
    const d2: WorkflowEvent = { type: 'DecisionStarted', data: { decisionId: 'd2', workerId: 'w1', version: 'Loop', startedAt: at(5), leaseExpiresAt: at(60_000) } };
    const before = [dispatched, started, { type: 'DecisionCompleted', data: { decisionId: 'd1', commands: [] } } as WorkflowEvent, ping, d2];
    const appended = workflowDecider.decide(
      { type: 'CompleteDecision', decisionId: 'd2', commands: [{ type: 'ContinueAsNew', seq: 0, args: [1], at: at(10), events: [{ name: 'ping', data: [1], causeId: 'c-1' }] }], ids: {} },
      fold(before),
    );
    const afterCarry = fold([...before, ...appended.map((e, i) => ({ ...e, revision: BigInt(before.length + i) }))]);
    // The same send delivered again: already in this workflow (carried), so nothing is recorded.
    const again = workflowDecider.decide({ type: 'DeliverEvent', name: 'ping', data: [1], causeId: 'c-1' }, afterCarry);
    expect(again).toEqual([]);
  });
});
