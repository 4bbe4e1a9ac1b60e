/**
 * Pausing a workflow while one of its decisions is in flight (DESIGN §3: while paused, "nothing
 * new is dispatched"; README: "nothing new is dispatched until they are resumed"). The decision
 * is held open by an inline step that waits for the test; the workflow is paused meanwhile; what
 * the decision asks for (a child workflow, a fire-and-forget task, an event to another workflow)
 * must not happen before the workflow is resumed. A real service and an in-process SDK worker.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Client, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'pause-in-flight';

let stepRunning = false;
let openGate: () => void = () => {};
const gate = new Promise<void>((resolve) => {
  openGate = resolve;
});
/** What the parent's code asked for, as its ids. */
const started: { child?: string; task?: string } = {};

const note = defineTask('note', (_ctx, text: string) => text);
const leaf = defineWorkflow('PauseLeaf', async () => 'leaf');
/** Waits for `ping`, then completes: a workflow another one sends an event to. */
const listener = defineWorkflow('PauseListener', async (ctx) => (await ctx.waitForEvent('ping'))![1]);

/** Holds its first decision open, then starts a child, a task and an event to `listenerId`. */
const parent = defineWorkflow('PauseParent', async (ctx, listenerId: string) => {
  await ctx.step('hold', async () => {
    stepRunning = true;
    await gate;
    return 'held';
  });
  started.child = ctx.dispatch(leaf);
  started.task = ctx.dispatch(note, 'from the parent');
  ctx.select({ id: listenerId }).send('ping', 'from the parent');
  await ctx.waitForEvent('done');
  return 'parent done';
});

/** Sends `barrier` to a workflow: once its ControlApplied is recorded, every earlier effect of the app is carried out. */
const sender = defineWorkflow('PauseBarrier', async (ctx, targetId: string) => {
  ctx.select({ id: targetId }).send('barrier');
  return 'sent';
});

let client: Client;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ client, stop } = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [note], workflows: [leaf, listener, parent, sender] }));
});

afterAll(async () => {
  openGate();
  await stop?.();
});

const history = (id: string) => client.workflowHistory(APP, ENV, id);

describe('a workflow paused while its decision is in flight', () => {
  it('starts nothing that decision asked for (child, task, event) until it is resumed', async () => {
    const listenerId = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'PauseListener', input: [] });
    const id = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'PauseParent', input: [listenerId] });
    await waitFor(() => stepRunning, { timeoutMs: 10_000, description: 'the step of the first decision to run' });

    expect(await client.pauseWorkflows({ appId: APP, environment: ENV, selector: { id } })).toMatchObject({ changed: 1 });
    openGate();
    // The worker's report of that decision has been handled: no decision is open any more.
    await waitFor(
      async () => {
        const events = await history(id);
        const lastStart = events.map((e) => e.type).lastIndexOf('DecisionStarted');
        return events.slice(lastStart + 1).some((e) => e.type.startsWith('Decision'));
      },
      { timeoutMs: 10_000, description: 'the in-flight decision to be reported' },
    );
    // Every effect recorded before this one has been carried out once its ControlApplied is in.
    const barrierId = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'PauseBarrier', input: [listenerId] });
    await waitFor(async () => (await history(barrierId)).some((e) => e.type === 'ControlApplied'), { timeoutMs: 10_000, description: 'the barrier' });

    expect((await client.workflow(APP, ENV, id))!.state).toBe('PAUSED');
    expect(started.child).toBeDefined();
    expect(await client.workflow(APP, ENV, started.child!)).toBeNull();
    const listenerEvents = await history(listenerId);
    expect(listenerEvents.filter((e) => e.type === 'WorkflowEventReceived').map((e) => (e.data as { name: string }).name)).toEqual(['barrier']);
    const { tasks } = await client.request<{ tasks: { totalCount: number } }>(
      'query($filter: TaskFilterInput!) { tasks(filter: $filter) { totalCount } }',
      { filter: { appId: APP, environment: ENV, name: 'note' } },
    );
    expect(tasks.totalCount).toBe(0);

    // Resumed, it does all of it.
    await client.resumeWorkflows({ appId: APP, environment: ENV, selector: { id } });
    expect(await client.awaitWorkflow(APP, ENV, listenerId, { timeoutMs: 10_000 })).toMatchObject({ state: 'COMPLETED', output: '"from the parent"' });
    expect(await client.awaitWorkflow(APP, ENV, started.child!, { timeoutMs: 10_000 })).toMatchObject({ state: 'COMPLETED' });
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'done', data: [] });
    expect(await client.awaitWorkflow(APP, ENV, id, { timeoutMs: 10_000 })).toMatchObject({ state: 'COMPLETED' });
  });
});
