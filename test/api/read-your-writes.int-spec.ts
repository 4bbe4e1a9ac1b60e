/**
 * A client that dispatches and at once acts on what it dispatched must see its write: the
 * mutation answers only once its events are in the read models that selectors use.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { Client, expectData, unique } from './api-helpers.js';

describe('read your writes', () => {
  let service: Service;
  let api: Client;

  beforeAll(async () => {
    service = await startService();
    api = new Client(service, 'demo', 'dev');
  });
  afterAll(() => service?.stop());

  it('dispatch a tagged workflow, then at once send it an event by { name, tag }: matched 1, twenty times over', async () => {
    const name = unique('Signup');
    for (let i = 0; i < 20; i++) {
      const tag = `email:user${i}@example.com`;
      const id = await api.dispatchWorkflow(name, { tag });
      expect({ i, result: await api.act('send', { name, tag }, { name: 'Verified', data: `[${i}]` }) }).toEqual({
        i,
        result: { status: 'OK', matched: 1, changed: 1, workflowIds: [id] },
      });
    }
    expect(await api.workflows({ name }, { first: 500 })).toMatchObject({ totalCount: 20, totalCountCapped: false });
    // Counted per state too, each count exact below the cap.
    const counts = expectData(
      await api.gql(`query($filter: WorkflowFilterInput!) { workflowCounts(filter: $filter) { state count capped } }`, { filter: { appId: api.appId, environment: api.environment, name } }),
    ).workflowCounts;
    expect(counts).toContainEqual({ state: 'RUNNING', count: 20, capped: false });
    expect(counts).toContainEqual({ state: 'COMPLETED', count: 0, capped: false });
  });

  it('dispatch, then at once pause by { name, tag } and read the state back', async () => {
    const name = unique('Signup');
    for (let i = 0; i < 20; i++) {
      const id = await api.dispatchWorkflow(name, { tag: `id:${i}` });
      expect(await api.act('pause', { name, tag: `id:${i}` })).toMatchObject({ matched: 1, changed: 1 });
      expect(await api.state(id)).toBe('PAUSED');
    }
  });

  it('dispatch, then at once act by { id }, and read the history back', async () => {
    for (let i = 0; i < 20; i++) {
      const id = await api.dispatchWorkflow(unique('Signup'));
      expect(await api.act('terminate', { id })).toMatchObject({ matched: 1, changed: 1 });
      expect((await api.history(id)).map((e) => e.type)).toEqual(['WorkflowDispatched', 'WorkflowTerminated']);
    }
  });

  it('concurrent dispatches of one name and tag are all found by the next selector', async () => {
    const name = unique('Burst');
    const ids = await Promise.all(Array.from({ length: 25 }, () => api.dispatchWorkflow(name, { tag: 'batch:1' })));
    const result = await api.act('send', { name, tag: 'batch:1' }, { name: 'Go', data: '[]' });
    expect(result).toMatchObject({ status: 'OK', matched: 25, changed: 25 });
    expect([...result.workflowIds].sort()).toEqual([...ids].sort());
  });

  it('a dispatched task is visible to task() at once', async () => {
    for (let i = 0; i < 10; i++) {
      const id = await api.dispatchTask(unique('Email'), `[${i}]`);
      expect(await api.task(id)).toMatchObject({ id, state: 'PENDING', input: `[${i}]` });
    }
  });
});
