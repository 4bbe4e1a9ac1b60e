/**
 * A client that dispatches and at once acts on what it dispatched must see its write: the
 * mutation answers only once its events are in the read models that selectors use. On one
 * instance, and across two: written through A, acted on and read through B at once, on the
 * EventStoreDB adapter against one FAKE EventStoreDB server process (not EventStoreDB), each
 * instance with read models of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { ESDB_FAKE_OWN_READ_MODELS } from '../support/instance-pairs.js';
import { waitFor } from '../support/wait-for.js';
import { Client, DISPATCH_WORKFLOW, expectData, post, unique } from './api-helpers.js';

interface Setup {
  /** Where the writes go. */
  writer: Service;
  /** Where the next request goes (the writer itself on one instance). */
  reader: Service;
  stop(): Promise<void>;
}

const SETUPS: Array<[string, () => Promise<Setup>]> = [
  [
    'one instance',
    async () => {
      const service = await startService();
      return { writer: service, reader: service, stop: () => service.stop() };
    },
  ],
  [
    `written through A, read and acted on through B; ${ESDB_FAKE_OWN_READ_MODELS.title}`,
    async () => {
      const pair = await ESDB_FAKE_OWN_READ_MODELS.start();
      return { writer: pair.a, reader: pair.b, stop: () => pair.stop() };
    },
  ],
];

describe.each(SETUPS)('read your writes (%s)', (_title, start) => {
  let setup: Setup;
  let api: Client;
  let reader: Client;

  beforeAll(async () => {
    setup = await start();
    api = new Client(setup.writer, 'demo', 'dev');
    reader = new Client({ ...setup.reader, token: setup.writer.token } as Service, 'demo', 'dev');
  }, 60_000);
  afterAll(() => setup?.stop());

  it('dispatch a tagged workflow, then at once send it an event by { name, tag }: matched 1, twenty times over', async () => {
    const name = unique('Signup');
    for (let i = 0; i < 20; i++) {
      const tag = `email:user${i}@example.com`;
      const id = await api.dispatchWorkflow(name, { tag });
      expect({ i, result: await reader.act('send', { name, tag }, { name: 'Verified', data: `[${i}]` }) }).toEqual({
        i,
        result: { status: 'OK', matched: 1, changed: 1, workflowIds: [id] },
      });
    }
    expect(await reader.workflows({ name }, { first: 500 })).toMatchObject({ totalCount: 20, totalCountCapped: false });
    // Counted per state too, each count exact below the cap.
    const counts = expectData(
      await reader.gql(`query($filter: WorkflowFilterInput!) { workflowCounts(filter: $filter) { state count capped } }`, { filter: { appId: api.appId, environment: api.environment, name } }),
    ).workflowCounts;
    expect(counts).toContainEqual({ state: 'RUNNING', count: 20, capped: false });
    expect(counts).toContainEqual({ state: 'COMPLETED', count: 0, capped: false });
  });

  it('dispatch, then at once pause by { name, tag } and read the state back', async () => {
    const name = unique('Signup');
    for (let i = 0; i < 20; i++) {
      const id = await api.dispatchWorkflow(name, { tag: `id:${i}` });
      expect(await reader.act('pause', { name, tag: `id:${i}` })).toMatchObject({ matched: 1, changed: 1 });
      expect(await api.state(id)).toBe('PAUSED');
    }
  });

  it('dispatch, then at once act by { id }, and read the history back', async () => {
    for (let i = 0; i < 20; i++) {
      const id = await api.dispatchWorkflow(unique('Signup'));
      expect(await reader.act('terminate', { id })).toMatchObject({ matched: 1, changed: 1 });
      expect((await api.history(id)).map((e) => e.type)).toEqual(['WorkflowDispatched', 'WorkflowTerminated']);
    }
  });

  it('concurrent dispatches of one name and tag are all found by the next selector', async () => {
    const name = unique('Burst');
    const ids = await Promise.all(Array.from({ length: 25 }, () => api.dispatchWorkflow(name, { tag: 'batch:1' })));
    const result = await reader.act('send', { name, tag: 'batch:1' }, { name: 'Go', data: '[]' });
    expect(result).toMatchObject({ status: 'OK', matched: 25, changed: 25 });
    expect([...result.workflowIds].sort()).toEqual([...ids].sort());
  });

  it('a dispatched task is visible to task() at once', async () => {
    for (let i = 0; i < 10; i++) {
      const id = await api.dispatchTask(unique('Email'), `[${i}]`);
      expect(await reader.task(id)).toMatchObject({ id, state: 'PENDING', input: `[${i}]` });
    }
  });

  it("a mutation's x-baton-position, sent back as x-baton-min-position, reads at least that far, 10 of 10", async () => {
    for (let i = 0; i < 10; i++) {
      const dispatched = await post(setup.writer, JSON.stringify({ query: DISPATCH_WORKFLOW, variables: { input: { appId: 'demo', environment: 'dev', name: unique('Positioned'), input: '[]' } } }), setup.writer.token);
      const position = dispatched.headers.get('x-baton-position');
      expect(position).toMatch(/^\d+$/);
      const id = expectData(dispatched).dispatchWorkflow.id;
      const read = await post(setup.reader, JSON.stringify({ query: `{ workflow(appId: "demo", environment: "dev", id: "${id}") { state } }` }), setup.writer.token, {
        'x-baton-min-position': position!,
      });
      expect({ i, body: read.body }).toEqual({ i, body: { data: { workflow: { state: 'RUNNING' } } } });
      expect(BigInt(read.headers.get('x-baton-position') ?? '-1')).toBeGreaterThanOrEqual(BigInt(position!));
    }
  });

  it('awaitWorkflow right after a terminate answers TERMINATED; parked before it, it is woken by it, 5 of 5', async () => {
    const AWAIT = 'query($id: ID!) { awaitWorkflow(appId: "demo", environment: "dev", id: $id, waitMs: 30000) { state } }';
    for (let i = 0; i < 5; i++) {
      const ended = await api.dispatchWorkflow(unique('Awaited'));
      expect(await api.act('terminate', { id: ended })).toMatchObject({ matched: 1, changed: 1 });
      expect({ i, ended: expectData(await reader.gql(AWAIT, { id: ended })).awaitWorkflow }).toEqual({ i, ended: { state: 'TERMINATED' } });

      const id = await api.dispatchWorkflow(unique('Awaited'));
      const waiting = reader.gql(AWAIT, { id });
      await waitFor(async () => /^baton_await_workflow_waiting 1$/m.test(await (await fetch(`${setup.reader.url}/metrics`)).text()), {
        timeoutMs: 5000,
        description: "the reader's awaitWorkflow to be parked",
      });
      expect(await api.act('terminate', { id })).toMatchObject({ matched: 1, changed: 1 });
      expect({ i, woken: expectData(await waiting).awaitWorkflow }).toEqual({ i, woken: { state: 'TERMINATED' } });
    }
  });
});
