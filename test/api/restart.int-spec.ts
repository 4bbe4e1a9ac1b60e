/**
 * Restarts on the same store: after SIGTERM or SIGKILL a new service answers from the log, so
 * ids, tags, states, histories, lists and selectors all work as before.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { Client, HistoryRow, WorkflowRow, unique } from './api-helpers.js';

describe('restart after SIGTERM', () => {
  let first: Service;
  let second: Service;
  let token: string;
  let api: Client;
  const order = unique('Order');
  const invoice = unique('Invoice');
  const ids: Record<string, string> = {};
  let before: Map<string, { workflow: WorkflowRow; history: HistoryRow[] }>;
  let allBefore: WorkflowRow[];
  let taskId: string;

  beforeAll(async () => {
    first = await startService();
    token = first.token;
    const api1 = new Client(first, 'demo', 'dev', token);
    for (let i = 0; i < 5; i++) ids[`order${i}`] = await api1.dispatchWorkflow(order, { tag: `id:${i}`, input: `[${i}]` });
    for (let i = 0; i < 3; i++) ids[`invoice${i}`] = await api1.dispatchWorkflow(invoice, { input: `["inv-${i}"]` });
    await api1.act('pause', { id: ids.order1 });
    await api1.act('terminate', { id: ids.order2 });
    await api1.act('send', { name: order, tag: 'id:0' }, { name: 'Paid', data: '[{"amount":10}]' });
    taskId = await api1.dispatchTask(unique('Receipt'), '["r"]');

    before = new Map();
    for (const id of Object.values(ids)) before.set(id, { workflow: (await api1.workflow(id))!, history: await api1.history(id) });
    allBefore = (await api1.workflows({}, { first: 500 })).nodes;

    await first.stop();
    expect(first.process.exitCode ?? first.process.signalCode).not.toBeNull();
    second = await startService({ storeUrl: first.storeUrl });
    api = new Client(second, 'demo', 'dev', token);
  });
  afterAll(async () => {
    await first?.stop();
    await second?.stop();
  });

  it('the old token still works and no new bootstrap token is created', async () => {
    expect(second.output()).not.toMatch(/BATON_BOOTSTRAP_TOKEN=/);
    expect((await api.workflowsRaw()).status).toBe(200);
  });

  it('workflow(id) answers every workflow exactly as before', async () => {
    for (const [id, { workflow }] of before) expect(await api.workflow(id)).toEqual(workflow);
    expect(await api.state(ids.order0)).toBe('RUNNING');
    expect(await api.state(ids.order1)).toBe('PAUSED');
    expect(await api.state(ids.order2)).toBe('TERMINATED');
  });

  it('workflowHistory answers every history exactly as before', async () => {
    for (const [id, { history }] of before) expect(await api.history(id)).toEqual(history);
  });

  it('task(id) answers the task as before', async () => {
    expect(await api.task(taskId)).toMatchObject({ id: taskId, state: 'PENDING', input: '["r"]' });
  });

  it('workflows filters by name, tag and state', async () => {
    expect((await api.workflows({}, { first: 500 })).nodes).toEqual(allBefore);
    const orders = await api.workflows({ name: order });
    expect(orders.totalCount).toBe(5);
    expect(orders.nodes.map((w) => w.id)).toEqual([0, 1, 2, 3, 4].map((i) => ids[`order${i}`]));
    expect((await api.workflows({ name: order, tag: 'id:3' })).nodes.map((w) => w.id)).toEqual([ids.order3]);
    expect((await api.workflows({ tag: 'id:3' })).nodes.map((w) => w.id)).toEqual([ids.order3]);
    expect((await api.workflows({ name: order, state: 'PAUSED' })).nodes.map((w) => w.id)).toEqual([ids.order1]);
    expect((await api.workflows({ name: order, state: 'TERMINATED' })).nodes.map((w) => w.id)).toEqual([ids.order2]);
    expect((await api.workflows({ name: order, state: 'RUNNING' })).totalCount).toBe(3);
    expect((await api.workflows({ name: invoice, state: 'RUNNING' })).totalCount).toBe(3);
    expect((await api.workflows({ name: invoice, tag: 'id:0' })).totalCount).toBe(0);
  });

  it('workflows pages with first/after: totalCount, pageInfo, every workflow once, in dispatch order', async () => {
    const expected = allBefore.map((w) => w.id);
    const seen: string[] = [];
    let after: string | null = null;
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(10);
      const page = await api.workflows({}, { first: 3, after });
      expect(page.totalCount).toBe(expected.length);
      expect(page.nodes.length).toBeLessThanOrEqual(3);
      seen.push(...page.nodes.map((w) => w.id));
      expect(page.pageInfo.endCursor?.replace(/^\d+:/, '') ?? null).toBe(page.nodes.at(-1)?.id ?? null);
      if (!page.pageInfo.hasNextPage) break;
      expect(page.nodes).toHaveLength(3);
      after = page.pageInfo.endCursor;
    }
    expect(seen).toEqual(expected);
    const past = await api.workflows({}, { first: 3, after: expected.at(-1) });
    expect(past).toMatchObject({ nodes: [], totalCount: expected.length, pageInfo: { hasNextPage: false, endCursor: null } });
  });

  it('{ name, tag } selectors still find their workflow; terminated ones are still skipped', async () => {
    expect(await api.act('send', { name: order, tag: 'id:4' }, { name: 'Ping', data: '[]' })).toEqual({
      status: 'OK',
      matched: 1,
      changed: 1,
      workflowIds: [ids.order4],
    });
    expect(await api.act('resume', { name: order, tag: 'id:1' })).toMatchObject({ matched: 1, changed: 1, workflowIds: [ids.order1] });
    expect(await api.act('pause', { name: order, tag: 'id:2' })).toMatchObject({ status: 'NO_MATCH', matched: 0 });
    const byName = await api.act('send', { name: order }, { name: 'All', data: '[]' });
    expect([...byName.workflowIds].sort()).toEqual([ids.order0, ids.order1, ids.order3, ids.order4].sort());
  });

  it('workflows dispatched after the restart come after the old ones', async () => {
    const fresh = await api.dispatchWorkflow(order, { tag: 'id:5' });
    const list = await api.workflows({ name: order });
    expect(list.nodes.map((w) => w.id).at(-1)).toBe(fresh);
    expect(list.totalCount).toBe(6);
  });
});

describe('restart after SIGKILL', () => {
  let first: Service;
  let second: Service;

  afterAll(async () => {
    await first?.stop();
    await second?.stop();
  });

  it('every acknowledged dispatch and control action survives a kill -9', async () => {
    first = await startService();
    const token = first.token;
    const api1 = new Client(first, 'demo', 'dev', token);
    const name = unique('Durable');
    const workflows = await Promise.all(Array.from({ length: 40 }, (_, i) => api1.dispatchWorkflow(name, { tag: `n:${i % 4}`, input: `[${i}]` })));
    const tasks = await Promise.all(Array.from({ length: 10 }, (_, i) => api1.dispatchTask(`${name}-task`, `[${i}]`)));
    expect(await api1.act('pause', { name, tag: 'n:1' })).toMatchObject({ matched: 10, changed: 10 });
    expect(await api1.act('terminate', { name, tag: 'n:2' })).toMatchObject({ matched: 10, changed: 10 });
    await first.kill();
    expect(first.process.signalCode).toBe('SIGKILL');

    second = await startService({ storeUrl: first.storeUrl });
    const api = new Client(second, 'demo', 'dev', token);
    for (const [i, id] of workflows.entries()) {
      const workflow = await api.workflow(id);
      expect({ i, found: workflow !== null }).toEqual({ i, found: true });
      expect(JSON.parse(workflow!.input)).toEqual([i]);
      expect(workflow!.state).toBe({ 1: 'PAUSED', 2: 'TERMINATED' }[i % 4] ?? 'RUNNING');
    }
    for (const id of tasks) expect(await api.task(id)).toMatchObject({ id, state: 'PENDING' });
    expect((await api.workflows({ name }, { first: 500 })).totalCount).toBe(40);
    expect(await api.act('send', { name, tag: 'n:0' }, { name: 'AfterCrash', data: '[]' })).toMatchObject({ matched: 10, changed: 10 });
    expect(await api.act('send', { name, tag: 'n:2' }, { name: 'AfterCrash', data: '[]' })).toMatchObject({ status: 'NO_MATCH' });
  });
});
