/**
 * Events meet child workflows: a child's id is handed out before the child exists. The
 * parent's decision records `ChildWorkflowStarted` with the child's id (in the parent's history;
 * `ctx.dispatch` answers it to the code, which may pass it to a task or a query), and the effects
 * reactor creates the child afterwards, behind every earlier effect of the app. An event sent by
 * `{ id }` to that child in between is NOT_FOUND, which the original service's client reads as
 * "nothing matched": the event is lost without an error. The window is the reactor's lag: here an
 * earlier `ctx.select({ name }).send()` to 3,000 workflows of the same app holds it for about a
 * second. A real service and a real `baton worker` process.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '../../src/sdk/index.js';
import { Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { FixtureWorker, startWorker } from '../support/worker.js';

const APP = 'demo';
const ENV = 'child-id-early';

let service: Service;
let client: Client;
let worker: FixtureWorker;

beforeAll(async () => {
  service = await startService();
  client = new Client({ url: service.url, token: service.token });
  worker = await startWorker({ url: service.url, token: service.token, environment: ENV, module: 'dist/test/support/fixtures/events-controls.js' });
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await service?.stop();
});

describe("an event to a child whose id its parent's history already holds", () => {
  it('is delivered (not NOT_FOUND) while the effects reactor is still busy with an earlier effect of the app', async () => {
    // 3,000 workflows no worker serves, for the broadcast to reach.
    for (let i = 0; i < 3000; i += 100) {
      await Promise.all(Array.from({ length: 100 }, () => client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevIdle', input: [] })));
    }
    const broadcaster = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevBroadcast', input: ['RevIdle'] });
    await waitFor(async () => (await client.workflowHistory(APP, ENV, broadcaster)).some((e) => e.type === 'ControlRequested') || null, { timeoutMs: 20_000 });
    const parent = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevParent', input: ['child-id'] });
    const childId = await waitFor(
      async () => ((await client.workflowHistory(APP, ENV, parent)).find((e) => e.type === 'ChildWorkflowStarted')?.data as { childId: string } | undefined)?.childId ?? null,
      { timeoutMs: 20_000, intervalMs: 10, description: "the parent's ChildWorkflowStarted" },
    );
    const sent = await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id: childId }, name: 'release', data: ['freed'] }).catch((error: Error) => error.message);
    expect(sent).toMatchObject({ status: 'OK', matched: 1, changed: 1 });
    const done = await client.awaitWorkflow(APP, ENV, parent, { timeoutMs: 30_000 });
    expect({ state: done?.state, output: done?.output && JSON.parse(done.output) }).toEqual({ state: 'COMPLETED', output: { got: 'freed' } });
  }, 180_000);
});
