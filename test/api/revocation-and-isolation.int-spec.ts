/**
 * Review (security): what a token may still do once it is revoked, on two instances of one store.
 * A request authenticated before the revocation and parked (a worker's long poll, a client's
 * awaitWorkflow) must not go on acting for the revoked token after it: the revocation is what
 * the operator does when a token leaked.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Client, Response, expectData, gql, issueTokens, post, revokeTokenViaCli, tokenIdOf, unique } from './api-helpers.js';
import { POLL_WORK, poll } from './security-helpers.js';

const SCOPE = { appId: 'demo', environment: 'revoke' };
const QUERY = '{"query":"{ __typename }"}';

describe('a revoked token acts no more, on any instance, even through a request parked before the revocation', () => {
  let a: Service;
  let b: Service;
  let storeUrl: string;

  beforeAll(async () => {
    storeUrl = freshStoreUrl();
    // One awaitWorkflow slot per token: a second await refused RATE_LIMITED shows the first one is parked.
    const env = { MAX_AWAITS_PER_TOKEN: '1' };
    a = await startService({ storeUrl, env });
    b = await startService({ storeUrl, env });
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  /** Until both instances refuse the token (the revocation reached each of them). */
  const refusedEverywhere = (token: string) =>
    waitFor(async () => (await post(a, QUERY, token)).status === 401 && (await post(b, QUERY, token)).status === 401, {
      timeoutMs: 10_000,
      intervalMs: 20,
      description: 'both instances to refuse the revoked token',
    });

  /** Until the worker's poll is parked on B (B's workers list shows a poll in flight). */
  const parkedOnB = (workerId: string) =>
    waitFor(
      async () => {
        const data = expectData(await gql(b, `query { workers(appId: "${SCOPE.appId}", environment: "${SCOPE.environment}") { workers { workerId pollsInFlight } } }`, undefined, a.token));
        return data.workers.workers.some((w: { workerId: string; pollsInFlight: number }) => w.workerId === workerId && w.pollsInFlight > 0);
      },
      { timeoutMs: 10_000, intervalMs: 20, description: 'the poll to be parked on B' },
    );

  it("a worker's poll parked before the revocation claims nothing after it: the task goes to a worker whose token is valid", async () => {
    const [doomed, good] = await issueTokens(a, [
      { apps: ['demo'], role: 'worker' },
      { apps: ['demo'], role: 'worker' },
    ]);
    await waitFor(async () => (await post(b, QUERY, doomed)).status === 200, { timeoutMs: 10_000, intervalMs: 20, description: 'B to accept the worker token' });
    const name = unique('AfterRevoke');
    const workerId = unique('leaked-worker');
    // Parked on B, long.
    const parked = gql(
      b,
      POLL_WORK,
      {
        input: {
          ...SCOPE,
          workerId,
          workflows: [],
          tasks: [{ name, retry: { maxAttempts: 1, initialDelayMs: 0, backoffFactor: 1, maxDelayMs: 0 } }],
          waitMs: 30_000,
          maxItems: 10,
        },
      },
      doomed,
    );
    await parkedOnB(workerId);

    await revokeTokenViaCli(storeUrl, tokenIdOf(doomed));
    await refusedEverywhere(doomed);

    // Work arrives after the revocation took effect on both instances.
    const taskId = await new Client(a, SCOPE.appId, SCOPE.environment).dispatchTask(name, '["secret input"]');
    const answer: Response = await parked;
    const claimedByRevoked = (answer.body.data?.pollWork ?? []).map((item: { taskId: string | null }) => item.taskId);
    expect(claimedByRevoked).toEqual([]);
    // And the task is not held by a lease of the revoked token: a valid worker gets it at once.
    const items = await poll(b, SCOPE, { tasks: [name] }, { token: good, waitMs: 5_000 });
    expect(items.map((i) => i.taskId)).toEqual([taskId]);
  });

  it('nor is a workflow dispatched on its instance after the revocation handed to it (eager start)', async () => {
    const [doomed, good] = await issueTokens(a, [
      { apps: ['demo'], role: 'worker' },
      { apps: ['demo'], role: 'worker' },
    ]);
    await waitFor(async () => (await post(b, QUERY, doomed)).status === 200, { timeoutMs: 10_000, intervalMs: 20, description: 'B to accept the worker token' });
    const name = unique('EagerAfterRevoke');
    const workerId = unique('leaked-worker');
    const parked = gql(b, POLL_WORK, { input: { ...SCOPE, workerId, workflows: [name], tasks: [], waitMs: 30_000, maxItems: 10 } }, doomed);
    await parkedOnB(workerId);
    await revokeTokenViaCli(storeUrl, tokenIdOf(doomed));
    await refusedEverywhere(doomed);

    // Dispatched on B, where the revoked token's poll is parked.
    const id = await new Client({ ...b, token: a.token }, SCOPE.appId, SCOPE.environment).dispatchWorkflow(name, { input: '["secret input"]' });
    const answer: Response = await parked;
    expect((answer.body.data?.pollWork ?? []).map((item: { workflowId: string | null }) => item.workflowId)).toEqual([]);
    const items = await poll(b, SCOPE, { workflows: [name] }, { token: good, waitMs: 5_000 });
    expect(items.map((i) => i.workflowId)).toEqual([id]);
  });

  it("a client's awaitWorkflow parked before the revocation does not answer the workflow after it", async () => {
    const [doomed] = await issueTokens(a, [{ apps: ['demo'], role: 'read-only' }]);
    await waitFor(async () => (await post(b, QUERY, doomed)).status === 200, { timeoutMs: 10_000, intervalMs: 20, description: 'B to accept the read-only token' });
    const admin = new Client(a, SCOPE.appId, SCOPE.environment);
    const id = await admin.dispatchWorkflow(unique('Awaited'));
    const AWAIT = `query($id: ID!, $waitMs: Int) { awaitWorkflow(appId: "${SCOPE.appId}", environment: "${SCOPE.environment}", id: $id, waitMs: $waitMs) { id state input } }`;
    const parked = gql(b, AWAIT, { id, waitMs: 30_000 }, doomed);
    // The token's one await slot is taken: the first await is parked on B.
    await waitFor(async () => (await gql(b, AWAIT, { id, waitMs: 1 }, doomed)).body.errors?.[0]?.extensions?.code === 'RATE_LIMITED', {
      timeoutMs: 10_000,
      intervalMs: 20,
      description: 'the await to be parked on B',
    });

    await revokeTokenViaCli(storeUrl, tokenIdOf(doomed));
    await refusedEverywhere(doomed);

    await admin.act('terminate', { id });
    const answer: Response = await parked;
    expect(answer.body.data?.awaitWorkflow ?? null).toBeNull();
    expect(answer.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});

describe("a list's `after` names a row of the caller's own app and environment, or nothing", () => {
  let service: Service;
  let alpha: Client;
  let beta: Client;

  beforeAll(async () => {
    service = await startService();
    const [alphaToken, betaToken] = await issueTokens(service, [{ apps: ['alpha'] }, { apps: ['beta'] }]);
    alpha = new Client(service, 'alpha', 'prod', alphaToken);
    beta = new Client(service, 'beta', 'prod', betaToken);
  });
  afterAll(() => service?.stop());

  it("another app's workflow id as `after` pages exactly as an id that names nothing (its existence and its place in time stay hidden)", async () => {
    // An idempotency key makes a workflow's id computable by anyone who can guess the key
    // (derived from app, environment and key): "did alpha already take order 42, and when?".
    for (let i = 0; i < 3; i++) await beta.dispatchWorkflow(unique('Before'));
    const theirs = expectData(await alpha.dispatchWorkflowRaw({ name: 'Checkout', idempotencyKey: 'order-42' })).dispatchWorkflow.id as string;
    for (let i = 0; i < 3; i++) await beta.dispatchWorkflow(unique('After'));

    // Two ids that name nothing, next to theirs in id order (no other row between them).
    const [head] = theirs.split(/-(?=[0-9a-f]{12}$)/);
    const below = `${head}-000000000000`;
    const above = `${head}-ffffffffffff`;
    const pageAfter = async (after: string) => (await beta.workflows({}, { first: 50, after })).nodes.map((w) => w.name);
    const onTheirs = await pageAfter(theirs);
    expect({ onTheirs, onIdBelow: await pageAfter(below), onIdAbove: await pageAfter(above) }).toEqual({ onTheirs, onIdBelow: onTheirs, onIdAbove: onTheirs });
  });
});

describe("a filter by another app's parent (or schedule) is answered as for one that names nothing", () => {
  let service: Service;

  beforeAll(async () => {
    // One decision starts 10,001 children: a body and a decision above the defaults.
    service = await startService({ env: { BODY_LIMIT_BYTES: String(8 * 1024 * 1024), MAX_DECISION_BYTES: String(4 * 1024 * 1024) } });
  });
  afterAll(() => service?.stop());

  it("beta filtering its own list by alpha's parent id learns nothing: no count cap, no next page, no cursor holding alpha's child", async () => {
    const [alphaToken, alphaWorker, betaToken] = await issueTokens(service, [{ apps: ['alpha'] }, { apps: ['alpha'], role: 'worker' }, { apps: ['beta'] }]);
    const alpha = new Client(service, 'alpha', 'prod', alphaToken);
    const beta = new Client(service, 'beta', 'prod', betaToken);
    const name = unique('FanOut');
    const parent = await alpha.dispatchWorkflow(name);
    const worker = { appId: 'alpha', environment: 'prod', workerId: 'fan-out' };
    const decision = await waitFor(
      async () => {
        const items = expectData(await gql(service, POLL_WORK, { input: { ...worker, workflows: [name], tasks: [], waitMs: 1_000 } }, alphaWorker)).pollWork;
        return items.find((i: { workflowId: string }) => i.workflowId === parent) as { ref: string; decisionId: string } | undefined;
      },
      { timeoutMs: 15_000, description: "the parent's first decision" },
    );
    const CHILDREN = 10_001;
    const commands = JSON.stringify(Array.from({ length: CHILDREN }, (_, seq) => ({ type: 'StartChildWorkflow', seq, name: 'Kid', args: [], wait: false })));
    const REPORT = 'mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { code message } } }';
    expect(expectData(await gql(service, REPORT, { input: { ...worker, decisions: [{ ref: decision.ref, decisionId: decision.decisionId, commands }] } }, alphaWorker)).reportWork).toEqual({ accepted: 1, rejected: [] });
    // Alpha's own list by parent holds the children once the effects reactor started them.
    await waitFor(async () => (await alpha.workflows({ parentId: parent }, { first: 1 })).totalCountCapped, { timeoutMs: 240_000, intervalMs: 500, description: "alpha's 10,001 children" });

    const LIST = `query($filter: WorkflowFilterInput!) { workflows(filter: $filter, first: 10) { totalCount totalCountCapped pageInfo { endCursor hasNextPage } nodes { id } } }`;
    const answer = async (parentId: string) => expectData(await beta.gql(LIST, { filter: { appId: 'beta', environment: 'prod', parentId } })).workflows;
    const nothing = { totalCount: 0, totalCountCapped: false, pageInfo: { endCursor: null, hasNextPage: false }, nodes: [] };
    expect(await answer('01900000-0000-7000-8000-000000000000')).toEqual(nothing);
    expect(await answer(parent)).toEqual(nothing);
  }, 300_000);
});
