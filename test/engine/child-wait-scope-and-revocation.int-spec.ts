/**
 * The wait of a lookup by id for a child its parent recorded is scoped to the lookup's app. A token
 * of another app (or environment) that asks `awaitWorkflow` / `workflow` for such a child's id
 * must be answered as for any unknown id (null at once, once the reactor has read to the head),
 * not held until the other app's child is created: the difference tells it that the id is a
 * child another app is about to create, and holds its request up to 10 s for another app's
 * effects. The window is the reactor's lag behind an earlier effect of the app (a broadcast to
 * 3,000 workflows, as in await-child-before-creation.int-spec.ts). A real service and a real
 * `baton worker` process.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '../../src/sdk/index.js';
import { issueTokens, revokeTokenViaCli, tokenIdOf } from '../api/api-helpers.js';
import { BusyReactor } from '../support/busy-reactor.js';
import { Service, startService } from '../support/service.js';
import { FixtureWorker, startWorker } from '../support/worker.js';

const APP = 'demo';
const ENV = 'review-fill-scope';

let service: Service;
let client: Client;
let worker: FixtureWorker;
let otherToken: string;
let reactor: BusyReactor;

beforeAll(async () => {
  service = await startService();
  client = new Client({ url: service.url, token: service.token });
  reactor = new BusyReactor(client, APP, ENV);
  [otherToken] = await issueTokens(service, [{ apps: ['other-app'], role: 'read-only' }]);
  worker = await startWorker({ url: service.url, token: service.token, environment: ENV, module: 'dist/test/support/fixtures/events-controls.js' });
}, 90_000);

afterAll(async () => {
  await worker?.stop();
  await service?.stop();
});

const AWAIT = 'query($appId: String!, $environment: String!, $id: ID!) { awaitWorkflow(appId: $appId, environment: $environment, id: $id, waitMs: 0) { id state } }';
const ONE = 'query($appId: String!, $environment: String!, $id: ID!) { workflow(appId: $appId, environment: $environment, id: $id) { id state } }';

describe("a lookup by id of another app's child still to be created", () => {
  it('is answered null without waiting for that child (as an unknown id is), while its own app waits for it', async () => {
    await reactor.hold(3);
    const parent = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevParent', input: ['child-scope'] });
    const childId = await reactor.childOf(parent);
    // The child's own app waits for it (the feature under review); the other app's token must not:
    // both of its lookups are answered while its own app's lookup is still waiting for the child.
    let ownAnswered = false;
    const own = client.workflow(APP, ENV, childId).finally(() => (ownAnswered = true));
    const [otherAwait, otherOne] = await Promise.all([
      service.gql<{ awaitWorkflow: unknown }>(AWAIT, { appId: 'other-app', environment: ENV, id: childId }, otherToken),
      service.gql<{ workflow: unknown }>(ONE, { appId: 'other-app', environment: ENV, id: childId }, otherToken),
    ]);
    const answeredFirst = !ownAnswered;
    expect(otherAwait.body).toEqual({ data: { awaitWorkflow: null } });
    expect(otherOne.body).toEqual({ data: { workflow: null } });
    expect(await own).toMatchObject({ id: childId, state: 'RUNNING' });
    // Held for the child, they would have come with (or after) the own app's answer.
    expect(answeredFirst).toBe(true);
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id: childId }, name: 'release', data: ['freed'] });
  }, 240_000);
});

describe('a token revoked while its lookup waits for a child still to be created', () => {
  it('is refused (UNAUTHENTICATED) once the wait ends, as a parked awaitWorkflow is, not answered the child', async () => {
    const [doomed] = await issueTokens(service, [{ apps: [APP], role: 'read-only' }]);
    // Six broadcasts: the child's creation waits behind them long enough for the CLI's revocation.
    await reactor.hold(6);
    const parent = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevParent', input: ['child-revoked'] });
    const childId = await reactor.childOf(parent);
    const vars = { appId: APP, environment: ENV, id: childId };
    let answeredAt = 0;
    const lookups = Promise.all([service.gql(AWAIT, vars, doomed), service.gql(ONE, vars, doomed)]).then((answers) => ((answeredAt = Date.now()), answers));
    await revokeTokenViaCli(service.storeUrl, tokenIdOf(doomed));
    const revokedAt = Date.now();
    const [awaited, one] = await lookups;
    // Only meaningful when the revocation came while both still waited for the child.
    expect(answeredAt).toBeGreaterThan(revokedAt);
    const code = (r: { body: any }) => r.body.errors?.[0]?.extensions?.code ?? r.body.data;
    expect({ awaitWorkflow: code(awaited), workflow: code(one) }).toEqual({ awaitWorkflow: 'UNAUTHENTICATED', workflow: 'UNAUTHENTICATED' });
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id: childId }, name: 'release', data: ['freed'] });
  }, 240_000);
});

describe('a token revoked while its { id } action waits for a child still to be created', () => {
  it('acts no more: the action is refused (UNAUTHENTICATED) and the child gets no event', async () => {
    const [doomed] = await issueTokens(service, [{ apps: [APP], role: 'operator' }]);
    // Six broadcasts: the child's creation waits behind them long enough for the CLI's revocation.
    await reactor.hold(6);
    const parent = await client.dispatchWorkflow({ appId: APP, environment: ENV, name: 'RevParent', input: ['child-revoked-action'] });
    const childId = await reactor.childOf(parent);
    let answeredAt = 0;
    const send = service
      .gql('mutation($input: SendEventToWorkflowsInput!) { sendEventToWorkflows(input: $input) { status matched changed } }', { input: { appId: APP, environment: ENV, selector: { id: childId }, name: 'release', data: JSON.stringify(['sent by a revoked token']) } }, doomed)
      .then((answer) => ((answeredAt = Date.now()), answer));
    await revokeTokenViaCli(service.storeUrl, tokenIdOf(doomed));
    const revokedAt = Date.now();
    const answer = await send;
    // Only meaningful when the revocation came while the action still waited for the child.
    expect(answeredAt).toBeGreaterThan(revokedAt);
    const history = await client.workflowHistory(APP, ENV, childId);
    expect({
      answer: (answer.body as any).errors?.[0]?.extensions?.code ?? (answer.body as any).data,
      received: history.filter((e) => e.type === 'WorkflowEventReceived' || e.type === 'WorkflowEventQueued').length,
    }).toEqual({ answer: 'UNAUTHENTICATED', received: 0 });
    await client.sendEventToWorkflows({ appId: APP, environment: ENV, selector: { id: childId }, name: 'release', data: ['freed'] });
  }, 240_000);
});
