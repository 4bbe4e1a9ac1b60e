/**
 * Bad inputs are BAD_USER_INPUT naming the field, and a rejected request changes nothing:
 * after each one, everything stored before is still there, unchanged.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Service } from '../support/service.js';
import { Client, UUID, expectData, expectError, startServices, unique } from './api-helpers.js';

const NOT_AN_ARRAY: Array<[string, string]> = [
  ['not JSON', 'not json'],
  ['truncated JSON', '["a",'],
  ['an empty string', ''],
  ['single-quoted pseudo-JSON', "['a']"],
  ['a JSON object', '{"a":1}'],
  ['a JSON string', '"hello"'],
  ['a JSON number', '42'],
  ['JSON null', 'null'],
  ['JSON true', 'true'],
];

const BAD_NAMES: Array<[string, string]> = [
  ['empty', ''],
  ['a NUL character', 'a\u0000b'],
  ['a newline', 'a\nb'],
  ['a tab', 'a\tb'],
  ['an escape character', '\u001b[31mred'],
  ['DEL', 'a\u007fb'],
  ['a C1 control character', 'a\u0085b'],
  // UTF-8 (the read models) has no form for it: the stored name would differ from the event's.
  ['an unpaired surrogate', 'a\ud800b'],
  ['a low surrogate alone', '\udc00'],
];

const services = startServices({ defaults: {}, smallPayloads: { env: { MAX_PAYLOAD_BYTES: '64' } } });
afterAll(() => services.stopAll());

describe('input validation', () => {
  let service: Service;
  let api: Client;
  let baseline: unknown;

  beforeAll(async () => {
    service = await services.get('defaults');
    api = new Client(service, 'demo', 'dev');
    // Something stored in every state, so a rejected request that damaged anything would show.
    const running = await api.dispatchWorkflow('Existing', { tag: 'id:1', input: '[1]' });
    const paused = await api.dispatchWorkflow('Existing', { tag: 'id:2' });
    const terminated = await api.dispatchWorkflow('Existing');
    await api.act('pause', { id: paused });
    await api.act('terminate', { id: terminated });
    await api.act('send', { id: running }, { name: 'Hello', data: '["world"]' });
    await api.dispatchTask('ExistingTask', '[true]');
    baseline = await api.snapshot();
  });
  afterEach(async () => {
    expect(await api.snapshot()).toEqual(baseline);
  });

  describe('input / data must be a string holding a JSON array', () => {
    it.each(NOT_AN_ARRAY)('dispatchWorkflow with input %s → BAD_USER_INPUT on "input"', async (_label, input) => {
      const error = expectError(await api.dispatchWorkflowRaw({ name: 'Existing', input, tag: 'id:1' }), 'BAD_USER_INPUT', 'input');
      expect(error.message).toMatch(/input/);
    });

    it.each(NOT_AN_ARRAY)('dispatchTask with input %s → BAD_USER_INPUT on "input"', async (_label, input) => {
      expectError(await api.dispatchTaskRaw({ name: 'ExistingTask', input }), 'BAD_USER_INPUT', 'input');
    });

    it.each(NOT_AN_ARRAY)('sendEventToWorkflows with data %s → BAD_USER_INPUT on "data"', async (_label, data) => {
      expectError(await api.actRaw('send', { name: 'Existing' }, { name: 'Hello', data }), 'BAD_USER_INPUT', 'data');
    });

    it('input given as a real JSON array instead of a string → BAD_USER_INPUT on "input"', async () => {
      expectError(await api.dispatchWorkflowRaw({ name: 'Existing', input: ['a'] }), 'BAD_USER_INPUT', 'input');
      expectError(await api.dispatchTaskRaw({ name: 'ExistingTask', input: 5 }), 'BAD_USER_INPUT', 'input');
      expectError(await api.actRaw('send', { name: 'Existing' }, { name: 'Hello', data: [1] }), 'BAD_USER_INPUT', 'data');
    });
  });

  describe('appId, environment and names', () => {
    const fields = [
      ['appId', 128],
      ['environment', 128],
      ['name', 256],
    ] as const;

    for (const [field, max] of fields) {
      it.each(BAD_NAMES)(`dispatchWorkflow with ${field} %s → BAD_USER_INPUT on "${field}"`, async (_label, value) => {
        expectError(await api.dispatchWorkflowRaw({ name: 'Existing', [field]: value }), 'BAD_USER_INPUT', field);
      });

      it.each(BAD_NAMES)(`dispatchTask with ${field} %s → BAD_USER_INPUT on "${field}"`, async (_label, value) => {
        expectError(await api.dispatchTaskRaw({ name: 'ExistingTask', [field]: value }), 'BAD_USER_INPUT', field);
      });

      it(`${field} over ${max} characters → BAD_USER_INPUT on "${field}" (dispatchWorkflow, dispatchTask)`, async () => {
        expectError(await api.dispatchWorkflowRaw({ name: 'Existing', [field]: 'x'.repeat(max + 1) }), 'BAD_USER_INPUT', field);
        expectError(await api.dispatchTaskRaw({ name: 'ExistingTask', [field]: 'x'.repeat(max + 1) }), 'BAD_USER_INPUT', field);
      });
    }

    it.each(BAD_NAMES)('selector actions with appId %s → BAD_USER_INPUT on "appId"', async (_label, appId) => {
      for (const action of ['pause', 'resume', 'terminate', 'send'] as const) {
        expectError(await api.actRaw(action, { name: 'Existing' }, { appId }), 'BAD_USER_INPUT', 'appId');
      }
    });

    it.each(BAD_NAMES)('selector actions with environment %s → BAD_USER_INPUT on "environment"', async (_label, environment) => {
      for (const action of ['pause', 'resume', 'terminate', 'send'] as const) {
        expectError(await api.actRaw(action, { name: 'Existing' }, { environment }), 'BAD_USER_INPUT', 'environment');
      }
    });

    it.each(BAD_NAMES)('list queries with a filter appId %s → BAD_USER_INPUT on "filter.appId"', async (_label, appId) => {
      const filter = { appId, environment: 'dev' };
      for (const query of [
        'query($f: WorkflowFilterInput!) { workflows(filter: $f) { totalCount } }',
        'query($f: WorkflowFilterInput!) { workflowCounts(filter: $f) { state count } }',
        'query($f: TaskFilterInput!) { tasks(filter: $f) { totalCount } }',
        'query($f: ScheduleFilterInput!) { schedules(filter: $f) { totalCount } }',
        'query($f: AuditFilterInput!) { auditLog(filter: $f) { totalCount } }',
      ]) {
        expectError(await api.gql(query, { f: filter }), 'BAD_USER_INPUT', 'filter.appId');
      }
    });

    it('list filters and cursors are bounded like the values they match: a name or tag over 256 characters, an id over 64, a cursor over 128', async () => {
      const scope = { appId: 'demo', environment: 'dev' };
      const cases: Array<[string, Record<string, unknown>, string]> = [
        ['query($f: WorkflowFilterInput!) { workflows(filter: $f) { totalCount } }', { f: { ...scope, name: 'n'.repeat(257) } }, 'filter.name'],
        ['query($f: WorkflowFilterInput!) { workflows(filter: $f) { totalCount } }', { f: { ...scope, tag: 't'.repeat(257) } }, 'filter.tag'],
        ['query($f: WorkflowFilterInput!) { workflows(filter: $f) { totalCount } }', { f: { ...scope, parentId: 'p'.repeat(65) } }, 'filter.parentId'],
        ['query($f: TaskFilterInput!) { tasks(filter: $f) { totalCount } }', { f: { ...scope, name: 'n'.repeat(257) } }, 'filter.name'],
        ['query($f: ScheduleFilterInput!) { schedules(filter: $f) { totalCount } }', { f: { ...scope, name: 'n'.repeat(257) } }, 'filter.name'],
        ['query($f: WorkflowFilterInput!, $a: String) { workflows(filter: $f, after: $a) { totalCount } }', { f: scope, a: 'c'.repeat(129) }, 'after'],
      ];
      for (const [query, variables, field] of cases) expectError(await api.gql(query, variables), 'BAD_USER_INPUT', field);
      // At the bounds they are accepted (and match nothing).
      expect(expectData(await api.gql(cases[0][0], { f: { ...scope, name: 'n'.repeat(256) } })).workflows.totalCount).toBe(0);
    });

    it('a list cursor that is neither an endCursor nor an id → BAD_USER_INPUT on "after" (it used to page from an arbitrary place)', async () => {
      const scope = { appId: 'demo', environment: 'dev' };
      const lists = [
        'query($f: WorkflowFilterInput!, $a: String) { workflows(filter: $f, first: 1, after: $a) { nodes { id } pageInfo { endCursor } } }',
        'query($f: TaskFilterInput!, $a: String) { tasks(filter: $f, first: 1, after: $a) { nodes { id } pageInfo { endCursor } } }',
        'query($f: ScheduleFilterInput!, $a: String) { schedules(filter: $f, first: 1, after: $a) { nodes { id } pageInfo { endCursor } } }',
      ];
      for (const query of lists) {
        for (const after of ['0', 'zzz', '12:', '12:not-an-id', `x:${randomUUID()}`, ` ${randomUUID()}`]) expectError(await api.gql(query, { f: scope, a: after }), 'BAD_USER_INPUT', 'after');
        // An endCursor, a bare id (the cursors of earlier versions, in either case) and "" are read.
        for (const after of [`12:${randomUUID()}`, randomUUID().toUpperCase(), '']) expectData(await api.gql(query, { f: scope, a: after }));
      }
    });

    it.each(BAD_NAMES)('sendEventToWorkflows with event name %s → BAD_USER_INPUT on "name"', async (_label, name) => {
      expectError(await api.actRaw('send', { name: 'Existing' }, { name, data: '[]' }), 'BAD_USER_INPUT', 'name');
    });

    it('an event name over 256 characters → BAD_USER_INPUT on "name"', async () => {
      expectError(await api.actRaw('send', { name: 'Existing' }, { name: 'e'.repeat(257), data: '[]' }), 'BAD_USER_INPUT', 'name');
    });

    it.each([
      ['a control character in the name', { name: 'Exi\nsting' }],
      ['a name over 256 characters', { name: 'x'.repeat(257) }],
      ['a control character in the tag', { name: 'Existing', tag: 'id:\u00001' }],
      ['a tag over 256 characters', { name: 'Existing', tag: 't'.repeat(257) }],
    ])('a selector with %s → BAD_USER_INPUT on the selector', async (_label, selector) => {
      expectError(await api.actRaw('pause', selector), 'BAD_USER_INPUT', /^selector(\.(name|tag))?$/);
    });

    it('the longest allowed values are accepted', async () => {
      const appId = 'a'.repeat(128);
      const environment = 'e'.repeat(128);
      const name = 'n'.repeat(256);
      const tag = 't'.repeat(256);
      const long = new Client(service, appId, environment, service.token);
      // The bootstrap token is scoped to app "demo": a long appId is valid input but FORBIDDEN.
      expectError(await long.dispatchWorkflowRaw({ name }), 'FORBIDDEN');
      const demo = new Client(service, 'demo', environment);
      const id = await demo.dispatchWorkflow(name, { tag });
      expect(await demo.workflow(id)).toMatchObject({ name, tag, environment });
      expect(await demo.act('terminate', { name, tag })).toMatchObject({ matched: 1, changed: 1 });
    });

    it('names may hold any printable Unicode', async () => {
      const name = unique('Émile-名前-🚀');
      const id = await api.in('demo', 'unicode-env').dispatchWorkflow(name, { tag: 'email:émile@exämple.com' });
      expect(await api.in('demo', 'unicode-env').workflow(id)).toMatchObject({ name, tag: 'email:émile@exämple.com' });
    });
  });

  describe('tag', () => {
    it('a tag over 256 characters → BAD_USER_INPUT on "tag"', async () => {
      expectError(await api.dispatchWorkflowRaw({ name: 'Existing', tag: 't'.repeat(257) }), 'BAD_USER_INPUT', 'tag');
    });

    it.each([
      ['empty', ''],
      ['a control character', 'id:\u00071'],
      ['a newline', 'id:1\n'],
      ['an unpaired surrogate', 'id:\ud83d'],
    ])('a tag that is %s → BAD_USER_INPUT on "tag"', async (_label, tag) => {
      expectError(await api.dispatchWorkflowRaw({ name: 'Existing', tag }), 'BAD_USER_INPUT', 'tag');
    });

    it('a tag that is not a string → BAD_USER_INPUT on "tag"', async () => {
      expectError(await api.dispatchWorkflowRaw({ name: 'Existing', tag: ['a', 'b'] }), 'BAD_USER_INPUT', 'tag');
      expectError(await api.dispatchWorkflowRaw({ name: 'Existing', tag: 7 }), 'BAD_USER_INPUT', 'tag');
    });

    it('a dispatchTask tag that is not a string → BAD_USER_INPUT on "tag"', async () => {
      expectError(await api.dispatchTaskRaw({ name: 'ExistingTask', tag: 7 }), 'BAD_USER_INPUT', 'tag');
    });

    it('a version that is not "v" and a number → BAD_USER_INPUT on "version"', async () => {
      expectError(await api.dispatchWorkflowRaw({ name: 'Existing', version: '2' }), 'BAD_USER_INPUT', 'version');
      expectError(await api.dispatchWorkflowRaw({ name: 'Existing', version: 'v2.1' }), 'BAD_USER_INPUT', 'version');
    });
  });

  describe('missing and unknown fields', () => {
    it.each(['appId', 'environment', 'name', 'input'])('dispatchWorkflow without %s → BAD_USER_INPUT naming it (HTTP 400)', async (field) => {
      const input: Record<string, unknown> = { appId: 'demo', environment: 'dev', name: 'Existing', input: '[]' };
      delete input[field];
      const response = await api.gql('mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', { input });
      expect(response.status).toBe(400);
      expectError(response, 'BAD_USER_INPUT', field);
    });

    it.each(['appId', 'environment', 'name', 'input'])('dispatchTask without %s → BAD_USER_INPUT naming it', async (field) => {
      const input: Record<string, unknown> = { appId: 'demo', environment: 'dev', name: 'ExistingTask', input: '[]' };
      delete input[field];
      expectError(await api.gql('mutation($input: DispatchTaskInput!) { dispatchTask(input: $input) { id } }', { input }), 'BAD_USER_INPUT', field);
    });

    it.each(['appId', 'environment', 'name', 'data'])('sendEventToWorkflows without %s → BAD_USER_INPUT naming it', async (field) => {
      const input: Record<string, unknown> = { appId: 'demo', environment: 'dev', selector: { name: 'Existing' }, name: 'Hello', data: '[]' };
      delete input[field];
      expectError(await api.gql('mutation($input: SendEventToWorkflowsInput!) { sendEventToWorkflows(input: $input) { status } }', { input }), 'BAD_USER_INPUT', field);
    });

    it.each([
      ['null', null],
      ['missing', undefined],
    ])('the input variable %s → BAD_USER_INPUT', async (_label, input) => {
      const response = await api.gql('mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', input === undefined ? {} : { input });
      expect(response.status).toBe(400);
      expectError(response, 'BAD_USER_INPUT', 'input');
    });

    it('an unknown input field → BAD_USER_INPUT naming it', async () => {
      expectError(await api.dispatchWorkflowRaw({ name: 'Existing', priority: 'high' }), 'BAD_USER_INPUT', 'priority');
    });

    it('a field of the wrong type → BAD_USER_INPUT naming it', async () => {
      expectError(await api.dispatchWorkflowRaw({ name: 42 }), 'BAD_USER_INPUT', 'name');
      expectError(await api.dispatchWorkflowRaw({ name: 'Existing', appId: { id: 'demo' } }), 'BAD_USER_INPUT', 'appId');
    });
  });

  it.each([
    ['a number that overflows a double', '[1e400]'],
    ['a negative one', '[{"a": [-1e400]}]'],
  ])('input holding %s → BAD_USER_INPUT on "input" (it would be stored as null)', async (_label, input) => {
    expectError(await api.dispatchWorkflowRaw({ name: 'Existing', input }), 'BAD_USER_INPUT', 'input');
    expectError(await api.dispatchTaskRaw({ name: 'ExistingTask', input }), 'BAD_USER_INPUT', 'input');
    expectError(await api.actRaw('send', { name: 'Existing' }, { name: 'Hello', data: input }), 'BAD_USER_INPUT', 'data');
  });

  it('valid inputs of every JSON kind inside the array round-trip', async () => {
    const input = '[1, -2.5, 1.7976931348623157e308, "s", null, true, {"a": [1, {"b": null}]}, [], "\\u0000 ✓ 🚀"]';
    const id = await api.in('demo', 'roundtrip').dispatchWorkflow(unique('Kinds'), { input });
    expect(JSON.parse((await api.in('demo', 'roundtrip').workflow(id))!.input)).toEqual(JSON.parse(input));
  });
});

describe('MAX_PAYLOAD_BYTES', () => {
  const LIMIT = 64;
  let service: Service;
  let api: Client;
  let existing: string;

  beforeAll(async () => {
    service = await services.get('smallPayloads');
    api = new Client(service, 'demo', 'dev');
    existing = await api.dispatchWorkflow('Big', { tag: 'id:1' });
  });

  /** A JSON array string of exactly `bytes` UTF-8 bytes. */
  const arrayOf = (bytes: number) => `["${'x'.repeat(bytes - 4)}"]`;

  it('input of exactly the limit is accepted', async () => {
    expect(Buffer.byteLength(arrayOf(LIMIT))).toBe(LIMIT);
    expect(await api.dispatchWorkflow('Big', { input: arrayOf(LIMIT) })).toMatch(UUID);
    expect(await api.dispatchTask('BigTask', arrayOf(LIMIT))).toMatch(UUID);
  });

  it('input one byte over the limit → BAD_USER_INPUT on "input" (dispatchWorkflow, dispatchTask)', async () => {
    expectError(await api.dispatchWorkflowRaw({ name: 'Big', input: arrayOf(LIMIT + 1) }), 'BAD_USER_INPUT', 'input');
    expectError(await api.dispatchTaskRaw({ name: 'BigTask', input: arrayOf(LIMIT + 1) }), 'BAD_USER_INPUT', 'input');
  });

  it('the limit counts UTF-8 bytes, not characters', async () => {
    const input = `["${'é'.repeat(31)}"]`; // 35 characters, 66 bytes
    expect(input.length).toBeLessThan(LIMIT);
    expectError(await api.dispatchWorkflowRaw({ name: 'Big', input }), 'BAD_USER_INPUT', 'input');
  });

  it('event data over the limit → BAD_USER_INPUT on "data", and nothing is recorded', async () => {
    const before = await api.history(existing);
    expectError(await api.actRaw('send', { id: existing }, { name: 'E', data: arrayOf(LIMIT + 1) }), 'BAD_USER_INPUT', 'data');
    expect(await api.history(existing)).toEqual(before);
    expect(expectData(await api.actRaw('send', { id: existing }, { name: 'E', data: arrayOf(LIMIT) })).sendEventToWorkflows.changed).toBe(1);
  });

  it('rejected payloads store nothing', async () => {
    const list = await api.workflows({ name: 'Big' });
    expect(list.nodes.map((w) => JSON.parse(w.input)[0]?.length ?? 0).every((n: number) => n <= LIMIT)).toBe(true);
    expect(list.totalCount).toBe(2);
  });
});
