/**
 * A worker's next decision, reported with the task result it follows (`tasks.next` in
 * reportWork), driven by hand over GraphQL against the real service: when the service records it
 * with the result (one append) and when it records the result alone, so that the decision is
 * claimed and made as usual. The SDK's side runs in every engine suite (its workers make such
 * decisions by default); the last test checks it on a real worker process.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, expectData, gql, unique } from '../api/api-helpers.js';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { APP, Engine } from './engine-helpers.js';
import { Worker } from '../../src/sdk/index.js';
import { add, echo, sequential } from '../support/fixtures/workflows.js';
import { startWorker } from '../support/worker.js';

const POLL = `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref workflowId decisionId attemptId } }`;
const REPORT = `mutation($input: ReportWorkInput!) { reportWork(input: $input) {
  accepted rejected { ref code message } items { kind ref workflowId decisionId attemptId } decided { ref workflowId decisionId revision } } }`;

interface Item {
  kind: 'DECISION' | 'TASK';
  ref: string;
  workflowId: string;
  decisionId: string | null;
  attemptId: string | null;
}

describe('a next decision reported with a task result', () => {
  let service: Service;
  let api: Client;
  const environment = 'next';
  const scope = { appId: APP, environment };

  beforeAll(async () => {
    service = await startService();
    api = new Client(service, APP, environment);
  });
  afterAll(() => service?.stop());

  const registration = (name: string) => ({ workflows: [name], tasks: [{ name: 'Step' }] });

  async function report(workerId: string, name: string, items: { decisions?: unknown[]; tasks?: unknown[] }) {
    const response = await gql(service, REPORT, { input: { ...scope, workerId, ...items, claim: { ...registration(name), maxItems: 5 } } });
    return expectData(response).reportWork as { accepted: number; rejected: Array<{ ref: string; code: string; message: string }>; items: Item[]; decided: Array<{ ref: string; workflowId: string; decisionId: string; revision: number }> };
  }

  /** Dispatches a workflow, makes its first decision as `workerId` (one task, seq 0), and returns the claimed task. */
  async function firstTask(workerId = 'w1'): Promise<{ id: string; name: string; decision: Item; task: Item }> {
    const name = unique('Next');
    const id = await api.dispatchWorkflow(name);
    let decision: Item | undefined;
    await waitFor(
      async () => {
        const items = expectData(await gql(service, POLL, { input: { ...scope, workerId, ...registration(name), waitMs: 1_000 } })).pollWork as Item[];
        decision = items.find((i) => i.kind === 'DECISION' && i.workflowId === id);
        return decision !== undefined;
      },
      { timeoutMs: 15_000, description: 'the first decision claimed' },
    );
    const answer = await report(workerId, name, { decisions: [{ ref: decision!.ref, decisionId: decision!.decisionId, commands: JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: 'Step', args: [] }]) }] });
    expect(answer.rejected).toEqual([]);
    const task = answer.items.find((i) => i.kind === 'TASK');
    expect(task).toBeDefined();
    return { id, name, decision: decision!, task: task! };
  }

  const next = (basisDecisionId: string, name: string, commands: unknown[], startedAt = new Date().toISOString()) => ({ basisDecisionId, version: name, startedAt, commands: JSON.stringify(commands) });

  it('is recorded in the result\'s append, at the worker\'s clock, and the tasks it schedules are claimed in the same answer', async () => {
    const { id, name, decision, task } = await firstTask();
    const startedAt = new Date().toISOString();
    const answer = await report('w1', name, {
      tasks: [{ ref: task.ref, attemptId: task.attemptId, result: '"one"', next: next(decision.decisionId!, name, [{ type: 'ScheduleTask', seq: 1, name: 'Step', args: ['two'] }], startedAt) }],
    });
    expect(answer).toMatchObject({ accepted: 1, rejected: [] });
    expect(answer.decided).toEqual([{ ref: task.ref, workflowId: id, decisionId: expect.any(String), revision: expect.any(Number) }]);
    const second = answer.items.find((i) => i.kind === 'TASK');
    expect(second?.ref).toBe(`wf:${id}#1`);
    expect(answer.items.some((i) => i.kind === 'DECISION')).toBe(false);

    const history = await api.history(id);
    const from = history.findIndex((e) => e.type === 'TaskCompleted');
    expect(history.slice(from).map((e) => e.type)).toEqual(['TaskCompleted', 'DecisionStarted', 'DecisionCompleted', 'TaskScheduled', 'TaskStarted']);
    const started = history[from + 1];
    expect(started.revision).toBe(answer.decided[0].revision);
    expect(JSON.parse(started.data)).toMatchObject({ decisionId: answer.decided[0].decisionId, workerId: 'w1', version: name, startedAt });
    // One append: the same recording time for the result, the decision and the claim.
    const ats = new Set(history.slice(from).map((e) => JSON.parse(e.metadata).at));
    expect(ats.size).toBe(1);

    // The next one builds on it; this one completes the workflow.
    const last = await report('w1', name, {
      tasks: [{ ref: second!.ref, attemptId: second!.attemptId, result: '"two"', next: next(answer.decided[0].decisionId, name, [{ type: 'CompleteWorkflow', result: 'done' }]) }],
    });
    expect(last.decided).toHaveLength(1);
    expect(await api.state(id)).toBe('COMPLETED');
    expect((await api.workflow(id))?.output).toBe('"done"');
  });

  it('is answered as recorded when it continues the workflow as new (its revision is the DecisionStarted\'s)', async () => {
    const { id, name, decision, task } = await firstTask();
    const answer = await report('w1', name, {
      tasks: [{ ref: task.ref, attemptId: task.attemptId, result: '1', next: next(decision.decisionId!, name, [{ type: 'ContinueAsNew', seq: 1, args: [2], at: new Date().toISOString() }]) }],
    });
    expect(answer.decided).toHaveLength(1);
    const history = await api.history(id);
    const started = history.find((e) => e.type === 'DecisionStarted' && JSON.parse(e.data).decisionId === answer.decided[0].decisionId);
    expect(started?.revision).toBe(answer.decided[0].revision);
    expect(history.map((e) => e.type)).toContain('WorkflowContinuedAsNew');
  });

  it('is not recorded when an event arrived after its basis: the result is, and the decision is claimed as usual with the event in it', async () => {
    const { id, name, decision, task } = await firstTask();
    await api.act('send', { id }, { name: 'late', data: '[]' });
    const answer = await report('w1', name, {
      tasks: [{ ref: task.ref, attemptId: task.attemptId, result: '"one"', next: next(decision.decisionId!, name, [{ type: 'CompleteWorkflow', result: 'too soon' }]) }],
    });
    expect(answer).toMatchObject({ accepted: 1, rejected: [], decided: [] });
    // The usual decision, claimed in the same answer.
    expect(answer.items.filter((i) => i.kind === 'DECISION').map((i) => i.workflowId)).toEqual([id]);
    const types = (await api.history(id)).map((e) => e.type);
    expect(types.slice(-4)).toEqual(['TaskStarted', 'WorkflowEventReceived', 'TaskCompleted', 'DecisionStarted']);
    expect(types).not.toContain('WorkflowCompleted');
    expect(await api.state(id)).toBe('RUNNING');
  });

  it('is not recorded from another worker, on a basis that is not the last decision, or with a clock far from the server\'s', async () => {
    for (const variant of ['other worker', 'old basis', 'clock'] as const) {
      const { id, name, decision, task } = await firstTask();
      const basis = variant === 'old basis' ? '0190aaaa-0000-7000-8000-00000000dead' : decision.decisionId!;
      const startedAt = variant === 'clock' ? new Date(Date.now() - 60_000).toISOString() : new Date().toISOString();
      const answer = await report(variant === 'other worker' ? 'w2' : 'w1', name, {
        tasks: [{ ref: task.ref, attemptId: task.attemptId, result: '1', next: next(basis, name, [{ type: 'CompleteWorkflow', result: variant }], startedAt) }],
      });
      expect({ variant, accepted: answer.accepted, decided: answer.decided }).toEqual({ variant, accepted: 1, decided: [] });
      const types = (await api.history(id)).map((e) => e.type);
      expect(types).toContain('TaskCompleted');
      expect(types).not.toContain('WorkflowCompleted');
    }
  });

  it('is BAD_USER_INPUT on tasks.next.* when malformed, and the task\'s result is still recorded', async () => {
    const cases: Array<[unknown, string]> = [
      [{ commands: 'not json' }, 'tasks.next.commands'],
      [{ commands: JSON.stringify([{ type: 'Nope', seq: 1 }]) }, 'tasks.next.commands'],
      [{ commands: JSON.stringify([{ type: 'ScheduleTask', seq: 1, name: 'n'.repeat(10_000), args: [] }]) }, 'tasks.next.commands'],
      [{ startedAt: 'yesterday' }, 'tasks.next.startedAt'],
      [{ queries: '[1]' }, 'tasks.next.queries'],
    ];
    for (const [override, field] of cases) {
      const { id, name, decision, task } = await firstTask();
      const answer = await report('w1', name, {
        tasks: [{ ref: task.ref, attemptId: task.attemptId, result: '1', next: { ...next(decision.decisionId!, name, [{ type: 'CompleteWorkflow', result: 1 }]), ...(override as object) } }],
      });
      expect({ field, accepted: answer.accepted, decided: answer.decided }).toEqual({ field, accepted: 1, decided: [] });
      expect(answer.rejected).toEqual([{ ref: task.ref, code: 'BAD_USER_INPUT', message: expect.stringContaining(field) }]);
      expect((await api.history(id)).map((e) => e.type)).toContain('TaskCompleted');
    }
    // With an error instead of a result, there is nothing to decide on.
    const { name, decision, task } = await firstTask();
    const failed = await report('w1', name, {
      tasks: [{ ref: task.ref, attemptId: task.attemptId, error: { message: 'boom' }, next: next(decision.decisionId!, name, []) }],
    });
    expect(failed.rejected).toEqual([{ ref: task.ref, code: 'BAD_USER_INPUT', message: expect.stringContaining('tasks.next') }]);
    expect(failed.accepted).toBe(1);
  });

  it('is made by the SDK\'s worker for a workflow of sequential tasks: each decision after the first goes in its task\'s append', async () => {
    const worker = await startWorker({ url: service.url, token: service.token, environment: 'next-sdk' });
    try {
      const engine = new Engine(service, 'next-sdk');
      const id = await engine.dispatch('Sequential', ['x']);
      const done = await engine.waitForState(id);
      expect(done.result).toEqual(['x', 3, 'x-3']);
      const history = await engine.history(id);
      const completions = history.flatMap((e, i) => (e.type === 'TaskCompleted' ? [[e, history[i + 1]] as const] : []));
      expect(completions).toHaveLength(3);
      for (const [result, after] of completions) {
        expect(after.type).toBe('DecisionStarted');
        expect(after.data.workerId).toBe(worker.workerId);
        expect(after.metadata.at).toBe(result.metadata.at);
        const completed = history.find((e) => e.type === 'DecisionCompleted' && e.data.decisionId === after.data.decisionId);
        expect(completed?.metadata.correlationId).toBe(result.metadata.correlationId);
      }
    } finally {
      await worker.stop();
    }
  });

  it('is not made by a worker with decideAfterTasks: false (each decision is claimed after its result, as before)', async () => {
    const quiet = { info() {}, warn() {}, error() {} };
    const worker = new Worker({ url: service.url, token: service.token, appId: APP, environment: 'next-off', tasks: [echo, add], workflows: [sequential], decideAfterTasks: false, logger: quiet });
    const running = worker.run();
    try {
      const engine = new Engine(service, 'next-off');
      const id = await engine.dispatch('Sequential', ['y']);
      expect((await engine.waitForState(id)).result).toEqual(['y', 3, 'y-3']);
      const history = await engine.history(id);
      const completions = history.flatMap((e, i) => (e.type === 'TaskCompleted' ? [[e, history[i + 1]] as const] : []));
      expect(completions).toHaveLength(3);
      // The eager claim still rides on the result, but the decision's report is another request
      // (each request has its own correlation id; a next decision shares its result's).
      for (const [result, after] of completions) {
        expect(after.type).toBe('DecisionStarted');
        expect(after.metadata.correlationId).toBe(result.metadata.correlationId);
        const completed = history.find((e) => e.type === 'DecisionCompleted' && e.data.decisionId === after.data.decisionId);
        expect(completed?.metadata.correlationId).not.toBe(result.metadata.correlationId);
      }
    } finally {
      await worker.shutdown();
      await running;
    }
  });

  it('lets a decision made at once report, and its answer come back, before the worker polls again', async () => {
    const quiet = { info() {}, warn() {}, error() {} };
    const worker = new Worker({ url: service.url, token: service.token, appId: APP, environment: 'next-order', tasks: [echo, add], workflows: [sequential], logger: quiet });
    // What the worker sends and when each answer comes back, in order (the client is the worker's own).
    const log: Array<{ op: string; at: 'sent' | 'answered'; call: number; decisionsFor: string[] }> = [];
    const client = (worker as unknown as { client: { request: (query: string, ...rest: unknown[]) => Promise<unknown> } }).client;
    const request = client.request.bind(client);
    let calls = 0;
    client.request = async (query: string, ...rest: unknown[]) => {
      const op = /\{ (\w+)\(/.exec(query)?.[1] ?? query;
      const call = ++calls;
      log.push({ op, at: 'sent', call, decisionsFor: [] });
      const data = (await request(query, ...rest)) as { pollWork?: Item[] };
      log.push({ op, at: 'answered', call, decisionsFor: (data.pollWork ?? []).filter((i) => i.kind === 'DECISION').map((i) => i.workflowId) });
      return data;
    };
    const running = worker.run();
    try {
      const engine = new Engine(service, 'next-order');
      await waitFor(() => (log.some((e) => e.op === 'pollWork') ? true : null), { timeoutMs: 10_000, description: 'the worker to poll' });
      const id = await engine.dispatch('Sequential', ['z']);
      expect((await engine.waitForState(id)).result).toEqual(['z', 3, 'z-3']);
      const answer = log.findIndex((e) => e.op === 'pollWork' && e.at === 'answered' && e.decisionsFor.includes(id));
      expect(answer).toBeGreaterThanOrEqual(0);
      const after = log.slice(answer + 1);
      const report = after.find((e) => e.at === 'sent');
      expect(report?.op).toBe('reportWork');
      const reportAnswered = after.findIndex((e) => e.call === report!.call && e.at === 'answered');
      const nextPoll = after.findIndex((e) => e.op === 'pollWork' && e.at === 'sent');
      expect(reportAnswered).toBeGreaterThanOrEqual(0);
      expect(nextPoll).toBeGreaterThan(reportAnswered);
    } finally {
      await worker.shutdown();
      await running;
    }
  });

  it('races with events sent through another instance on the same store: every event is seen once, every result counted', async () => {
    // A second instance on the same file; the worker polls this one, the events go through the other.
    const storeUrl = freshStoreUrl();
    const a = await startService({ storeUrl });
    const b = await startService({ storeUrl });
    const worker = await startWorker({ url: b.url, token: a.token, environment: 'next-race' });
    try {
      const viaA = new Engine(a, 'next-race');
      const viaB = new Engine({ ...b, token: a.token } as Service, 'next-race');
      const n = 150;
      const ids = [await viaA.dispatch('CountWhileWorking', [n]), await viaA.dispatch('CountWhileWorking', [n])];
      let sent = 0;
      // Events while the tasks run, until both workflows are past half their tasks.
      await waitFor(
        async () => {
          await Promise.all(ids.map((id) => viaA.send({ id }, 'bump')));
          sent++;
          const histories = await Promise.all(ids.map((id) => viaB.history(id)));
          return histories.every((h) => h.filter((e) => e.type === 'TaskCompleted').length >= n / 2) ? true : null;
        },
        { timeoutMs: 60_000, intervalMs: 5, description: 'both workflows half way with events arriving' },
      );
      await Promise.all(ids.map((id) => viaA.send({ id }, 'stop')));
      for (const id of ids) {
        const done = await viaB.waitForState(id, 'COMPLETED', 60_000);
        expect(done.result).toEqual({ sum: (n * (n - 1)) / 2, bumps: sent });
        const history = await viaB.history(id);
        expect(history.filter((e) => e.type === 'DecisionFailed')).toEqual([]);
        // Both paths ran: results that carried their decision, and results an event got in front
        // of, whose decision was made as usual (about 135 and 15 of 150 here, with some 45 events
        // each; the split depends on how fast events arrive against tasks, so only both are checked).
        const withResult = history.filter((e, i) => e.type === 'DecisionStarted' && history[i - 1]?.type === 'TaskCompleted' && history[i - 1].metadata.at === e.metadata.at);
        expect(withResult.length).toBeGreaterThan(0);
        expect(withResult.length).toBeLessThan(n);
      }
    } finally {
      await worker.stop();
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
