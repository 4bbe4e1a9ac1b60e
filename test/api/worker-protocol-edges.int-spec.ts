/**
 * The worker protocol as a buggy or hostile worker drives it over raw GraphQL: repeated
 * reports after a lost answer, reports and heartbeats for a workflow that ended or continued as
 * new, and decision reports the history does not allow.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Client, HistoryRow, expectData, gql, issueTokens, startServices, unique } from './api-helpers.js';

const services = startServices({ main: {} });
afterAll(() => services.stopAll());

const scope = { appId: 'demo', environment: 'protocol-edges' };
const REPORT = `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { ref code message field } } }`;
const POLL = `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref workflowId name version decisionId attemptId } }`;
const HEARTBEAT = `mutation($input: HeartbeatInput!) { heartbeat(input: $input) { ref cancel reason } }`;

interface Claimed {
  kind: 'DECISION' | 'TASK';
  ref: string;
  workflowId: string;
  decisionId: string | null;
  attemptId: string | null;
}
interface Report {
  accepted: number;
  rejected: Array<{ ref: string; code: string; message: string; field: string | null }>;
}

let service: Service;
let admin: Client;
let workerToken: string;

beforeAll(async () => {
  service = await services.get('main');
  admin = new Client(service, scope.appId, scope.environment);
  [workerToken] = await issueTokens(service, [{ apps: ['demo'], role: 'worker' }]);
});

async function claimDecision(workflowId: string, name: string, workerId = 'edge-worker'): Promise<Claimed> {
  return waitFor(
    async () => {
      const input = { ...scope, workerId, workflows: [name], tasks: [], waitMs: 1_000 };
      const items = expectData(await gql(service, POLL, { input }, workerToken)).pollWork as Claimed[];
      return items.find((i) => i.kind === 'DECISION' && i.workflowId === workflowId);
    },
    { timeoutMs: 15_000, description: `a claimed decision of workflow ${workflowId}` },
  );
}

async function report(decisions: Array<Record<string, unknown>>, workerId = 'edge-worker'): Promise<Report> {
  const input = { ...scope, workerId, decisions };
  return expectData(await gql(service, REPORT, { input }, workerToken)).reportWork as Report;
}

const types = (history: HistoryRow[]) => history.map((e) => e.type);

/** A workflow whose first decision schedules one task (call 0), and that task claimed by a worker serving it. */
async function scheduleAndClaimTask(prefix: string): Promise<{ name: string; id: string; task: Claimed }> {
  const name = unique(prefix);
  const taskName = unique(`${prefix}Task`);
  const id = await admin.dispatchWorkflow(name);
  const first = await claimDecision(id, name);
  expect(await report([{ ref: first.ref, decisionId: first.decisionId, commands: JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: taskName, args: [] }]) }])).toEqual({ accepted: 1, rejected: [] });
  const task = await waitFor(
    async () => {
      const input = { ...scope, workerId: 'edge-worker', workflows: [], tasks: [{ name: taskName }], waitMs: 1_000 };
      return (expectData(await gql(service, POLL, { input }, workerToken)).pollWork as Claimed[]).find((i) => i.kind === 'TASK' && i.workflowId === id);
    },
    { timeoutMs: 15_000, description: 'the task claimed' },
  );
  return { name, id, task };
}


describe('a decision that continued the workflow as new', () => {
  it('reported again (its answer was lost) is acknowledged, as any repeated report, and records nothing', async () => {
    const name = unique('Again');
    const id = await admin.dispatchWorkflow(name);
    const decision = await claimDecision(id, name);
    const commands = JSON.stringify([{ type: 'ContinueAsNew', seq: 0, args: [2], at: new Date().toISOString() }]);
    const sent = { ref: decision.ref, decisionId: decision.decisionId, commands };
    expect(await report([sent])).toEqual({ accepted: 1, rejected: [] });
    const before = types(await admin.history(id));
    expect(before).toContain('WorkflowContinuedAsNew');
    // The worker did not get the answer and sends the same report again, within its lease.
    expect(await report([sent])).toEqual({ accepted: 1, rejected: [] });
    expect(types(await admin.history(id))).toEqual(before);
  });

  it("the new run's decision refusing a call numbered in an earlier run names decisions.commands, as every other refused command does", async () => {
    const name = unique('OldSeq');
    const id = await admin.dispatchWorkflow(name);
    const first = await claimDecision(id, name);
    const commands = JSON.stringify([{ type: 'ContinueAsNew', seq: 5, args: [], at: new Date().toISOString() }]);
    expect(await report([{ ref: first.ref, decisionId: first.decisionId, commands }])).toEqual({ accepted: 1, rejected: [] });
    const second = await claimDecision(id, name);
    const stale = JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: 'T', args: [] }]);
    const answer = await report([{ ref: second.ref, decisionId: second.decisionId, commands: stale }]);
    expect(answer).toEqual({ accepted: 0, rejected: [{ ref: second.ref, code: 'BAD_USER_INPUT', message: expect.stringMatching(/^decisions\.commands: /), field: 'decisions.commands' }] });
    // Still current: reported correctly, the workflow completes.
    expect(await report([{ ref: second.ref, decisionId: second.decisionId, commands: JSON.stringify([{ type: 'CompleteWorkflow', result: 1 }]) }])).toEqual({ accepted: 1, rejected: [] });
  });
});

describe('a heartbeat for a decision whose workflow was terminated', () => {
  it('tells the worker to stop, as it does for a task of that workflow', async () => {
    const name = unique('HbTerm');
    const id = await admin.dispatchWorkflow(name);
    const decision = await claimDecision(id, name);
    const heartbeat = async () => {
      const input = { ...scope, workerId: 'edge-worker', attempts: [{ ref: decision.ref, attemptId: decision.decisionId }] };
      return expectData(await gql(service, HEARTBEAT, { input }, workerToken)).heartbeat as Array<{ ref: string; cancel: boolean; reason: string | null }>;
    };
    expect(await heartbeat()).toEqual([{ ref: decision.ref, cancel: false, reason: null }]);
    await admin.act('terminate', { id });
    await waitFor(async () => types(await admin.history(id)).includes('WorkflowTerminated'), { timeoutMs: 15_000, description: 'the workflow terminated' });
    expect(await heartbeat()).toEqual([{ ref: decision.ref, cancel: true, reason: expect.stringContaining('terminated') }]);
  });
});

describe('a decision failure for a decision that is not current', () => {
  it('is refused (CONFLICT) like a completion under that id, not counted as recorded', async () => {
    const name = unique('FailStale');
    const id = await admin.dispatchWorkflow(name);
    const decision = await claimDecision(id, name);
    const forged = { ref: decision.ref, decisionId: '01900000-0000-7000-8000-000000000000', failureCode: 'NON_DETERMINISTIC', failureMessage: 'stale' };
    const before = await admin.history(id);
    const answer = await report([forged]);
    expect(answer).toEqual({ accepted: 0, rejected: [{ ref: decision.ref, code: 'CONFLICT', message: expect.any(String), field: null }] });
    expect(await admin.history(id)).toEqual(before);
    // The current decision is untouched: reported, it is recorded.
    expect(await report([{ ref: decision.ref, decisionId: decision.decisionId, commands: JSON.stringify([{ type: 'CompleteWorkflow', result: null }]) }])).toEqual({ accepted: 1, rejected: [] });
  });
});

describe("a workflow's or a step's error in decision commands", () => {
  it('is bounded like a task error (message 16,384 characters, name 256): longer is BAD_USER_INPUT on decisions.commands and records nothing', async () => {
    const name = unique('LongError');
    const id = await admin.dispatchWorkflow(name);
    const decision = await claimDecision(id, name);
    const before = await admin.history(id);
    const bad = [
      [{ type: 'FailWorkflow', error: { message: 'm'.repeat(16_385) } }],
      [{ type: 'FailWorkflow', error: { message: 'm', name: 'n'.repeat(257) } }],
      [{ type: 'RecordStep', seq: 0, name: 'step', error: { message: 'm'.repeat(16_385) } }, { type: 'CompleteWorkflow', result: null }],
    ];
    for (const commands of bad) {
      const answer = await report([{ ref: decision.ref, decisionId: decision.decisionId, commands: JSON.stringify(commands) }]);
      expect({ type: commands[0].type, answer }).toEqual({ type: commands[0].type, answer: { accepted: 0, rejected: [expect.objectContaining({ code: 'BAD_USER_INPUT', field: 'decisions.commands' })] } });
      expect(await admin.history(id)).toEqual(before);
    }
    expect(await report([{ ref: decision.ref, decisionId: decision.decisionId, commands: JSON.stringify([{ type: 'FailWorkflow', error: { message: 'm'.repeat(16_384), name: 'n'.repeat(256) } }]) }])).toEqual({ accepted: 1, rejected: [] });
  });
});

describe('a value at MAX_JSON_DEPTH (64) carried on by a decision', () => {
  it("a task's result nested 64 deep is recorded; the workflow can then complete with it", async () => {
    const { name, id, task } = await scheduleAndClaimTask('Deep');
    const deep = '['.repeat(64) + ']'.repeat(64);
    const taskReport = expectData(await gql(service, REPORT, { input: { ...scope, workerId: 'edge-worker', tasks: [{ ref: task.ref, attemptId: task.attemptId, result: deep }] } }, workerToken)).reportWork as Report;
    expect(taskReport).toEqual({ accepted: 1, rejected: [] });
    const second = await claimDecision(id, name);
    // What the code does with `return await ctx.task(...)`: the workflow's result is the task's.
    const answer = await report([{ ref: second.ref, decisionId: second.decisionId, commands: `[{"type":"CompleteWorkflow","result":${deep}}]` }]);
    expect(answer).toEqual({ accepted: 1, rejected: [] });
    expect(types(await admin.history(id)).at(-1)).toBe('WorkflowCompleted');
  });
});

describe('eager claims (reportWork claim) of the tasks a decision schedules', () => {
  it('never hand the worker a task it does not serve: a call reusing the seq of another task claims nothing, and that task is left for its own worker', async () => {
    const name = unique('Eager');
    const id = await admin.dispatchWorkflow(name);
    const first = await claimDecision(id, name);
    const fireAt = new Date(Date.now() + 300).toISOString();
    const scheduled = JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: 'Theirs', args: ['for Theirs only'] }, { type: 'StartTimer', seq: 1, fireAt }]);
    expect(await report([{ ref: first.ref, decisionId: first.decisionId, commands: scheduled }])).toEqual({ accepted: 1, rejected: [] });
    // The timer fires: the next decision, by a worker that serves only the task "Mine", reports seq 0 as "Mine".
    const second = await claimDecision(id, name);
    const input = {
      ...scope,
      workerId: 'edge-worker',
      decisions: [{ ref: second.ref, decisionId: second.decisionId, commands: JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: 'Mine', args: [] }]) }],
      claim: { workflows: [], tasks: [{ name: 'Mine' }], maxItems: 5 },
    };
    const answer = expectData(await gql(service, `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted items { kind ref name } } }`, { input }, workerToken)).reportWork;
    expect(answer).toEqual({ accepted: 1, items: [] });
    expect(types(await admin.history(id))).not.toContain('TaskStarted');
  });
});

describe('a decision reported after its workflow was paused (discarded)', () => {
  it('reported again (its answer was lost) is acknowledged and records nothing; after resume the workflow goes on', async () => {
    const name = unique('PausedAgain');
    const id = await admin.dispatchWorkflow(name);
    const decision = await claimDecision(id, name);
    await admin.act('pause', { id });
    await waitFor(async () => types(await admin.history(id)).includes('WorkflowPaused'), { timeoutMs: 15_000, description: 'the workflow paused' });
    const sent = { ref: decision.ref, decisionId: decision.decisionId, commands: JSON.stringify([{ type: 'CompleteWorkflow', result: 1 }]) };
    expect(await report([sent])).toEqual({ accepted: 1, rejected: [] });
    const before = types(await admin.history(id));
    expect(before.at(-1)).toBe('DecisionDiscarded');
    expect(await report([sent])).toEqual({ accepted: 1, rejected: [] });
    expect(types(await admin.history(id))).toEqual(before);
    await admin.act('resume', { id });
    const again = await claimDecision(id, name);
    expect(await report([{ ...sent, decisionId: again.decisionId }])).toEqual({ accepted: 1, rejected: [] });
    expect(types(await admin.history(id)).at(-1)).toBe('WorkflowCompleted');
  });
});

describe('a task report with no outcome (no result, no error, not released)', () => {
  it('is BAD_USER_INPUT on tasks and records nothing (it used to complete the task with null); the attempt can still report', async () => {
    const { name, id, task } = await scheduleAndClaimTask('NoOutcome');
    const send = async (outcome: Record<string, unknown>) =>
      expectData(await gql(service, REPORT, { input: { ...scope, workerId: 'edge-worker', tasks: [{ ref: task.ref, attemptId: task.attemptId, ...outcome }] } }, workerToken)).reportWork as Report;
    const before = types(await admin.history(id));
    for (const outcome of [{}, { released: false }, { result: null, error: null }]) {
      expect({ outcome, answer: await send(outcome) }).toEqual({ outcome, answer: { accepted: 0, rejected: [{ ref: task.ref, code: 'BAD_USER_INPUT', message: expect.any(String), field: 'tasks' }] } });
    }
    expect(types(await admin.history(id))).toEqual(before);
    expect(await send({ result: '"done"' })).toEqual({ accepted: 1, rejected: [] });
  });
});

describe('a decision report with no outcome, or two (commands and a failure)', () => {
  it('is BAD_USER_INPUT and records nothing (none used to record an empty decision, leaving the workflow waiting on nothing); the decision can still report', async () => {
    const name = unique('NoCommands');
    const id = await admin.dispatchWorkflow(name);
    const decision = await claimDecision(id, name);
    const before = types(await admin.history(id));
    const complete = JSON.stringify([{ type: 'CompleteWorkflow', result: 1 }]);
    for (const outcome of [{}, { commands: null, failureCode: null }, { commands: complete, failureCode: 'WORKER_ERROR' }]) {
      const answer = await report([{ ref: decision.ref, decisionId: decision.decisionId, ...outcome }]);
      expect({ outcome, answer }).toEqual({ outcome, answer: { accepted: 0, rejected: [{ ref: decision.ref, code: 'BAD_USER_INPUT', message: expect.any(String), field: 'decisions' }] } });
    }
    expect(types(await admin.history(id))).toEqual(before);
    expect(await report([{ ref: decision.ref, decisionId: decision.decisionId, commands: complete }])).toEqual({ accepted: 1, rejected: [] });
  });
});
