/**
 * Workflow selectors: the three valid forms, every invalid one, NOT_FOUND for ids, and the
 * `status` / `matched` / `changed` / `workflowIds` of the result.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { Action, Client, expectError, issueTokens, randomId, unique } from './api-helpers.js';

const ACTIONS: Action[] = ['send', 'pause', 'resume', 'terminate'];

describe('workflow selectors', () => {
  let service: Service;
  let api: Client;
  let otherApp: Client;

  beforeAll(async () => {
    service = await startService();
    const [otherToken] = await issueTokens(service, [{ apps: ['other'] }]);
    api = new Client(service, 'demo', 'dev');
    otherApp = new Client(service, 'other', 'dev', otherToken);
  });
  afterAll(() => service?.stop());

  describe('valid forms', () => {
    it('{ id } picks exactly that workflow', async () => {
      const name = unique('Order');
      const [a, b] = [await api.dispatchWorkflow(name), await api.dispatchWorkflow(name)];
      expect(await api.act('pause', { id: a })).toEqual({ status: 'OK', matched: 1, changed: 1, workflowIds: [a] });
      expect(await api.state(a)).toBe('PAUSED');
      expect(await api.state(b)).toBe('RUNNING');
    });

    it('{ name } picks every not-final workflow of that name, tagged or not, and no other name', async () => {
      const name = unique('Order');
      const ids = [await api.dispatchWorkflow(name), await api.dispatchWorkflow(name, { tag: 'id:1' }), await api.dispatchWorkflow(name, { tag: 'id:2' })];
      const stranger = await api.dispatchWorkflow(`${name}-x`);
      const result = await api.act('pause', { name });
      expect(result).toMatchObject({ status: 'OK', matched: 3, changed: 3 });
      expect([...result.workflowIds].sort()).toEqual([...ids].sort());
      for (const id of ids) expect(await api.state(id)).toBe('PAUSED');
      expect(await api.state(stranger)).toBe('RUNNING');
    });

    it('{ name, tag } picks only the workflows of that name with that tag', async () => {
      const name = unique('Order');
      const tagged = [await api.dispatchWorkflow(name, { tag: 'email:a@x.io' }), await api.dispatchWorkflow(name, { tag: 'email:a@x.io' })];
      const otherTag = await api.dispatchWorkflow(name, { tag: 'email:b@x.io' });
      const untagged = await api.dispatchWorkflow(name);
      const sameTagOtherName = await api.dispatchWorkflow(`${name}-x`, { tag: 'email:a@x.io' });
      const result = await api.act('terminate', { name, tag: 'email:a@x.io' });
      expect(result).toMatchObject({ status: 'OK', matched: 2, changed: 2 });
      expect([...result.workflowIds].sort()).toEqual([...tagged].sort());
      for (const id of tagged) expect(await api.state(id)).toBe('TERMINATED');
      for (const id of [otherTag, untagged, sameTagOtherName]) expect(await api.state(id)).toBe('RUNNING');
    });

    it('tags are compared exactly (case and whitespace matter)', async () => {
      const name = unique('Order');
      await api.dispatchWorkflow(name, { tag: 'Email:Ada' });
      expect(await api.act('send', { name, tag: 'email:ada' })).toEqual({ status: 'NO_MATCH', matched: 0, changed: 0, workflowIds: [] });
      expect(await api.act('send', { name, tag: 'Email:Ada ' })).toMatchObject({ status: 'NO_MATCH', matched: 0 });
      expect(await api.act('send', { name, tag: 'Email:Ada' })).toMatchObject({ status: 'OK', matched: 1, changed: 1 });
    });

    it.each(ACTIONS)('%s: a name or name+tag that matches nothing answers NO_MATCH with matched 0', async (action) => {
      const name = unique('Nothing');
      expect(await api.act(action, { name })).toEqual({ status: 'NO_MATCH', matched: 0, changed: 0, workflowIds: [] });
      expect(await api.act(action, { name, tag: 'id:1' })).toEqual({ status: 'NO_MATCH', matched: 0, changed: 0, workflowIds: [] });
    });

    it('status is OK when something matched even if nothing changed', async () => {
      const name = unique('Order');
      const id = await api.dispatchWorkflow(name, { tag: 't' });
      expect(await api.act('resume', { name, tag: 't' })).toEqual({ status: 'OK', matched: 1, changed: 0, workflowIds: [id] });
      expect(await api.act('resume', { id })).toEqual({ status: 'OK', matched: 1, changed: 0, workflowIds: [id] });
    });

    it('matched counts every picked workflow and changed only those the action changed', async () => {
      const name = unique('Order');
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push(await api.dispatchWorkflow(name));
      await api.act('pause', { id: ids[0] });
      await api.act('pause', { id: ids[1] });
      const result = await api.act('pause', { name });
      expect(result).toMatchObject({ status: 'OK', matched: 5, changed: 3 });
      expect([...result.workflowIds].sort()).toEqual([...ids].sort());
    });

    it('{ name } over several pages: every running and paused workflow once, in dispatch order', async () => {
      // The action reads and changes 256 workflows at a time: 700 of a name and its version
      // cross three pages, with finished ones and another name between them.
      const name = unique('Bulk');
      for (let i = 0; i < 700; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, j) => api.dispatchWorkflow((i + j) % 3 ? name : `${name}_v2`)));
        await api.dispatchWorkflow(`${name}-other`);
      }
      const listed: Array<{ id: string; state: string }> = [];
      for (let after: string | null = null; ; ) {
        const page = await api.workflows({ name }, { first: 200, after });
        listed.push(...page.nodes);
        if (!page.pageInfo.hasNextPage) break;
        after = page.pageInfo.endCursor;
      }
      expect(listed).toHaveLength(700);
      const ids = listed.map((w) => w.id); // dispatch order
      const finished = ids.filter((_, i) => i % 97 === 5);
      const paused = ids.filter((_, i) => i % 31 === 7 && i % 97 !== 5);
      for (const id of finished) await api.act('terminate', { id });
      for (const id of paused) await api.act('pause', { id });
      const active = ids.filter((id) => !finished.includes(id));

      const sent = await api.act('send', { name });
      expect(sent).toEqual({ status: 'OK', matched: active.length, changed: active.length, workflowIds: active });
      const resumed = await api.act('resume', { name });
      expect(resumed).toEqual({ status: 'OK', matched: active.length, changed: paused.length, workflowIds: active });
      const last = active[active.length - 1];
      expect((await api.history(last)).filter((e) => e.type === 'WorkflowEventReceived')).toHaveLength(1);

      const [terminated] = await Promise.all([
        api.act('terminate', { name }),
        // Dispatched while the action runs: whether it is picked depends on which came first.
        api.dispatchWorkflow(name),
      ]);
      expect(terminated.matched).toBeGreaterThanOrEqual(active.length);
      expect(terminated.workflowIds.slice(0, active.length)).toEqual(active);
      expect(terminated.changed).toBe(terminated.matched);
      for (const id of [active[0], active[300], last]) expect(await api.state(id)).toBe('TERMINATED');
      expect(await api.act('terminate', { name: `${name}-other` })).toMatchObject({ matched: 14, changed: 14 });
    });

    it('selectors stay inside the environment', async () => {
      const name = unique('Order');
      const dev = await api.dispatchWorkflow(name, { tag: 't' });
      const prod = await api.in('demo', 'prod').dispatchWorkflow(name, { tag: 't' });
      expect(await api.act('pause', { name, tag: 't' })).toMatchObject({ matched: 1, workflowIds: [dev] });
      expect(await api.in('demo', 'prod').state(prod)).toBe('RUNNING');
    });
  });

  describe('{ id, name } (what the original client sends for withId)', () => {
    it('acts on the workflow when the name agrees (its own or its base name), NOT_FOUND with type when not', async () => {
      const name = unique('Order');
      const id = await api.dispatchWorkflow(name);
      expect(await api.act('pause', { id, name })).toMatchObject({ status: 'OK', matched: 1, changed: 1, workflowIds: [id] });
      const versioned = await api.dispatchWorkflow(`${name}_v2`);
      expect(await api.act('pause', { id: versioned, name })).toMatchObject({ status: 'OK', workflowIds: [versioned] });
      const before = await api.history(id);
      const response = await api.actRaw('resume', { id, name: `${name}X` });
      const error = expectError(response, 'NOT_FOUND');
      expect(error).toMatchObject({ type: 'NOT_FOUND' });
      expect(await api.history(id)).toEqual(before);
    });
  });

  describe('invalid forms are BAD_USER_INPUT on "selector"', () => {
    const invalid: Array<[string, (id: string) => unknown]> = [
      ['a tag alone', () => ({ tag: 'id:1' })],
      ['id with tag', (id) => ({ id, tag: 'id:1' })],
      ['id with name and tag', (id) => ({ id, name: 'Order', tag: 'id:1' })],
      ['an empty object', () => ({})],
      ['all fields null', () => ({ id: null, name: null, tag: null })],
      ['id null', () => ({ id: null })],
      ['a tag with a null name', () => ({ name: null, tag: 'id:1' })],
    ];
    const cases = ACTIONS.flatMap((action) => invalid.map(([label, selector]) => [action, label, selector] as const));

    it.each(cases)('%s with %s', async (action, _label, selector) => {
      const name = unique('Order');
      const id = await api.dispatchWorkflow(name, { tag: 'id:1' });
      const before = await api.history(id);
      const error = expectError(await api.actRaw(action, selector(id)), 'BAD_USER_INPUT', 'selector');
      expect(error.message).toMatch(/selector/);
      expect(await api.history(id)).toEqual(before);
    });

    it.each(ACTIONS)('%s with a null selector (HTTP 400, variable coercion)', async (action) => {
      const response = await api.actRaw(action, null);
      expect(response.status).toBe(400);
      expectError(response, 'BAD_USER_INPUT', 'selector');
    });

    it.each(ACTIONS)('%s with no selector at all', async (action) => {
      const response = await api.gql(`mutation($input: ${{ send: 'SendEventToWorkflows', pause: 'PauseWorkflows', resume: 'ResumeWorkflows', terminate: 'TerminateWorkflows' }[action]}Input!) { ${{ send: 'sendEventToWorkflows', pause: 'pauseWorkflows', resume: 'resumeWorkflows', terminate: 'terminateWorkflows' }[action]}(input: $input) { status } }`, {
        input: { appId: 'demo', environment: 'dev', ...(action === 'send' ? { name: 'Ping', data: '[]' } : {}) },
      });
      expectError(response, 'BAD_USER_INPUT', 'selector');
    });

    it.each(ACTIONS)('%s with a selector that is not an object', async (action) => {
      expectError(await api.actRaw(action, 'Order'), 'BAD_USER_INPUT', 'selector');
    });

    it.each(ACTIONS)('%s with an unknown selector field', async (action) => {
      expectError(await api.actRaw(action, { name: 'Order', status: 'running' }), 'BAD_USER_INPUT', /^selector/);
    });

    it.each([
      ['an empty name', { name: '' }],
      ['an empty name with a tag', { name: '', tag: 'id:1' }],
      ['an empty tag', { name: 'Order', tag: '' }],
      ['an empty id', { id: '' }],
    ])('pause with %s', async (_label, selector) => {
      expectError(await api.actRaw('pause', selector), 'BAD_USER_INPUT', /^selector(\.|$)/);
    });
  });

  describe('an { id } that names no workflow of this app and environment is NOT_FOUND', () => {
    const strip = (message: string, id: string) => message.replaceAll(id, '<id>');

    it.each(ACTIONS)('%s: a well-formed id that names nothing', async (action) => {
      const id = randomId();
      const error = expectError(await api.actRaw(action, { id }), 'NOT_FOUND');
      expect(error.message).toContain(id);
    });

    it.each(ACTIONS)('%s: a malformed id', async (action) => {
      for (const id of ['not-a-uuid', '12345', "'; drop table events; --", '01a201b1-4b03-78f8-9de4-a3782a8d65dz']) {
        expectError(await api.actRaw(action, { id }), 'NOT_FOUND');
      }
    });

    it('an id longer than 64 characters is rejected without being looked up', async () => {
      const response = await api.actRaw('pause', { id: 'x'.repeat(65) });
      expect(response.body.errors?.[0]?.extensions?.code).toMatch(/^(BAD_USER_INPUT|NOT_FOUND)$/);
    });

    it.each(ACTIONS)("%s: another app's workflow is exactly as unknown as a random id", async (action) => {
      const theirs = await otherApp.dispatchWorkflow(unique('Secret'), { tag: 't' });
      const before = await otherApp.history(theirs);
      const random = randomId();
      const onTheirs = expectError(await api.actRaw(action, { id: theirs }), 'NOT_FOUND');
      const onRandom = expectError(await api.actRaw(action, { id: random }), 'NOT_FOUND');
      expect({ ...onTheirs, message: strip(onTheirs.message, theirs) }).toEqual({ ...onRandom, message: strip(onRandom.message, random) });
      expect(await otherApp.history(theirs)).toEqual(before);
      expect(await otherApp.state(theirs)).toBe('RUNNING');
    });

    it.each(ACTIONS)("%s: the same app's workflow in another environment", async (action) => {
      const prod = api.in('demo', 'prod');
      const id = await prod.dispatchWorkflow(unique('Order'));
      expectError(await api.actRaw(action, { id }), 'NOT_FOUND');
      expect(await prod.state(id)).toBe('RUNNING');
      expect((await prod.history(id)).map((e) => e.type)).toEqual(['WorkflowDispatched']);
    });
  });
});
