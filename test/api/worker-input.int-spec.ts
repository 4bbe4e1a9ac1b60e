/**
 * What a worker sends is input too: over HTTP, with a worker token, against the real service, a
 * decision whose commands break a rule (a seq no ref can name, a seq used twice, a command after
 * the one that ends the run, a cron expression or time zone a schedule cannot have, a name with a
 * control character) is rejected on its own, BAD_USER_INPUT naming the field, and nothing of it is
 * recorded: the workflow's history is what it was, and the same decision can still be reported
 * correctly. Worker ids and registered names follow the public API's rules. A task report naming
 * an attempt the task never issued is refused; a late one is recorded once.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { callId } from '../../src/protocol/decision-commands.js';
import { Service } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Client, HistoryRow, expectData, expectError, gql, issueTokens, post, startServices, unique } from './api-helpers.js';
import { HEARTBEAT, POLL_WORK, REPORT_WORK } from './security-helpers.js';

const services = startServices({ main: {} });
afterAll(() => services.stopAll());

const ENVIRONMENT = 'worker-input';
const scope = { appId: 'demo', environment: ENVIRONMENT };
const REPORT = `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { ref code message field } decided { ref } } }`;
const POLL = `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref workflowId name version decisionId attemptId } }`;
const RETRY = { maxAttempts: 1, initialDelayMs: 0, backoffFactor: 1, maxDelayMs: 0 };

interface Claimed {
  kind: 'DECISION' | 'TASK';
  ref: string;
  workflowId: string;
  name: string;
  version: string | null;
  decisionId: string | null;
  attemptId: string | null;
}
interface Report {
  accepted: number;
  rejected: Array<{ ref: string; code: string; message: string; field: string | null }>;
  decided: Array<{ ref: string }>;
}

let service: Service;
let admin: Client;
let workerToken: string;

beforeAll(async () => {
  service = await services.get('main');
  admin = new Client(service, scope.appId, scope.environment);
  [workerToken] = await issueTokens(service, [{ apps: ['demo'], role: 'worker' }]);
});

/** Polls, as the worker, until an item of `kind` for `workflowId` is claimed. */
async function claim(kind: Claimed['kind'], workflowId: string, names: { workflows?: string[]; tasks?: string[] }): Promise<Claimed> {
  return waitFor(
    async () => {
      const input = { ...scope, workerId: 'input-test', workflows: names.workflows ?? [], tasks: (names.tasks ?? []).map((name) => ({ name, retry: RETRY })), waitMs: 1_000 };
      const items = expectData(await gql(service, POLL, { input }, workerToken)).pollWork as Claimed[];
      return items.find((i) => i.kind === kind && i.workflowId === workflowId);
    },
    { timeoutMs: 15_000, description: `a claimed ${kind} of workflow ${workflowId}` },
  );
}

/** A workflow dispatched by the admin and its first decision, claimed by the worker. */
async function decisionOfNewWorkflow(prefix: string): Promise<{ id: string; name: string; decision: Claimed }> {
  const name = unique(prefix);
  const id = await admin.dispatchWorkflow(name);
  return { id, name, decision: await claim('DECISION', id, { workflows: [name] }) };
}

/** Reports `commands` (a JSON text, sent as it is) for a claimed decision, with the worker token. */
async function reportDecision(decision: Claimed, commands: string): Promise<Report> {
  const input = { ...scope, workerId: 'input-test', decisions: [{ ref: decision.ref, decisionId: decision.decisionId, commands }] };
  return expectData(await gql(service, REPORT, { input }, workerToken)).reportWork as Report;
}

const snapshot = (history: HistoryRow[]) => history.map(({ revision, type, data }) => ({ revision, type, data }));

/** Each of `bad` is rejected (BAD_USER_INPUT, every fragment in the message) and records nothing; then `good` is accepted. */
async function expectRefusedThenAccepted(decision: Claimed, workflowId: string, bad: Array<[commands: string, ...fragments: string[]]>, good: string): Promise<HistoryRow[]> {
  const before = snapshot(await admin.history(workflowId));
  expect(before.at(-1)?.type).toBe('DecisionStarted');
  for (const [commands, ...fragments] of bad) {
    const answer = await reportDecision(decision, commands);
    expect({ commands, answer }).toEqual({
      commands,
      answer: { accepted: 0, rejected: [{ ref: decision.ref, code: 'BAD_USER_INPUT', message: expect.stringMatching(/^decisions\.commands: /), field: 'decisions.commands' }], decided: [] },
    });
    for (const fragment of fragments) expect({ commands, message: answer.rejected[0].message }).toEqual({ commands, message: expect.stringContaining(fragment) });
    // Nothing of the rejected decision was recorded: the history is what it was.
    expect(snapshot(await admin.history(workflowId))).toEqual(before);
  }
  // The decision is still current: reported correctly, it is recorded.
  expect(await reportDecision(decision, good)).toEqual({ accepted: 1, rejected: [], decided: [] });
  // Under another decision id: not the current decision, which no field of the input explains.
  const stale = { ...decision, decisionId: '01900000-0000-7000-8000-000000000000' };
  expect((await reportDecision(stale, good)).rejected).toEqual([{ ref: decision.ref, code: 'CONFLICT', message: expect.any(String), field: null }]);
  const after = await admin.history(workflowId);
  expect(after.slice(0, before.length).map(({ revision, type, data }) => ({ revision, type, data }))).toEqual(before);
  expect(after[before.length].type).toBe('DecisionCompleted');
  return after;
}

describe("who a worker's events name", () => {
  it('the actor is the worker id the worker gave, and tokenId the token it came with (an auditor can tell which token did what)', async () => {
    const { id, decision } = await decisionOfNewWorkflow('Who');
    expect(await reportDecision(decision, JSON.stringify([{ type: 'CompleteWorkflow', result: 1 }]))).toMatchObject({ accepted: 1 });
    const viewer = expectData(await post(service, '{"query":"{ viewer { tokenId } }"}', workerToken)).viewer as { tokenId: string };
    const history = await admin.history(id);
    const byWorker = history.filter((e) => e.type === 'DecisionStarted' || e.type === 'DecisionCompleted').map((e) => JSON.parse(e.metadata) as Record<string, unknown>);
    expect(byWorker).toHaveLength(2);
    for (const metadata of byWorker) expect(metadata).toMatchObject({ actor: 'worker:input-test', tokenId: viewer.tokenId });
    // The dispatch came through the API: its actor is the admin's token, and it names no other.
    const dispatched = JSON.parse(history[0].metadata) as Record<string, unknown>;
    expect(dispatched.actor).not.toMatch(/^worker:/);
    expect(dispatched.tokenId).toBeUndefined();
  });
});

describe('decision commands a worker reports', () => {
  it('a seq that no ref can name (1e300, 10 digits, beyond 2^53) is rejected and nothing is recorded; the task of a good seq is then claimable', async () => {
    const { id, decision } = await decisionOfNewWorkflow('Seq');
    const task = unique('T');
    const after = await expectRefusedThenAccepted(
      decision,
      id,
      [
        [`[{"type":"ScheduleTask","seq":1e300,"name":"${task}","args":[]}]`, 'command 0 (ScheduleTask) needs a seq: a whole number from 0 to 999999999'],
        [`[{"type":"ScheduleTask","seq":1000000000,"name":"${task}","args":[]}]`, 'needs a seq'],
        [`[{"type":"ScheduleTask","seq":9007199254740993,"name":"${task}","args":[]}]`, 'needs a seq'],
        ['[{"type":"StartTimer","seq":1e300,"fireAt":"2030-01-01T00:00:00.000Z"}]', 'command 0 (StartTimer) needs a seq'],
        ['[{"type":"StartTimer","seq":0,"fireAt":"0"}]', 'command 0 (StartTimer) needs an ISO 8601 fireAt'],
      ],
      JSON.stringify([{ type: 'ScheduleTask', seq: 999_999_999, name: task, args: [] }]),
    );
    expect(after.filter((e) => e.type === 'TaskScheduled').map((e) => JSON.parse(e.data).seq)).toEqual([999_999_999]);
    expect((await claim('TASK', id, { tasks: [task] })).ref).toBe(`wf:${id}#999999999`);
  });

  it("a task result's next decision with such a seq is not recorded (the result is)", async () => {
    const { id, name, decision } = await decisionOfNewWorkflow('Next');
    const task = unique('T');
    expect(await reportDecision(decision, JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: task, args: [] }]))).toMatchObject({ accepted: 1, rejected: [] });
    const attempt = await claim('TASK', id, { tasks: [task] });
    const next = { basisDecisionId: decision.decisionId, version: decision.version ?? name, startedAt: new Date().toISOString(), commands: `[{"type":"ScheduleTask","seq":1e300,"name":"${task}","args":[]}]` };
    const input = { ...scope, workerId: 'input-test', tasks: [{ ref: attempt.ref, attemptId: attempt.attemptId, result: '1', next }] };
    const answer = expectData(await gql(service, REPORT, { input }, workerToken)).reportWork as Report;
    expect(answer).toEqual({
      accepted: 1,
      rejected: [{ ref: attempt.ref, code: 'BAD_USER_INPUT', message: expect.stringContaining('tasks.next.commands: command 0 (ScheduleTask) needs a seq'), field: 'tasks.next.commands' }],
      decided: [],
    });
    const types = (await admin.history(id)).map((e) => e.type);
    expect(types).toContain('TaskCompleted');
    expect(types.filter((t) => t === 'DecisionCompleted')).toHaveLength(1);
    expect(types.filter((t) => t === 'TaskScheduled')).toHaveLength(1);
    // The decision the result made pending is claimed and made as usual.
    expect((await claim('DECISION', id, { workflows: [name] })).decisionId).not.toBe(decision.decisionId);
  });

  it('a schedule with a cron expression or a time zone it cannot have is rejected, naming the field; no schedule is requested', async () => {
    const { id, decision } = await decisionOfNewWorkflow('Sched');
    const schedule = (fields: Record<string, unknown>) => JSON.stringify([{ type: 'CreateSchedule', seq: 0, kind: 'task', name: 'S', args: [], cron: '*/5 * * * *', timezone: null, tag: null, ...fields }]);
    const after = await expectRefusedThenAccepted(
      decision,
      id,
      [
        [schedule({ cron: '99 * * * *' }), 'command 0 (CreateSchedule): cron: minute field "99"'],
        [schedule({ timezone: 'Mars/Olympus' }), 'command 0 (CreateSchedule): timezone: unknown time zone "Mars/Olympus"'],
        [schedule({ cron: '0 0 30 2 *' }), 'cron: ', 'never fires'],
      ],
      schedule({ seq: 1, cron: '0 9 * * MON-FRI', timezone: 'Europe/Paris' }),
    );
    expect(after.filter((e) => e.type === 'ScheduleRequested').map((e) => JSON.parse(e.data).seq)).toEqual([1]);
    // The rejected one's schedule does not exist; the accepted one's is created by the effects reactor.
    const SCHEDULE = 'query($appId: String!, $environment: String!, $id: ID!) { schedule(appId: $appId, environment: $environment, id: $id) { id cron } }';
    expect(expectData(await admin.gql(SCHEDULE, { ...scope, id: callId(id, 0) })).schedule).toBeNull();
    await waitFor(async () => expectData(await admin.gql(SCHEDULE, { ...scope, id: callId(id, 1) })).schedule?.cron === '0 9 * * MON-FRI', {
      timeoutMs: 15_000,
      description: 'the schedule of the accepted decision',
    });
  });

  it('names with a control character (a child workflow, a task, an event) are rejected; nothing is started', async () => {
    const { id, decision } = await decisionOfNewWorkflow('Names');
    const after = await expectRefusedThenAccepted(
      decision,
      id,
      [
        [JSON.stringify([{ type: 'StartChildWorkflow', seq: 0, name: 'C\u0000', args: [], wait: true }]), 'command 0 (StartChildWorkflow): name must not contain control characters'],
        [JSON.stringify([{ type: 'DispatchTask', seq: 0, name: 'D\u0001', args: [] }]), 'command 0 (DispatchTask): name must not contain control characters'],
        [JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: 'T\u0000x', args: [] }]), 'command 0 (ScheduleTask): name must not contain control characters'],
        [JSON.stringify([{ type: 'ControlWorkflows', seq: 0, selector: { name: 'X' }, action: 'send', event: { name: 'e\u0000', data: [] } }]), 'event.name must not contain control characters'],
        [JSON.stringify([{ type: 'StartChildWorkflow', seq: 0, name: '', args: [], wait: true }]), 'name must be a string of 1 to 256 characters'],
      ],
      JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: unique('T'), args: [] }]),
    );
    const types = after.map((e) => e.type);
    expect(types).not.toContain('ChildWorkflowStarted');
    expect(types).not.toContain('TaskDispatchRequested');
    expect(types).not.toContain('ControlRequested');
  });

  it('two calls with one seq, and commands after the one that ends the run, are rejected; nothing is recorded', async () => {
    const { id, decision } = await decisionOfNewWorkflow('Dup');
    const after = await expectRefusedThenAccepted(
      decision,
      id,
      [
        [JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: 'T', args: [] }, { type: 'StartTimer', seq: 0, fireAt: '2030-01-01T00:00:00.000Z' }]), 'command 1 (StartTimer) reuses seq 0 of command 0 (ScheduleTask)'],
        [JSON.stringify([{ type: 'CompleteWorkflow', result: 1 }, { type: 'FailWorkflow', error: { message: 'late' } }]), 'command 1 (FailWorkflow) follows command 0 (CompleteWorkflow), which ends the run'],
        [JSON.stringify([{ type: 'CompleteWorkflow', result: 1 }, { type: 'ScheduleTask', seq: 0, name: 'T', args: [] }]), 'follows command 0 (CompleteWorkflow)'],
      ],
      JSON.stringify([{ type: 'StartTimer', seq: 0, fireAt: '2030-01-01T00:00:00.000Z' }, { type: 'CancelTimer', seq: 0 }, { type: 'CompleteWorkflow', result: 'done' }]),
    );
    expect(after.map((e) => e.type).slice(-4)).toEqual(['DecisionCompleted', 'TimerStarted', 'TimerCanceled', 'WorkflowCompleted']);
    expect(await admin.state(id)).toBe('COMPLETED');
  });
});

describe('task reports naming an attempt', () => {
  it('one the task never issued is refused (NOT_FOUND) and records nothing, however often; a late one is recorded once', async () => {
    const { id, decision } = await decisionOfNewWorkflow('Attempts');
    const task = unique('T');
    expect(await reportDecision(decision, JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: task, args: [] }]))).toMatchObject({ accepted: 1, rejected: [] });
    const attempt = await claim('TASK', id, { tasks: [task] });
    const report = async (attemptId: string, outcome: { result: string } | { error: { message: string } }) =>
      expectData(await gql(service, REPORT, { input: { ...scope, workerId: 'input-test', tasks: [{ ref: attempt.ref, attemptId, ...outcome }] } }, workerToken)).reportWork as Report;
    const before = snapshot(await admin.history(id));
    for (const forged of ['01900000-0000-7000-8000-000000000001', '01900000-0000-7000-8000-000000000002', '01900000-0000-7000-8000-000000000002']) {
      expect(await report(forged, { result: '"forged"' })).toEqual({
        accepted: 0,
        rejected: [{ ref: attempt.ref, code: 'NOT_FOUND', message: `task attempt ${forged} not found`, field: null }],
        decided: [],
      });
    }
    expect(snapshot(await admin.history(id))).toEqual(before);
    expect(await report(attempt.attemptId!, { result: '"done"' })).toMatchObject({ accepted: 1, rejected: [] });
    // A failure of the attempt reported after its result, three times: acknowledged each time, recorded once.
    for (let i = 0; i < 3; i++) expect(await report(attempt.attemptId!, { error: { message: 'late' } })).toMatchObject({ accepted: 1, rejected: [] });
    const added = (await admin.history(id)).slice(before.length);
    expect(added.map((e) => e.type)).toEqual(['TaskCompleted', 'TaskResultIgnored']);
    expect(JSON.parse(added[1].data)).toEqual({ seq: 0, attemptId: attempt.attemptId, reason: 'the task had already completed' });
  });
});

describe('worker ids and the names a worker serves', () => {
  const poll = (fields: Record<string, unknown>) =>
    gql(service, POLL_WORK, { input: { ...scope, workerId: 'input-test', workflows: [], tasks: [], waitMs: 0, ...fields } }, workerToken);

  it('pollWork, reportWork and heartbeat refuse an empty worker id and one with a control character, naming workerId', async () => {
    for (const workerId of ['', 'a\u0000']) {
      expectError(await poll({ workerId }), 'BAD_USER_INPUT', 'workerId');
      expectError(await gql(service, REPORT_WORK, { input: { ...scope, workerId, tasks: [] } }, workerToken), 'BAD_USER_INPUT', 'workerId');
      expectError(await gql(service, HEARTBEAT, { input: { ...scope, workerId, attempts: [] } }, workerToken), 'BAD_USER_INPUT', 'workerId');
    }
    const WORKERS = 'query($appId: String!, $environment: String!) { workers(appId: $appId, environment: $environment) { workers { workerId } } }';
    const listed = (expectData(await admin.gql(WORKERS, scope)).workers.workers as Array<{ workerId: string }>).map((w) => w.workerId);
    expect(listed).not.toContain('');
    expect(listed).not.toContain('a\u0000');
  });

  it('pollWork refuses an empty workflow name, one with a control character, one of 900 KB and an empty task name', async () => {
    expectError(await poll({ workflows: [''] }), 'BAD_USER_INPUT', 'workflows');
    expectError(await poll({ workflows: ['Flow', 'a\u0000'] }), 'BAD_USER_INPUT', 'workflows');
    expectError(await poll({ workflows: ['n'.repeat(900 * 1024)] }), 'BAD_USER_INPUT', 'workflows');
    expectError(await poll({ tasks: [{ name: '' }] }), 'BAD_USER_INPUT', 'tasks.0.name');
    expect(expectData(await poll({ workflows: ['Flow_v1'], tasks: [{ name: 'send' }] })).pollWork).toEqual([]);
  });
});
