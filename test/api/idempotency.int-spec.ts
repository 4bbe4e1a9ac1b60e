/**
 * Idempotent dispatch: `idempotencyKey` on dispatchWorkflow / dispatchTask, or the
 * `Idempotency-Key` header. The same key (per app, environment and kind) within the retention
 * window answers the first dispatch's id and records nothing new, also when two service
 * instances on one store receive it at the same time; after the window the key starts anew.
 * Also: dispatchTask's tag is stored, shown and filterable.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { freshStoreUrl } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Client, DISPATCH_TASK, DISPATCH_WORKFLOW, expectData, expectError, post, startServices, unique } from './api-helpers.js';

const services = startServices({
  main: {},
  shortWindow: { env: { IDEMPOTENCY_WINDOW_MS: '1000' } },
});
const shared = freshStoreUrl();

afterAll(() => services.stopAll());

const dispatchedEvents = async (api: Client, id: string) => (await api.history(id)).filter((e) => e.type === 'WorkflowDispatched').length;

describe('idempotent dispatch', () => {
  it('the same idempotencyKey returns the first id and starts no second workflow', async () => {
    const api = new Client(await services.get('main'));
    const name = unique('Checkout');
    const key = unique('order-42');
    const first = expectData(await api.dispatchWorkflowRaw({ name, idempotencyKey: key, input: '["a"]' })).dispatchWorkflow.id;
    const again = expectData(await api.dispatchWorkflowRaw({ name, idempotencyKey: key, input: '["a"]' })).dispatchWorkflow.id;
    expect(again).toBe(first);
    expect((await api.workflows({ name })).totalCount).toBe(1);
    expect(await dispatchedEvents(api, first)).toBe(1);
    const recorded = async (id: string) => JSON.parse((await api.history(id)).find((e) => e.type === 'WorkflowDispatched')!.data);
    expect(await recorded(first)).toMatchObject({ workflowId: first, name });

    // Another key, or no key, is another workflow.
    const other = expectData(await api.dispatchWorkflowRaw({ name, idempotencyKey: unique('order-43') })).dispatchWorkflow.id;
    const none = await api.dispatchWorkflow(name);
    expect(new Set([first, other, none]).size).toBe(3);
    expect(await recorded(none)).toMatchObject({ workflowId: none, name });
    expect((await api.workflows({ name })).totalCount).toBe(3);
  });

  it('keys are per app+environment and per kind (a task and a workflow may share one)', async () => {
    const api = new Client(await services.get('main'));
    const key = unique('shared-key');
    const name = unique('Flow');
    const dev = expectData(await api.dispatchWorkflowRaw({ name, idempotencyKey: key })).dispatchWorkflow.id;
    const prod = expectData(await api.in('demo', 'prod').dispatchWorkflowRaw({ name, idempotencyKey: key })).dispatchWorkflow.id;
    const task = expectData(await api.dispatchTaskRaw({ name: 'sendReceipt', idempotencyKey: key })).dispatchTask.id;
    expect(new Set([dev, prod, task]).size).toBe(3);
    expect(await api.in('demo', 'prod').state(prod)).toBe('RUNNING');
  });

  it('the Idempotency-Key header works like the field; both given must agree', async () => {
    const service = await services.get('main');
    const api = new Client(service);
    const name = unique('Header');
    const key = unique('hdr');
    const body = (extra: Record<string, unknown> = {}) => JSON.stringify({ query: DISPATCH_WORKFLOW, variables: { input: { appId: 'demo', environment: 'dev', name, input: '[]', ...extra } } });
    const first = expectData(await post(service, body(), service.token, { 'Idempotency-Key': key })).dispatchWorkflow.id;
    expect(expectData(await post(service, body(), service.token, { 'Idempotency-Key': key })).dispatchWorkflow.id).toBe(first);
    expect(expectData(await post(service, body({ idempotencyKey: key }), service.token, { 'Idempotency-Key': key })).dispatchWorkflow.id).toBe(first);
    expect(expectData(await api.dispatchWorkflowRaw({ name, idempotencyKey: key })).dispatchWorkflow.id).toBe(first);
    expectError(await post(service, body({ idempotencyKey: 'other' }), service.token, { 'Idempotency-Key': key }), 'BAD_USER_INPUT', 'idempotencyKey');
    expect((await api.workflows({ name })).totalCount).toBe(1);

    const taskBody = JSON.stringify({ query: DISPATCH_TASK, variables: { input: { appId: 'demo', environment: 'dev', name: 'sendReceipt', input: '[]' } } });
    const taskKey = unique('task-hdr');
    const t1 = expectData(await post(service, taskBody, service.token, { 'Idempotency-Key': taskKey })).dispatchTask.id;
    expect(expectData(await post(service, taskBody, service.token, { 'Idempotency-Key': taskKey })).dispatchTask.id).toBe(t1);
  });

  it('a key reused for another name within the window is a CONFLICT, and starts nothing', async () => {
    const api = new Client(await services.get('main'));
    const key = unique('reused');
    const name = unique('First');
    await api.dispatchWorkflowRaw({ name, idempotencyKey: key });
    const other = unique('Second');
    expectError(await api.dispatchWorkflowRaw({ name: other, idempotencyKey: key }), 'CONFLICT');
    expect((await api.workflows({ name: other })).totalCount).toBe(0);
  });

  it('refuses an empty or overlong key on the field idempotencyKey', async () => {
    const api = new Client(await services.get('main'));
    expectError(await api.dispatchWorkflowRaw({ name: 'X', idempotencyKey: '' }), 'BAD_USER_INPUT', 'idempotencyKey');
    expectError(await api.dispatchTaskRaw({ name: 'x', idempotencyKey: 'k'.repeat(257) }), 'BAD_USER_INPUT', 'idempotencyKey');
  });

  it('after the retention window the same key dispatches anew, and that new dispatch is the one retried', async () => {
    const api = new Client(await services.get('shortWindow'));
    const name = unique('Windowed');
    const key = unique('win');
    const dispatch = async () => expectData(await api.dispatchWorkflowRaw({ name, idempotencyKey: key })).dispatchWorkflow.id as string;
    const startedAt = Date.now();
    const first = await dispatch();
    const second = await waitFor(async () => {
      const id = await dispatch();
      return id !== first ? id : null;
    }, { timeoutMs: 10_000, intervalMs: 100, description: 'the key to start a new workflow after its window' });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1000);
    expect(await dispatch()).toBe(second);
    expect((await api.workflows({ name })).totalCount).toBe(2);
  });

  it('two instances on one store given the same key at once start one workflow, and both answer its id', async () => {
    const two = startServices({ a: { storeUrl: shared }, b: { storeUrl: shared } });
    try {
      const a = await two.get('a');
      const b = await two.get('b');
      const token = a.token || b.token;
      const apiA = new Client(a, 'demo', 'dev', token);
      const apiB = new Client(b, 'demo', 'dev', token);
      await waitFor(async () => (await apiB.dispatchWorkflowRaw({ name: 'Probe' })).body.data?.dispatchWorkflow?.id, { timeoutMs: 10_000, description: 'B to accept the token' });
      for (let round = 0; round < 5; round++) {
        const name = unique('Race');
        const key = unique('race');
        const ids = await Promise.all([apiA, apiB, apiA, apiB].map(async (api) => expectData(await api.dispatchWorkflowRaw({ name, idempotencyKey: key })).dispatchWorkflow.id));
        expect(new Set(ids).size).toBe(1);
        const list = await waitFor(async () => {
          const l = await apiA.workflows({ name });
          return l.totalCount > 0 ? l : null;
        }, { description: 'the workflow in A' });
        expect(list.totalCount).toBe(1);
        expect(await dispatchedEvents(apiA, ids[0])).toBe(1);
      }
    } finally {
      await two.stopAll();
    }
  });
});

describe('dispatchTask tag', () => {
  it('is stored, shown on the task and filters the tasks query', async () => {
    const api = new Client(await services.get('main'));
    const tag = unique('invoice');
    const tagged = expectData(await api.dispatchTaskRaw({ name: 'sendReceipt', tag, input: '["ada@example.com"]' })).dispatchTask.id;
    const untagged = await api.dispatchTask('sendReceipt');
    const tagOf = async (id: string) =>
      expectData(await api.gql('query($id: ID!) { task(appId: "demo", environment: "dev", id: $id) { tag } }', { id })).task.tag;
    expect(await tagOf(tagged)).toBe(tag);
    expect(await tagOf(untagged)).toBeNull();
    const list = await api.tasks({ tag });
    expect(list.nodes.map((t) => t.id)).toEqual([tagged]);
    expect((await api.tasks({ name: 'sendReceipt' })).totalCount).toBeGreaterThanOrEqual(2);
  });
});
