/**
 * Lookups by id meet child workflows: a child's id is handed out before the child exists. The
 * parent's decision records `ChildWorkflowStarted` with the child's id (`ctx.dispatch` answers it
 * to the code, which may hand it to an outside client at once), and the effects reactor creates
 * the child afterwards, behind every earlier effect of the app. `awaitWorkflow` (the SDK's
 * `workflowResult` and `dispatchWorkflow(...).result()`), `workflow` and `workflowHistory` on that
 * id in between answered that there is no such workflow (null, NOT_FOUND) though the store had
 * acknowledged it. The window is the reactor's lag: here an earlier `ctx.select({ name }).send()`
 * to 3,000 workflows of the same app holds it for about a second (as in
 * child-id-before-creation.int-spec.ts). Two real service instances on one store and a real
 * `baton worker` process.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '../../src/sdk/index.js';
import { BusyReactor } from '../support/busy-reactor.js';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { FixtureWorker, startWorker } from '../support/worker.js';

const APP = 'demo';
const ENV = 'await-child-early';

let a: Service;
let b: Service;
let client: Client;
let clientB: Client;
let worker: FixtureWorker;
let reactor: BusyReactor;

beforeAll(async () => {
  const storeUrl = freshStoreUrl();
  a = await startService({ storeUrl });
  b = await startService({ storeUrl });
  client = new Client({ url: a.url, token: a.token });
  clientB = new Client({ url: b.url, token: a.token });
  reactor = new BusyReactor(client, APP, ENV);
  worker = await startWorker({ url: a.url, token: a.token, environment: ENV, module: 'dist/test/support/fixtures/events-controls.js' });
}, 90_000);

afterAll(async () => {
  await worker?.stop();
  await b?.stop();
  await a?.stop();
});

describe('a lookup by id of a child whose id its parent already recorded', () => {
  it('finds the child (not null / NOT_FOUND) while the effects reactor is still busy with an earlier effect of the app, on either instance', async () => {
    await reactor.hold();
    const tags = ['await', 'result', 'one', 'history', 'await-b'];
    const parents = await Promise.all(tags.map((tag) => client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevParent', input: [`child-${tag}`] })));
    const [awaited, resulted, looked, historied, awaitedOnB] = await Promise.all(parents.map((p) => reactor.childOf(p)));

    // Each lookup on its own child, all at once, while the children are still to be created.
    const gql = (service: Service, id: string) =>
      service.gql<{ awaitWorkflow: { id: string; state: string } | null }>(
        'query($appId: String!, $environment: String!, $id: ID!) { awaitWorkflow(appId: $appId, environment: $environment, id: $id, waitMs: 0) { id state } }',
        { appId: APP, environment: ENV, id },
        a.token,
      );
    const result = client.workflowResult<string>(APP, ENV, resulted, { timeoutMs: 60_000 }).catch((error: Error) => `error: ${error.message}`);
    const resultOnB = clientB.awaitWorkflow(APP, ENV, awaitedOnB, { timeoutMs: 60_000 });
    const [atOnce, one, history, atOnceOnB] = await Promise.all([
      gql(a, awaited),
      client.workflow(APP, ENV, looked),
      client.workflowHistory(APP, ENV, historied).catch((error: Error) => error.message),
      gql(b, awaitedOnB),
    ]);
    expect({
      awaitWorkflow: atOnce.body,
      awaitWorkflowOnB: atOnceOnB.body,
      workflow: one && { id: one.id, name: one.name, state: one.state },
      workflowHistory: Array.isArray(history) ? history[0]?.type : history,
    }).toEqual({
      awaitWorkflow: { data: { awaitWorkflow: { id: awaited, state: 'RUNNING' } } },
      awaitWorkflowOnB: { data: { awaitWorkflow: { id: awaitedOnB, state: 'RUNNING' } } },
      workflow: { id: looked, name: 'RevChild', state: 'RUNNING' },
      workflowHistory: 'WorkflowDispatched',
    });

    // The waiting result() gets the child's result once it has one.
    for (const id of [resulted, awaitedOnB]) {
      const sent = await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id }, name: 'release', data: [`freed ${id}`] });
      expect(sent).toMatchObject({ status: 'OK', matched: 1, changed: 1 });
    }
    expect(await result).toBe(`freed ${resulted}`);
    const endedOnB = await resultOnB;
    expect({ state: endedOnB?.state, output: endedOnB?.output && JSON.parse(endedOnB.output) }).toEqual({ state: 'COMPLETED', output: `freed ${awaitedOnB}` });
  }, 240_000);
});
