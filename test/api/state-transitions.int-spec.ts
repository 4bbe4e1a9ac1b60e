/**
 * The rows of the workflow state table (DESIGN §3) that need no worker, driven through the
 * GraphQL API and read back through `workflow`, `workflows` and `workflowHistory`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { Client, unique } from './api-helpers.js';

describe('workflow state transitions', () => {
  let service: Service;
  let api: Client;

  beforeAll(async () => {
    service = await startService();
    api = new Client(service, 'demo', 'dev');
  });
  afterAll(() => service?.stop());

  const types = async (id: string) => (await api.history(id)).map((e) => e.type);

  /** A fresh workflow in the given state. */
  async function workflowIn(state: 'running' | 'paused' | 'terminated', tag?: string): Promise<{ id: string; name: string }> {
    const name = unique('Flow');
    const id = await api.dispatchWorkflow(name, tag ? { tag } : {});
    if (state === 'paused') expect(await api.act('pause', { id })).toMatchObject({ changed: 1 });
    if (state === 'terminated') expect(await api.act('terminate', { id })).toMatchObject({ changed: 1 });
    return { id, name };
  }

  it('dispatchWorkflow → RUNNING, with one WorkflowDispatched event', async () => {
    const { id } = await workflowIn('running');
    expect(await api.state(id)).toBe('RUNNING');
    const history = await api.history(id);
    expect(history.map((e) => [e.revision, e.type])).toEqual([[0, 'WorkflowDispatched']]);
    expect(JSON.parse(history[0].metadata)).toMatchObject({ appId: 'demo', environment: 'dev' });
  });

  it('running → pause → PAUSED (changed 1, WorkflowPaused recorded)', async () => {
    const { id } = await workflowIn('running');
    expect(await api.act('pause', { id })).toEqual({ status: 'OK', matched: 1, changed: 1, workflowIds: [id] });
    expect(await api.state(id)).toBe('PAUSED');
    expect(await types(id)).toEqual(['WorkflowDispatched', 'WorkflowPaused']);
  });

  it('paused → pause → no change (changed 0, nothing recorded)', async () => {
    const { id } = await workflowIn('paused');
    expect(await api.act('pause', { id })).toEqual({ status: 'OK', matched: 1, changed: 0, workflowIds: [id] });
    expect(await api.state(id)).toBe('PAUSED');
    expect(await types(id)).toEqual(['WorkflowDispatched', 'WorkflowPaused']);
  });

  it('paused → resume → RUNNING (changed 1, WorkflowResumed recorded)', async () => {
    const { id } = await workflowIn('paused');
    expect(await api.act('resume', { id })).toEqual({ status: 'OK', matched: 1, changed: 1, workflowIds: [id] });
    expect(await api.state(id)).toBe('RUNNING');
    expect(await types(id)).toEqual(['WorkflowDispatched', 'WorkflowPaused', 'WorkflowResumed']);
  });

  it('running → resume → no change (changed 0, nothing recorded)', async () => {
    const { id } = await workflowIn('running');
    expect(await api.act('resume', { id })).toEqual({ status: 'OK', matched: 1, changed: 0, workflowIds: [id] });
    expect(await api.state(id)).toBe('RUNNING');
    expect(await types(id)).toEqual(['WorkflowDispatched']);
  });

  it('running → terminate → TERMINATED, with the reason recorded', async () => {
    const { id } = await workflowIn('running');
    expect(await api.act('terminate', { id }, { reason: 'customer left' })).toEqual({ status: 'OK', matched: 1, changed: 1, workflowIds: [id] });
    expect(await api.state(id)).toBe('TERMINATED');
    const history = await api.history(id);
    expect(history.map((e) => e.type)).toEqual(['WorkflowDispatched', 'WorkflowTerminated']);
    expect(JSON.parse(history[1].data)).toEqual({ reason: 'customer left' });
  });

  it('paused → terminate → TERMINATED', async () => {
    const { id } = await workflowIn('paused');
    expect(await api.act('terminate', { id })).toEqual({ status: 'OK', matched: 1, changed: 1, workflowIds: [id] });
    expect(await api.state(id)).toBe('TERMINATED');
    expect(await types(id)).toEqual(['WorkflowDispatched', 'WorkflowPaused', 'WorkflowTerminated']);
  });

  it('terminated → sendEventToWorkflows by id → nothing recorded (no WorkflowEventReceived)', async () => {
    const { id } = await workflowIn('terminated');
    expect(await api.act('send', { id }, { name: 'Late', data: '[1]' })).toEqual({ status: 'OK', matched: 1, changed: 0, workflowIds: [id] });
    expect(await types(id)).toEqual(['WorkflowDispatched', 'WorkflowTerminated']);
    expect(await api.state(id)).toBe('TERMINATED');
  });

  it.each(['pause', 'resume', 'terminate'] as const)('terminated → %s by id → unchanged (changed 0, nothing recorded)', async (action) => {
    const { id } = await workflowIn('terminated');
    expect(await api.act(action, { id })).toEqual({ status: 'OK', matched: 1, changed: 0, workflowIds: [id] });
    expect(await api.state(id)).toBe('TERMINATED');
    expect(await types(id)).toEqual(['WorkflowDispatched', 'WorkflowTerminated']);
  });

  it.each(['pause', 'resume', 'terminate', 'send'] as const)('%s by name or name+tag skips terminated workflows (NO_MATCH when only they match)', async (action) => {
    const { id, name } = await workflowIn('terminated', 'id:7');
    expect(await api.act(action, { name })).toEqual({ status: 'NO_MATCH', matched: 0, changed: 0, workflowIds: [] });
    expect(await api.act(action, { name, tag: 'id:7' })).toEqual({ status: 'NO_MATCH', matched: 0, changed: 0, workflowIds: [] });
    expect(await types(id)).toEqual(['WorkflowDispatched', 'WorkflowTerminated']);
  });

  it('a name selector acts on the running and paused workflows of that name and not the terminated one', async () => {
    const name = unique('Mixed');
    const running = await api.dispatchWorkflow(name, { tag: 'x' });
    const paused = await api.dispatchWorkflow(name, { tag: 'x' });
    const terminated = await api.dispatchWorkflow(name, { tag: 'x' });
    await api.act('pause', { id: paused });
    await api.act('terminate', { id: terminated });

    const send = await api.act('send', { name, tag: 'x' }, { name: 'Hello', data: '[]' });
    expect(send).toMatchObject({ status: 'OK', matched: 2, changed: 2 });
    expect([...send.workflowIds].sort()).toEqual([running, paused].sort());

    const terminate = await api.act('terminate', { name });
    expect(terminate).toMatchObject({ status: 'OK', matched: 2, changed: 2 });
    expect(await types(terminated)).toEqual(['WorkflowDispatched', 'WorkflowTerminated']);
    const list = await api.workflows({ name });
    expect(list.nodes.map((w) => w.state)).toEqual(['TERMINATED', 'TERMINATED', 'TERMINATED']);
    expect(await api.act('pause', { name })).toMatchObject({ status: 'NO_MATCH', matched: 0 });
  });

  it('events sent to a paused workflow are recorded in the order they were sent, with their data', async () => {
    const { id, name } = await workflowIn('paused', 'order:42');
    const sent = [
      { name: 'ItemAdded', data: '[{"sku":"A"}]' },
      { name: 'ItemAdded', data: '[{"sku":"B"},2]' },
      { name: 'CheckedOut', data: '[]' },
      { name: 'Note', data: '["ünïcødé ✓", null, true]' },
    ];
    for (const [i, event] of sent.entries()) {
      const selector = i % 2 === 0 ? { id } : { name, tag: 'order:42' };
      expect(await api.act('send', selector, event)).toEqual({ status: 'OK', matched: 1, changed: 1, workflowIds: [id] });
    }
    expect(await api.state(id)).toBe('PAUSED');
    const received = (await api.history(id)).filter((e) => e.type === 'WorkflowEventReceived').map((e) => JSON.parse(e.data));
    expect(received).toEqual(sent.map((e) => ({ name: e.name, data: JSON.parse(e.data) })));
    const revisions = (await api.history(id)).map((e) => e.revision);
    expect(revisions).toEqual(revisions.map((_, i) => i));
  });

  it('events sent to a running workflow are recorded too', async () => {
    const { id } = await workflowIn('running');
    expect(await api.act('send', { id }, { name: 'Ping', data: '[1]' })).toMatchObject({ changed: 1 });
    expect(await types(id)).toEqual(['WorkflowDispatched', 'WorkflowEventReceived']);
  });

  it('pause, resume, pause, terminate: the history holds every change in order and updatedAt moves forward', async () => {
    const { id } = await workflowIn('running');
    const created = (await api.workflow(id))!;
    await api.act('pause', { id });
    await api.act('resume', { id });
    await api.act('pause', { id });
    await api.act('terminate', { id });
    expect(await types(id)).toEqual(['WorkflowDispatched', 'WorkflowPaused', 'WorkflowResumed', 'WorkflowPaused', 'WorkflowTerminated']);
    const final = (await api.workflow(id))!;
    expect(final.state).toBe('TERMINATED');
    expect(final.createdAt).toBe(created.createdAt);
    expect(Date.parse(final.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));
  });

  it('the workflows query filters by state', async () => {
    const name = unique('Filter');
    const running = await api.dispatchWorkflow(name);
    const paused = await api.dispatchWorkflow(name);
    const terminated = await api.dispatchWorkflow(name);
    await api.act('pause', { id: paused });
    await api.act('terminate', { id: terminated });
    const ids = async (state: string) => (await api.workflows({ name, state })).nodes.map((w) => w.id);
    expect(await ids('RUNNING')).toEqual([running]);
    expect(await ids('PAUSED')).toEqual([paused]);
    expect(await ids('TERMINATED')).toEqual([terminated]);
    expect(await ids('COMPLETED')).toEqual([]);
  });
});
