/**
 * Authentication (401 UNAUTHENTICATED before GraphQL runs), scopes (FORBIDDEN), revocation
 * while the service runs, and isolation between apps: one app's token can neither see, change
 * nor detect another app's workflows and tasks.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Service, createTokenViaCli, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Client, GqlError, Response, expectError, issueTokens, post, randomId, revokeTokenViaCli, tokenIdOf, unique } from './api-helpers.js';

const DISPATCH = '{"query":"mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }","variables":{"input":{"appId":"demo","environment":"dev","name":"Auth","input":"[]"}}}';

function expectUnauthenticated(response: Response): void {
  expect(response.status).toBe(401);
  expectError(response, 'UNAUTHENTICATED');
  expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
}

const secret = () => randomBytes(32).toString('base64url');

describe('authentication and authorization', () => {
  let service: Service;
  let storeUrl: string;
  const tokens: Record<'demo' | 'other' | 'prodOnly' | 'both' | 'doomed', string> = {} as never;
  let early: string;
  let demo: Client;
  let other: Client;

  beforeAll(async () => {
    storeUrl = freshStoreUrl();
    early = await createTokenViaCli(storeUrl, ['early']);
    service = await startService({ storeUrl });
    [tokens.demo, tokens.other, tokens.prodOnly, tokens.both, tokens.doomed] = await issueTokens(service, [
      { apps: ['demo'] },
      { apps: ['other'] },
      { apps: ['envapp'], environments: ['prod'] },
      { apps: ['demo', 'other'] },
      { apps: ['demo'] },
    ]);
    demo = new Client(service, 'demo', 'dev', tokens.demo);
    other = new Client(service, 'other', 'dev', tokens.other);
  });
  afterAll(() => service?.stop());

  describe('401 UNAUTHENTICATED', () => {
    it('no Authorization header', async () => {
      expectUnauthenticated(await post(service, DISPATCH, null));
    });

    it('no Authorization header, even for a query or introspection', async () => {
      expectUnauthenticated(await post(service, '{"query":"{ __typename }"}', null));
      expectUnauthenticated(await post(service, '{"query":"{ __schema { queryType { name } } }"}', null));
    });

    it.each([
      ['another scheme', () => `Basic ${Buffer.from('demo:secret').toString('base64')}`],
      ['the scheme alone', () => 'Bearer'],
      ['the scheme and a space', () => 'Bearer '],
      ['the token without a scheme', () => tokens.demo],
      ['two tokens', () => `Bearer ${tokens.demo} ${tokens.other}`],
      ['a misspelt scheme', () => `Baerer ${tokens.demo}`],
    ])('a malformed header: %s', async (_label, header) => {
      expectUnauthenticated(await post(service, DISPATCH, null, { authorization: header() }));
    });

    it.each([
      ['random text', () => 'not-a-token'],
      ['a well-formed token nobody issued', () => `baton_${randomId().replaceAll('-', '')}_${secret()}`],
      ['a real token id with the wrong secret', () => `baton_${tokenIdOf(tokens.demo).replaceAll('-', '')}_${secret()}`],
      ['a real token with one character of its secret changed', () => tokens.demo.slice(0, -1) + (tokens.demo.endsWith('A') ? 'B' : 'A')],
      ['a real token truncated', () => tokens.demo.slice(0, -1)],
      ['a real token with a character added', () => `${tokens.demo}A`],
      ['a real token in upper case', () => tokens.demo.toUpperCase()],
      ["one token's id with another token's secret", () => `baton_${tokenIdOf(tokens.demo).replaceAll('-', '')}_${tokens.other.split('_').slice(2).join('_')}`],
    ])('an unknown token: %s', async (_label, token) => {
      const before = await demo.workflows({ name: 'Auth' });
      expectUnauthenticated(await post(service, DISPATCH, token()));
      expect(await demo.workflows({ name: 'Auth' })).toEqual(before);
    });

    it('unknown and wrong-secret tokens get the same answer (nothing tells them apart)', async () => {
      const strip = (r: Response) => ({ status: r.status, errors: r.body.errors, auth: r.headers.get('www-authenticate') });
      const unknown = await post(service, DISPATCH, `baton_${randomId().replaceAll('-', '')}_${secret()}`);
      const wrongSecret = await post(service, DISPATCH, `baton_${tokenIdOf(tokens.demo).replaceAll('-', '')}_${secret()}`);
      expect(strip(wrongSecret)).toEqual(strip(unknown));
    });

    it('a revoked token stops working within a bounded delay, for good; other tokens keep working', async () => {
      const doomed = demo.as(tokens.doomed);
      const id = await doomed.dispatchWorkflow(unique('BeforeRevoke'));
      const output = await revokeTokenViaCli(storeUrl, tokenIdOf(tokens.doomed));
      expect(output).toMatch(/revoked/);
      const started = Date.now();
      await waitFor(async () => (await post(service, DISPATCH, tokens.doomed)).status === 401, {
        timeoutMs: 5_000,
        intervalMs: 20,
        description: 'the revoked token to be rejected',
      });
      const delay = Date.now() - started;
      expect(delay).toBeLessThan(5_000);
      for (let i = 0; i < 5; i++) expectUnauthenticated(await post(service, DISPATCH, tokens.doomed));
      expectUnauthenticated(await doomed.workflowRaw(id));
      // Its work stays, and the other token for the same app still sees it.
      expect(await demo.workflow(id)).toMatchObject({ id, state: 'RUNNING' });
    });

    it('a token created by the CLI before the service started works at once', async () => {
      expect(service.output()).not.toMatch(/BATON_BOOTSTRAP_TOKEN=/);
      const response = await new Client(service, 'early', 'dev', early).workflowsRaw();
      expect(response.status).toBe(200);
      expect(response.body.data.workflows.totalCount).toBe(0);
    });
  });

  describe('FORBIDDEN outside the token scope', () => {
    let demoWorkflow: string;
    let demoTask: string;
    let demoName: string;
    let baseline: unknown;

    beforeAll(async () => {
      demoName = unique('Payroll');
      demoWorkflow = await demo.dispatchWorkflow(demoName, { tag: 'id:1' });
      await demo.act('send', { id: demoWorkflow }, { name: 'Hello', data: '[]' });
      demoTask = await demo.dispatchTask(unique('PayTask'));
      baseline = await demo.snapshot();
    });

    const forbiddenFor = (client: Client) => ({
      dispatchWorkflow: () => client.dispatchWorkflowRaw({ name: demoName, tag: 'id:1' }),
      dispatchTask: () => client.dispatchTaskRaw({ name: 'PayTask' }),
      'pause by id': () => client.actRaw('pause', { id: demoWorkflow }),
      'resume by name': () => client.actRaw('resume', { name: demoName }),
      'terminate by name and tag': () => client.actRaw('terminate', { name: demoName, tag: 'id:1' }),
      'send by id': () => client.actRaw('send', { id: demoWorkflow }),
      workflow: () => client.workflowRaw(demoWorkflow),
      workflows: () => client.workflowsRaw(),
      workflowHistory: () => client.historyRaw(demoWorkflow),
      task: () => client.taskRaw(demoTask),
      tasks: () => client.tasksRaw(),
    });

    it.each(Object.keys(forbiddenFor(undefined as never)))("app B's token on app A: %s → FORBIDDEN, and nothing changes in A", async (operation) => {
      const intruder = other.in('demo');
      const response = await forbiddenFor(intruder)[operation as keyof ReturnType<typeof forbiddenFor>]();
      expect(response.status).toBe(200);
      expectError(response, 'FORBIDDEN');
      expect(await demo.snapshot()).toEqual(baseline);
    });

    it('FORBIDDEN does not tell an app that exists from one that does not', async () => {
      const onReal = expectError(await other.in('demo').dispatchWorkflowRaw({ name: 'X' }), 'FORBIDDEN');
      const onGhost = expectError(await other.in('ghost-app').dispatchWorkflowRaw({ name: 'X' }), 'FORBIDDEN');
      const strip = (e: GqlError, app: string) => ({ ...e, message: e.message.replaceAll(app, '<app>') });
      expect(strip(onReal, 'demo')).toEqual(strip(onGhost, 'ghost-app'));
    });

    it('an environment-scoped token works in its environment and is FORBIDDEN in another', async () => {
      const prod = new Client(service, 'envapp', 'prod', tokens.prodOnly);
      const id = await prod.dispatchWorkflow(unique('Deploy'), { tag: 'v1' });
      expect(await prod.workflow(id)).toMatchObject({ environment: 'prod' });

      const dev = prod.in('envapp', 'dev');
      expectError(await dev.dispatchWorkflowRaw({ name: 'Deploy' }), 'FORBIDDEN');
      expectError(await dev.dispatchTaskRaw({ name: 'Deploy' }), 'FORBIDDEN');
      expectError(await dev.actRaw('pause', { id }), 'FORBIDDEN');
      expectError(await dev.workflowsRaw(), 'FORBIDDEN');
      expectError(await dev.workflowRaw(id), 'FORBIDDEN');
      expect(await prod.state(id)).toBe('RUNNING');
      // Scoped to its app as well.
      expectError(await prod.in('demo', 'prod').dispatchWorkflowRaw({ name: 'Deploy' }), 'FORBIDDEN');
    });

    it('a token for several apps works in each of them', async () => {
      const inDemo = demo.as(tokens.both, 'demo');
      const inOther = demo.as(tokens.both, 'other');
      const a = await inDemo.dispatchWorkflow(unique('Multi'));
      const b = await inOther.dispatchWorkflow(unique('Multi'));
      expect(await demo.workflow(a)).not.toBeNull();
      expect(await other.workflow(b)).not.toBeNull();
      expectError(await demo.as(tokens.both, 'third').dispatchWorkflowRaw({ name: 'Multi' }), 'FORBIDDEN');
      await inDemo.act('terminate', { id: a });
      await inOther.act('terminate', { id: b });
    });
  });

  describe("an app cannot see, change or detect another app's workflows", () => {
    let theirs: { workflow: string; task: string; name: string; tag: string };
    let baseline: unknown;

    beforeAll(async () => {
      const name = unique('Secret');
      theirs = { name, tag: 'email:ceo@b.example', workflow: await demo.dispatchWorkflow(name, { tag: 'email:ceo@b.example' }), task: await demo.dispatchTask(name) };
      baseline = await demo.snapshot();
    });

    /** The same error, with the id that was asked for written as <id>. */
    const normalize = (error: GqlError, id: string) => ({ ...error, message: error.message.replaceAll(id, '<id>') });

    it.each(['pause', 'resume', 'terminate', 'send'] as const)('%s with { id } of their workflow: exactly the NOT_FOUND of a random id', async (action) => {
      const random = randomId();
      const onTheirs = expectError(await other.actRaw(action, { id: theirs.workflow }), 'NOT_FOUND');
      const onRandom = expectError(await other.actRaw(action, { id: random }), 'NOT_FOUND');
      expect(normalize(onTheirs, theirs.workflow)).toEqual(normalize(onRandom, random));
      expect(await demo.snapshot()).toEqual(baseline);
    });

    it.each(['pause', 'resume', 'terminate', 'send'] as const)('%s with their { name } or { name, tag }: NO_MATCH, nothing changed', async (action) => {
      expect(await other.act(action, { name: theirs.name })).toEqual({ status: 'NO_MATCH', matched: 0, changed: 0, workflowIds: [] });
      expect(await other.act(action, { name: theirs.name, tag: theirs.tag })).toEqual({ status: 'NO_MATCH', matched: 0, changed: 0, workflowIds: [] });
      expect(await demo.snapshot()).toEqual(baseline);
    });

    it('workflow(id) of their workflow answers null, like a random id', async () => {
      const onTheirs = await other.workflowRaw(theirs.workflow);
      const onRandom = await other.workflowRaw(randomId());
      expect(onTheirs.body).toEqual({ data: { workflow: null } });
      expect(onRandom.body).toEqual(onTheirs.body);
    });

    it('workflowHistory of their workflow: exactly the answer for a random id', async () => {
      const random = randomId();
      const onTheirs = await other.historyRaw(theirs.workflow);
      const onRandom = await other.historyRaw(random);
      expect(onTheirs.status).toBe(onRandom.status);
      expect(onTheirs.body.data ?? null).toEqual(onRandom.body.data ?? null);
      expect((onTheirs.body.errors ?? []).map((e) => normalize(e, theirs.workflow))).toEqual((onRandom.body.errors ?? []).map((e) => normalize(e, random)));
      expect(onTheirs.text).not.toContain(theirs.name);
    });

    it('task(id) of their task answers null, like a random id', async () => {
      expect((await other.taskRaw(theirs.task)).body).toEqual({ data: { task: null } });
      expect((await other.taskRaw(randomId())).body).toEqual({ data: { task: null } });
    });

    it('workflows and tasks lists hold none of theirs, whatever the filter', async () => {
      for (const filter of [{}, { name: theirs.name }, { name: theirs.name, tag: theirs.tag }, { tag: theirs.tag }, { state: 'RUNNING' }]) {
        const list = await other.workflows(filter, { first: 500 });
        expect(list.nodes.map((w) => w.id)).not.toContain(theirs.workflow);
        if ('name' in filter || 'tag' in filter) expect(list.totalCount).toBe(0);
      }
      expect((await other.tasks({ name: theirs.name })).totalCount).toBe(0);
      expect((await other.tasks()).nodes.map((t) => t.id)).not.toContain(theirs.task);
    });

    it('a pagination cursor from their list reveals nothing', async () => {
      const page = await other.workflows({}, { first: 1, after: theirs.workflow });
      expect(page.nodes.map((w) => w.appId).every((app) => app === 'other')).toBe(true);
      expect(JSON.stringify(page)).not.toContain(theirs.name);
    });

    it('the same name and tag in two apps stay separate', async () => {
      const mine = await other.dispatchWorkflow(theirs.name, { tag: theirs.tag });
      expect(await other.act('pause', { name: theirs.name, tag: theirs.tag })).toEqual({ status: 'OK', matched: 1, changed: 1, workflowIds: [mine] });
      expect(await demo.state(theirs.workflow)).toBe('RUNNING');
      await other.act('terminate', { id: mine });
      expect(await demo.snapshot()).toEqual(baseline);
    });
  });
});
