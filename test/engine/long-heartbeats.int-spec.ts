/**
 * A task that runs for hours heartbeats all along, and each heartbeat past half
 * its lease appends `TaskLeaseExtended` to its workflow's stream (two an hour per minute of
 * lease: 240 an hour at the default LEASE_MS of 30 s). The workflow's code cannot cut that run
 * (`continueAsNew`) while it waits on the task, so the run grows with the heartbeats alone.
 * Nothing of the engine should cost more because a task heartbeated for a day: the write path's
 * cold load of the workflow (after a restart, or once the stream cache dropped it) and the next
 * decision's history.
 *
 * The day of heartbeats is written to the stopped service's store as the engine records them
 * (the attempt's own `TaskLeaseExtended`, its `seq` and `attemptId`), as long-history.int-spec
 * does for a schedule's firings.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freshStoreUrl, ROOT, Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

/** A day of heartbeats at the default lease (30 s): one extension every 15 s. */
const HEARTBEATS = 5_760;
const scope = { appId: 'demo', environment: 'review-time' };
const POLL = `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref workflowId taskId decisionId attemptId history historyFrom runFrom } }`;
const REPORT = `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { ref code message } } }`;
const HEARTBEAT = `mutation($input: HeartbeatInput!) { heartbeat(input: $input) { ref cancel reason } }`;
const DECISION_HISTORY = `query($input: DecisionHistoryInput!) { decisionHistory(input: $input) }`;

interface Item {
  kind: 'DECISION' | 'TASK';
  ref: string;
  workflowId: string;
  taskId: string | null;
  decisionId: string | null;
  attemptId: string | null;
  history: string | null;
  historyFrom: number | null;
  runFrom: number | null;
}

async function sample(service: Service, series: string): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  // A series with labels is summed over them.
  const lines = text.split('\n').filter((l) => l.startsWith(`${series} `) || l.startsWith(`${series}{`));
  expect({ series, present: lines.length > 0 }).toEqual({ series, present: true });
  return lines.reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

async function data<T = any>(service: Service, query: string, variables: Record<string, unknown>, token: string): Promise<T> {
  const response = await service.gql<T>(query, variables, token);
  expect(response.body.errors).toBeUndefined();
  return response.body.data!;
}

const poll = (service: Service, token: string, workerId: string, kind: 'DECISION' | 'TASK', names: { workflow: string; task: string }, workflowId: string): Promise<Item> =>
  waitFor(
    async () => {
      const input = { ...scope, workerId, workflows: kind === 'DECISION' ? [names.workflow] : [], tasks: kind === 'TASK' ? [{ name: names.task }] : [], waitMs: 500 };
      const items = (await data<{ pollWork: Item[] }>(service, POLL, { input }, token)).pollWork;
      return items.find((i) => i.kind === kind && i.workflowId === workflowId);
    },
    { timeoutMs: 15_000, description: `a ${kind} of ${workflowId}` },
  );

describe('a workflow whose task heartbeated for a day', () => {
  let service: Service | undefined;
  let token: string;
  let id: string;
  let task: Item;
  let runLength: number;
  const names = { workflow: `Long-${randomUUID().slice(0, 8)}`, task: `Crunch-${randomUUID().slice(0, 8)}` };
  afterAll(() => service?.stop());

  beforeAll(async () => {
    const storeUrl = freshStoreUrl();
    service = await startService({ storeUrl });
    token = service.token;
    const dispatched = await data(service, 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', { input: { ...scope, name: names.workflow, input: '[]' } }, token);
    id = dispatched.dispatchWorkflow.id;
    const first = await poll(service, token, 'worker-a', 'DECISION', names, id);
    const commands = JSON.stringify([{ type: 'ScheduleTask', seq: 0, name: names.task, args: [] }]);
    expect((await data(service, REPORT, { input: { ...scope, workerId: 'worker-a', decisions: [{ ref: first.ref, decisionId: first.decisionId, commands }] } }, token)).reportWork).toEqual({ accepted: 1, rejected: [] });
    task = await poll(service, token, 'worker-a', 'TASK', names, id);
    await service.stop();

    // A day of heartbeats, recorded as the engine records them.
    const { SqliteEventStore } = await import(pathToFileURL(join(ROOT, 'dist/src/event-store/sqlite/sqlite-event-store.js')).href);
    const store = new SqliteEventStore(storeUrl.slice('sqlite:'.length));
    const existing = await store.readStream(`workflow-${id}`);
    let revision: bigint = existing[existing.length - 1].revision;
    runLength = existing.length;
    const now = Date.now();
    for (let i = 0; i < HEARTBEATS; i += 1_000) {
      const batch = Array.from({ length: Math.min(1_000, HEARTBEATS - i) }, (_, j) => ({
        id: randomUUID(),
        type: 'TaskLeaseExtended',
        data: { seq: 0, attemptId: task.attemptId, leaseExpiresAt: new Date(now + 10 * 60_000 + i + j).toISOString() },
        metadata: { actor: 'worker:test', appId: scope.appId, environment: scope.environment, correlationId: randomUUID(), at: new Date(now).toISOString() },
      }));
      revision = (await store.append(`workflow-${id}`, batch, revision)).nextExpectedRevision;
    }
    await store.close();

    service = await startService({ storeUrl });
  }, 120_000);

  it('is loaded after a restart without reading the heartbeats back', async () => {
    service = service!;
    // One heartbeat: the first command on the workflow since the restart (a cold load).
    const before = await sample(service, 'baton_stream_events_read_total');
    const beat = await data(service, HEARTBEAT, { input: { ...scope, workerId: 'worker-a', attempts: [{ ref: task.ref, attemptId: task.attemptId }] } }, token);
    expect(beat.heartbeat).toEqual([{ ref: task.ref, cancel: false, reason: null }]);
    const read = (await sample(service, 'baton_stream_events_read_total')) - before;
    // The engine holds this workflow's state (it is in flight): the cold load need not read the
    // day of heartbeats back (HEARTBEATS + the run's own events on main).
    expect({ eventsRead: read }).toEqual({ eventsRead: expect.any(Number) });
    expect(read).toBeLessThan(runLength + 10);
  }, 60_000);

  it("hands its next decision a history without the heartbeats", async () => {
    service = service!;

    // The task ends; a worker that does not hold the run claims the next decision.
    expect((await data(service, REPORT, { input: { ...scope, workerId: 'worker-a', tasks: [{ ref: task.ref, attemptId: task.attemptId, result: '42' }] } }, token)).reportWork).toEqual({ accepted: 1, rejected: [] });
    const next = await poll(service, token, 'worker-b', 'DECISION', names, id);
    const history: Array<{ type: string }> = [];
    history.push(...(JSON.parse(next.history ?? '[]') as Array<{ type: string }>));
    if (next.historyFrom !== next.runFrom) {
      // Left out of the claim as too large: the worker pages it in.
      history.length = 0;
      for (let from = next.runFrom!; ; ) {
        const page = JSON.parse((await data(service, DECISION_HISTORY, { input: { ...scope, workerId: 'worker-b', ref: next.ref, decisionId: next.decisionId, fromRevision: from } }, token)).decisionHistory) as Array<{ revision: number; type: string }>;
        history.push(...page);
        const last = page[page.length - 1];
        if (!last || last.type === 'DecisionStarted') break;
        from = last.revision + 1;
      }
    }
    const types = history.map((e) => e.type);
    expect(types).toContain('TaskCompleted');
    // The SDK's replay skips lease extensions: carrying a day of them costs the answer (and the
    // requests paging them in), not the workflow's code anything it needs.
    expect({ leaseExtensions: types.filter((t) => t === 'TaskLeaseExtended').length, events: types.length }).toEqual({ leaseExtensions: 0, events: expect.any(Number) });
    expect(types.length).toBeLessThan(20);
  }, 60_000);
});

describe('a standalone task that heartbeated for a day', () => {
  let service: Service | undefined;
  afterAll(() => service?.stop());

  it('is loaded after a restart without reading the heartbeats back', async () => {
    const storeUrl = freshStoreUrl();
    service = await startService({ storeUrl });
    const token = service.token;
    const name = `Batch-${randomUUID().slice(0, 8)}`;
    const id: string = (await data(service, 'mutation($input: DispatchTaskInput!) { dispatchTask(input: $input) { id } }', { input: { ...scope, name, input: '[]' } }, token)).dispatchTask.id;
    const task = await waitFor(
      async () => {
        const input = { ...scope, workerId: 'worker-a', workflows: [], tasks: [{ name }], waitMs: 500 };
        return (await data<{ pollWork: Item[] }>(service!, POLL, { input }, token)).pollWork.find((i) => i.taskId === id);
      },
      { timeoutMs: 15_000, description: 'the task claimed' },
    );
    await service.stop();

    const { SqliteEventStore } = await import(pathToFileURL(join(ROOT, 'dist/src/event-store/sqlite/sqlite-event-store.js')).href);
    const store = new SqliteEventStore(storeUrl.slice('sqlite:'.length));
    const existing = await store.readStream(`task-${id}`);
    let revision: bigint = existing[existing.length - 1].revision;
    const now = Date.now();
    for (let i = 0; i < HEARTBEATS; i += 1_000) {
      const batch = Array.from({ length: Math.min(1_000, HEARTBEATS - i) }, (_, j) => ({
        id: randomUUID(),
        type: 'TaskLeaseExtended',
        data: { attemptId: task.attemptId, leaseExpiresAt: new Date(now + 10 * 60_000 + i + j).toISOString() },
        metadata: { actor: 'worker:test', appId: scope.appId, environment: scope.environment, correlationId: randomUUID(), at: new Date(now).toISOString() },
      }));
      revision = (await store.append(`task-${id}`, batch, revision)).nextExpectedRevision;
    }
    await store.close();

    service = await startService({ storeUrl });
    const before = await sample(service, 'baton_stream_events_read_total');
    const beat = await data(service, HEARTBEAT, { input: { ...scope, workerId: 'worker-a', attempts: [{ ref: task.ref, attemptId: task.attemptId }] } }, token);
    expect(beat.heartbeat).toEqual([{ ref: task.ref, cancel: false, reason: null }]);
    // A task's stream has no reset point: on main the cold load read all HEARTBEATS + 2 events.
    expect((await sample(service, 'baton_stream_events_read_total')) - before).toBeLessThan(10);
    // It still completes.
    expect((await data(service, REPORT, { input: { ...scope, workerId: 'worker-a', tasks: [{ ref: task.ref, attemptId: task.attemptId, result: '7' }] } }, token)).reportWork).toEqual({ accepted: 1, rejected: [] });
  }, 120_000);
});

describe('pause and resume of a workflow with 10,000 open tasks and timers', () => {
  let service: Service | undefined;
  afterAll(() => service?.stop());

  it('append one event each and read nothing back; the open work is all there after resume', async () => {
    service = await startService({});
    const token = service.token;
    const names = { workflow: `Wide-${randomUUID().slice(0, 8)}`, task: `Unit-${randomUUID().slice(0, 8)}` };
    const id: string = (await data(service, 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', { input: { ...scope, name: names.workflow, input: '[]' } }, token)).dispatchWorkflow.id;
    const first = await poll(service, token, 'worker-a', 'DECISION', names, id);
    const inAYear = new Date(Date.now() + 365 * 86_400_000).toISOString();
    const commands = [
      ...Array.from({ length: 5_000 }, (_, seq) => ({ type: 'ScheduleTask', seq, name: names.task, args: [] })),
      ...Array.from({ length: 5_000 }, (_, i) => ({ type: 'StartTimer', seq: 5_000 + i, fireAt: inAYear })),
    ];
    expect((await data(service, REPORT, { input: { ...scope, workerId: 'worker-a', decisions: [{ ref: first.ref, decisionId: first.decisionId, commands: JSON.stringify(commands) }] } }, token)).reportWork).toEqual({ accepted: 1, rejected: [] });
    const length = async () => (await data(service!, `query($appId: String!, $environment: String!, $id: ID!) { workflow(appId: $appId, environment: $environment, id: $id) { historyLength state } }`, { ...scope, id }, token)).workflow;
    await waitFor(async () => (await length()).historyLength >= 10_003, { timeoutMs: 30_000, description: 'the decision recorded' });

    const appendedBefore = await sample(service, 'baton_store_events_appended_total');
    const readBefore = await sample(service, 'baton_stream_events_read_total');
    const historyBefore = (await length()).historyLength;
    const act = async (action: 'pause' | 'resume') => {
      const field = action === 'pause' ? 'pauseWorkflows' : 'resumeWorkflows';
      const started = performance.now();
      const answer = (await data(service!, `mutation($input: ${action === 'pause' ? 'Pause' : 'Resume'}WorkflowsInput!) { ${field}(input: $input) { changed } }`, { input: { ...scope, selector: { id } } }, token))[field];
      return { changed: answer.changed, ms: performance.now() - started };
    };
    const paused = await act('pause');
    expect(paused.changed).toBe(1);
    // Paused, none of its 5,000 tasks is claimable.
    const input = { ...scope, workerId: 'worker-b', workflows: [], tasks: [{ name: names.task }], waitMs: 0 };
    expect((await data<{ pollWork: Item[] }>(service, POLL, { input }, token)).pollWork).toEqual([]);
    const resumed = await act('resume');
    expect(resumed.changed).toBe(1);
    expect({
      appended: (await sample(service, 'baton_store_events_appended_total')) - appendedBefore,
      read: (await sample(service, 'baton_stream_events_read_total')) - readBefore,
      history: (await length()).historyLength - historyBefore,
    }).toEqual({ appended: 2, read: 0, history: 2 });
    // Resumed, its tasks are claimable again.
    const claimed = await waitFor(
      async () => {
        const items = (await data<{ pollWork: Item[] }>(service!, POLL, { input: { ...input, maxItems: 10, waitMs: 500 } }, token)).pollWork;
        return items.length > 0 ? items : null;
      },
      { timeoutMs: 15_000, description: 'tasks claimed after resume' },
    );
    expect(claimed.length).toBeGreaterThan(0);
  }, 120_000);
});
