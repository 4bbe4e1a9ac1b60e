/**
 * Many instances, one truth: two Baton processes on one SQLite store (as behind a load
 * balancer). A write acknowledged by one is seen by the next request on the other; a token
 * minted with the CLI works at once everywhere; a child's completion reaches its parent once
 * although both instances run the effects reactor.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, createTokenViaCli } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { FixtureWorker, startWorker } from '../support/worker.js';
import { Engine } from '../engine/engine-helpers.js';
import { Client, expectData, startTwoInstances, unique } from './api-helpers.js';

describe('two instances on one store', () => {
  let a: Service;
  let b: Service;
  let apiA: Client;
  let apiB: Client;
  const workers: FixtureWorker[] = [];

  beforeAll(async () => {
    ({ a, b, apiA, apiB } = await startTwoInstances());
  }, 60_000);
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('an event sent by { name, tag } to B right after a dispatch on A is delivered, 20 of 20', async () => {
    const name = unique('Signup');
    for (let i = 0; i < 20; i++) {
      const tag = `email:user${i}@example.com`;
      const id = await apiA.dispatchWorkflow(name, { tag });
      expect({ i, result: await apiB.act('send', { name, tag }, { name: 'Verified', data: `[${i}]` }) }).toEqual({
        i,
        result: { status: 'OK', matched: 1, changed: 1, workflowIds: [id] },
      });
    }
  });

  it('an event sent by { id } to B right after a dispatch on A is delivered, 20 of 20', async () => {
    for (let i = 0; i < 20; i++) {
      const id = await apiA.dispatchWorkflow(unique('Signup'));
      expect({ i, result: await apiB.act('send', { id }, { name: 'Verified', data: `[${i}]` }) }).toMatchObject({ i, result: { status: 'OK', matched: 1, changed: 1 } });
    }
  });

  it('a pause on A is seen by a query on B at once, 10 of 10', async () => {
    for (let i = 0; i < 10; i++) {
      const id = await apiA.dispatchWorkflow(unique('Pausable'));
      expect(await apiA.act('pause', { id })).toMatchObject({ matched: 1, changed: 1 });
      expect({ i, state: await apiB.state(id) }).toEqual({ i, state: 'PAUSED' });
      const list = await apiB.workflows({ state: 'PAUSED' }, { first: 500 });
      expect(list.nodes.map((n: { id: string }) => n.id)).toContain(id);
    }
  });

  it('a token minted with the CLI while both run works on its first request on each', async () => {
    for (const service of [a, b]) {
      const token = await createTokenViaCli(a.storeUrl, ['fresh-app']);
      const response = await service.gql('{ workflows(filter: { appId: "fresh-app", environment: "dev" }) { totalCount } }', undefined, token);
      expect({ status: response.status, body: response.body }).toEqual({ status: 200, body: { data: { workflows: { totalCount: 0 } } } });
    }
  });

  it('a selector that matches nothing is logged with the position read to', async () => {
    const name = unique('Nobody');
    expect(await apiB.act('send', { name }, { name: 'Hello', data: '[]' })).toMatchObject({ status: 'NO_MATCH', matched: 0 });
    // The log line travels through the child's stdout pipe: wait for it rather than read once.
    const line = new RegExp(`selector \\{"name":"${name}"(,"tag":null)?\\} in demo/dev matched no running or paused workflow at position \\d+`);
    await waitFor(() => line.test(b.messages()), { timeoutMs: 5000, description: 'the selector log line' });
  });

  it('a mutation answers with x-baton-position; x-baton-min-position on the other instance reads at least that far', async () => {
    const dispatched = await fetch(`${a.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${a.token}` },
      body: JSON.stringify({
        query: 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }',
        variables: { input: { appId: 'demo', environment: 'dev', name: unique('Positioned'), input: '[]' } },
      }),
    });
    const position = dispatched.headers.get('x-baton-position');
    expect(position).toMatch(/^\d+$/);
    const { data } = (await dispatched.json()) as { data: { dispatchWorkflow: { id: string } } };
    const read = await fetch(`${b.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${a.token}`, 'x-baton-min-position': position! },
      body: JSON.stringify({ query: `{ workflow(appId: "demo", environment: "dev", id: "${data.dispatchWorkflow.id}") { state } }` }),
    });
    expect(BigInt(read.headers.get('x-baton-position') ?? '-1')).toBeGreaterThanOrEqual(BigInt(position!));
    expect(await read.json()).toEqual({ data: { workflow: { state: 'RUNNING' } } });
  });

  it('the dashboard queries on B (workers, auditLog, failures, workflowActivity) read up to a dispatch A acknowledged, 10 of 10', async () => {
    const post = async (service: Service, query: string) => {
      const response = await fetch(`${service.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${a.token}` },
        body: JSON.stringify({ query }),
      });
      return { position: response.headers.get('x-baton-position'), body: (await response.json()) as { data?: any; errors?: unknown } };
    };
    for (let i = 0; i < 10; i++) {
      // A name no worker serves: its first decision waits, counted in B's engine index.
      const name = unique('Unserved');
      const dispatched = await post(a, `mutation { dispatchWorkflow(input: { appId: "demo", environment: "dev", name: "${name}", input: "[]" }) { id } }`);
      expect(dispatched.position).toMatch(/^\d+$/);
      const at = BigInt(dispatched.position!);
      const workers = await post(b, '{ workers(appId: "demo", environment: "dev") { waiting { kind name count served } } }');
      const audit = await post(b, `{ auditLog(filter: { appId: "demo", environment: "dev", search: "${name.toLowerCase()}" }) { nodes { action name } } }`);
      const failures = await post(b, '{ failures(appId: "demo", environment: "dev") { name } }');
      const activity = await post(b, '{ workflowActivity(appId: "demo", environment: "dev", minutes: 2) { started } }');
      expect({ i, waiting: workers.body.data?.workers.waiting.filter((w: { name: string }) => w.name === name), audit: audit.body.data?.auditLog.nodes }).toEqual({
        i,
        waiting: [{ kind: 'DECISION', name, count: 1, served: false }],
        audit: [{ action: 'WorkflowDispatched', name }],
      });
      expect(failures.body.errors).toBeUndefined();
      expect(activity.body.data?.workflowActivity.reduce((n: number, m: { started: number }) => n + m.started, 0)).toBeGreaterThanOrEqual(1);
      for (const answer of [workers, audit, failures, activity]) expect(BigInt(answer.position ?? '-1')).toBeGreaterThanOrEqual(at);
    }
  });

  it('an awaitWorkflow parked on B answers the ending recorded through A, 5 of 5', async () => {
    const AWAIT = 'query($id: ID!) { awaitWorkflow(appId: "demo", environment: "dev", id: $id, waitMs: 30000) { state } }';
    for (let i = 0; i < 5; i++) {
      const id = await apiA.dispatchWorkflow(unique('Awaited'));
      // Parked on B (it read RUNNING and waits, as B's metric shows): the ending, recorded through
      // A, reaches B's subscription, which wakes it (WorkflowEndings; its unit test checks which
      // polls wake), and the metric goes back to 0.
      const waiting = apiB.gql(AWAIT, { id });
      await waitFor(async () => /^baton_await_workflow_waiting 1$/m.test(await (await fetch(`${b.url}/metrics`)).text()), {
        timeoutMs: 3000,
        description: "B's awaitWorkflow poll to be parked",
      });
      expect(await apiA.act('terminate', { id })).toMatchObject({ matched: 1, changed: 1 });
      expect({ i, answer: expectData(await waiting).awaitWorkflow }).toEqual({ i, answer: { state: 'TERMINATED' } });
      expect(await (await fetch(`${b.url}/metrics`)).text()).toMatch(/^baton_await_workflow_waiting 0$/m);
    }
  });

  it("a child's completion reaches its parent exactly once with both instances running the reactor", async () => {
    const environment = unique('children');
    workers.push(await startWorker({ url: a.url, token: a.token, environment }));
    workers.push(await startWorker({ url: b.url, token: a.token, environment }));
    const engineA = new Engine(a, environment);
    const engineB = new Engine(b, environment, a.token);
    const parents: string[] = [];
    for (let i = 0; i < 5; i++) parents.push(await engineA.dispatch('Parent', [`kid:${i}`]));
    for (let i = 0; i < 5; i++) {
      await engineB.waitForEventType(parents[i], 'ChildWorkflowStarted');
      // The child exists once A's or B's reactor dispatched it; release it through B by its tag.
      await waitFor(async () => (await engineB.send({ name: 'Child', tag: `kid:${i}` }, 'release', i)).matched === 1, { timeoutMs: 10_000, description: `child kid:${i}` });
    }
    for (const id of parents) {
      const done = await engineA.waitForState(id);
      expect(done.result.parentGot.released).toEqual(expect.any(Number));
      const history = await engineB.history(id);
      expect(history.filter((e) => e.type === 'ChildWorkflowCompleted')).toHaveLength(1);
    }
  }, 60_000);

  it('never fails a read-model batch because the other instance holds the write lock (after the tests above)', () => {
    // A batch's transaction takes the write lock first (BEGIN IMMEDIATE), waiting for the other
    // instance's commit to end; a deferred one failed with "database is locked" and restarted its
    // subscription 100 ms or more later, several times a second with both instances writing.
    for (const [name, service] of [['A', a], ['B', b]] as const) {
      const stopped = service.messages().split('\n').filter((line) => /projection subscription stopped|database is locked/.test(line));
      expect({ instance: name, stopped }).toEqual({ instance: name, stopped: [] });
    }
  });
});
