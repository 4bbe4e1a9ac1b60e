/**
 * Request limits and malformed requests: body size (413), bad JSON (400), bad GraphQL (400),
 * query depth and cost, and the per-token rate limit (429 with Retry-After). No error body
 * ever carries a stack trace (`post` checks every response).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Client, DISPATCH_WORKFLOW, expectData, expectError, expectNoStackTrace, issueTokens, post, startServices, unique } from './api-helpers.js';

const services = startServices({
  defaults: {},
  tight: { env: { MAX_QUERY_DEPTH: '2', MAX_QUERY_COST: '10' } },
  rateLimited: { env: { RATE_LIMIT_PER_MINUTE: '5' } },
});
afterAll(() => services.stopAll());

describe('request limits and malformed requests', () => {
  let service: Service;
  let api: Client;

  beforeAll(async () => {
    service = await services.get('defaults');
    api = new Client(service, 'demo', 'dev');
  });

  describe('body size (BODY_LIMIT_BYTES, default 1 MiB)', () => {
    it('a body over 1 MiB → 413 PAYLOAD_TOO_LARGE, GraphQL-shaped, and nothing stored', async () => {
      const name = unique('Huge');
      const body = JSON.stringify({ query: DISPATCH_WORKFLOW, variables: { input: { appId: 'demo', environment: 'dev', name, input: JSON.stringify(['x'.repeat(1024 * 1024)]) } } });
      expect(Buffer.byteLength(body)).toBeGreaterThan(1024 * 1024);
      const response = await post(service, body);
      expect(response.status).toBe(413);
      expectError(response, 'PAYLOAD_TOO_LARGE');
      expect((await api.workflows({ name })).totalCount).toBe(0);
    });

    it('a body just under 1 MiB is read (and then judged on its content)', async () => {
      const name = unique('Large');
      const overhead = JSON.stringify({ query: DISPATCH_WORKFLOW, variables: { input: { appId: 'demo', environment: 'dev', name, input: '[""]' } } }).length;
      const body = JSON.stringify({ query: DISPATCH_WORKFLOW, variables: { input: { appId: 'demo', environment: 'dev', name, input: JSON.stringify(['y'.repeat(1024 * 1024 - overhead - 64)]) } } });
      expect(Buffer.byteLength(body)).toBeLessThan(1024 * 1024);
      const response = await post(service, body);
      // Under the body limit but over MAX_PAYLOAD_BYTES (256 KiB by default): the field is named.
      expectError(response, 'BAD_USER_INPUT', 'input');
    });

    it('the server keeps answering after a rejected body', async () => {
      expect(await api.dispatchWorkflow(unique('After413'))).toBeTruthy();
    });
  });

  describe('malformed requests', () => {
    it.each([
      ['not JSON at all', 'this is not json'],
      ['truncated JSON', '{"query":"{ __typename }"'],
      ['an empty body', ''],
      ['a trailing comma', '{"query":"{ __typename }",}'],
    ])('a body that is %s → 400 with a GraphQL-shaped error', async (_label, body) => {
      const response = await post(service, body);
      expect(response.status).toBe(400);
      expect(response.body.errors).toHaveLength(1);
      expect(response.body.errors![0]).toMatchObject({ message: expect.any(String), extensions: { code: expect.stringMatching(/^(BAD_REQUEST|BAD_USER_INPUT)$/) } });
      expect(response.body.data ?? null).toBeNull();
    });

    it.each([
      ['a JSON array', '[1, 2]'],
      ['a JSON string', '"{ __typename }"'],
      ['no query', '{"variables":{}}'],
      ['a query that is not a string', '{"query":{"a":1}}'],
      ['variables that are not an object', '{"query":"{ __typename }","variables":"x"}'],
    ])('a JSON body that is %s → 400 with a GraphQL-shaped error', async (_label, body) => {
      const response = await post(service, body);
      expect(response.status).toBe(400);
      expect(response.body.errors?.[0]?.extensions?.code).toEqual(expect.any(String));
    });

    it.each([
      ['an unclosed selection', '{ workflows( }'],
      ['a stray token', 'mutation { dispatchWorkflow(input: $input) { id } } }'],
      ['a lone word', 'hello'],
      ['an unterminated string', '{ workflow(id: "abc) { id } }'],
    ])('GraphQL with %s → 400 GRAPHQL_PARSE_FAILED', async (_label, query) => {
      const response = await post(service, JSON.stringify({ query }));
      expect(response.status).toBe(400);
      expectError(response, 'GRAPHQL_PARSE_FAILED');
    });

    it('an unknown field → 400 GRAPHQL_VALIDATION_FAILED', async () => {
      const response = await post(service, JSON.stringify({ query: '{ everything }' }));
      expect(response.status).toBe(400);
      expectError(response, 'GRAPHQL_VALIDATION_FAILED');
    });

    it('an unknown mutation → 400 GRAPHQL_VALIDATION_FAILED', async () => {
      const response = await post(service, JSON.stringify({ query: 'mutation { deleteEverything { status } }' }));
      expect(response.status).toBe(400);
      expect(response.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    });

    it('an undeclared variable type name → 400 GRAPHQL_VALIDATION_FAILED', async () => {
      const response = await post(service, JSON.stringify({ query: 'mutation($input: NoSuchInput!) { dispatchWorkflow(input: $input) { id } }', variables: { input: {} } }));
      expect(response.status).toBe(400);
      expect(response.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    });

    it('GET with a mutation is refused (mutations need POST)', async () => {
      const response = await fetch(`${service.url}/graphql?query=${encodeURIComponent('mutation { dispatchWorkflow(input: {appId: "demo", environment: "dev", name: "ViaGet", input: "[]"}) { id } }')}`, {
        headers: { authorization: `Bearer ${service.token}`, 'apollo-require-preflight': 'true' },
      });
      const text = await response.text();
      expectNoStackTrace(text);
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect((await api.workflows({ name: 'ViaGet' })).totalCount).toBe(0);
    });

    it('a wrong content type is refused without a stack trace', async () => {
      const response = await fetch(`${service.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', authorization: `Bearer ${service.token}` },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
      expectNoStackTrace(await response.text());
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.status).toBeLessThan(500);
    });
  });

  describe('query cost (MAX_QUERY_COST, default 500)', () => {
    it('many aliases → GRAPHQL_VALIDATION_FAILED, and the query does not run', async () => {
      const aliases = Array.from({ length: 300 }, (_, i) => `w${i}: workflows(filter: { appId: "demo", environment: "dev" }) { totalCount }`).join(' ');
      const response = await post(service, JSON.stringify({ query: `{ ${aliases} }` }));
      expect(response.status).toBe(400);
      expectError(response, 'GRAPHQL_VALIDATION_FAILED');
    });

    it('many aliased mutations → GRAPHQL_VALIDATION_FAILED, and none of them runs', async () => {
      const name = unique('Flood');
      const aliases = Array.from({ length: 501 }, (_, i) => `d${i}: dispatchWorkflow(input: { appId: "demo", environment: "dev", name: "${name}", input: "[]" }) { id }`).join(' ');
      const response = await post(service, JSON.stringify({ query: `mutation { ${aliases} }` }));
      expectError(response, 'GRAPHQL_VALIDATION_FAILED');
      expect((await api.workflows({ name })).totalCount).toBe(0);
    });

    it('fields hidden in fragments count too', async () => {
      const fields = Array.from({ length: 510 }, (_, i) => `f${i}: __typename`).join(' ');
      const response = await post(service, JSON.stringify({ query: `query { ...F } fragment F on Query { ${fields} }` }));
      expectError(response, 'GRAPHQL_VALIDATION_FAILED');
    });

    it('a query under the limit runs', async () => {
      const aliases = Array.from({ length: 20 }, (_, i) => `w${i}: workflows(filter: { appId: "demo", environment: "dev" }) { totalCount }`).join(' ');
      expect(Object.keys(expectData(await post(service, JSON.stringify({ query: `{ ${aliases} }` }))))).toHaveLength(20);
    });
  });

  describe('query depth (MAX_QUERY_DEPTH, default 10)', () => {
    it('a query nested deeper than 10 → GRAPHQL_VALIDATION_FAILED', async () => {
      // __schema(1) types(2), then fields/type pairs (3–12), name(13): a chain a client can make as long as it likes.
      const deep = `{ __schema { types { ${'fields { type { '.repeat(5)}name${' } }'.repeat(5)} } } }`;
      const response = await post(service, JSON.stringify({ query: deep }));
      expect(response.status).toBe(400);
      // graphql-js's own introspection-depth rule may add a second error of the same code.
      expect(response.body.errors!.map((e) => e.extensions?.code)).toEqual(response.body.errors!.map(() => 'GRAPHQL_VALIDATION_FAILED'));
      expect(response.body.errors!.some((e) => /depth/.test(e.message))).toBe(true);
      expect(response.body.data ?? null).toBeNull();
    });

    // GraphiQL and Apollo Sandbox load the schema with it: its `ofType` chain must not trip the limit.
    it('the standard introspection query that explorers send is accepted', async () => {
      const { getIntrospectionQuery } = await import('graphql');
      const data = expectData(await post(service, JSON.stringify({ query: getIntrospectionQuery() })));
      expect(data.__schema.mutationType.name).toBe('Mutation');
    });
  });
});

describe('query depth with MAX_QUERY_DEPTH=2 and cost with MAX_QUERY_COST=10', () => {
  let service: Service;

  beforeAll(async () => {
    service = await services.get('tight');
  });

  it('depth 2 runs, depth 3 → GRAPHQL_VALIDATION_FAILED', async () => {
    expectData(await post(service, JSON.stringify({ query: '{ workflows(filter: { appId: "demo", environment: "dev" }) { totalCount } }' })));
    const response = await post(service, JSON.stringify({ query: '{ workflows(filter: { appId: "demo", environment: "dev" }) { pageInfo { hasNextPage } } }' }));
    expect(response.status).toBe(400);
    expectError(response, 'GRAPHQL_VALIDATION_FAILED');
  });

  it('depth hidden in fragments counts', async () => {
    const response = await post(service, JSON.stringify({ query: '{ workflows(filter: { appId: "demo", environment: "dev" }) { ...P } } fragment P on WorkflowConnection { pageInfo { hasNextPage } }' }));
    expectError(response, 'GRAPHQL_VALIDATION_FAILED');
  });

  it('10 fields run, 11 → GRAPHQL_VALIDATION_FAILED', async () => {
    const fields = (n: number) => Array.from({ length: n }, (_, i) => `t${i}: __typename`).join(' ');
    expectData(await post(service, JSON.stringify({ query: `{ ${fields(10)} }` })));
    expectError(await post(service, JSON.stringify({ query: `{ ${fields(11)} }` })), 'GRAPHQL_VALIDATION_FAILED');
  });

  it('the limits apply to mutations as well', async () => {
    const fields = Array.from({ length: 11 }, (_, i) => `t${i}: __typename`).join(' ');
    const response = await post(service, JSON.stringify({ query: `mutation { ${fields} }` }));
    expectError(response, 'GRAPHQL_VALIDATION_FAILED');
  });
});

describe('rate limit (RATE_LIMIT_PER_MINUTE=5)', () => {
  let service: Service;
  let first: string;
  let second: string;

  beforeAll(async () => {
    service = await services.get('rateLimited');
    first = service.token;
    [second] = await issueTokens(service, [{ apps: ['demo'] }]);
  });

  const minute = () => Math.floor(Date.now() / 60_000);
  /** The limit counts per fixed minute: a test starts well inside one (the next, if this one ends within 5 s). */
  const wellInsideAMinute = async (): Promise<number> => {
    if (Date.now() % 60_000 > 55_000) {
      const now = minute();
      await waitFor(() => minute() !== now, { timeoutMs: 6_000, intervalMs: 50, description: 'the next minute' });
    }
    return minute();
  };

  it('the 6th request in a minute → 429 RATE_LIMITED with Retry-After; other tokens are not affected', async () => {
    const started = await wellInsideAMinute();
    const query = JSON.stringify({ query: '{ workflows(filter: { appId: "demo", environment: "dev" }) { totalCount } }' });
    for (let i = 1; i <= 5; i++) {
      const response = await post(service, query, first);
      expect({ request: i, status: response.status }).toEqual({ request: i, status: 200 });
    }
    const limited = await post(service, query, first);
    expect(minute()).toBe(started);
    expect(limited.status).toBe(429);
    expectError(limited, 'RATE_LIMITED');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);

    // A rate-limited mutation does nothing.
    const dispatch = await post(service, JSON.stringify({ query: DISPATCH_WORKFLOW, variables: { input: { appId: 'demo', environment: 'dev', name: 'Limited', input: '[]' } } }), first);
    expect(dispatch.status).toBe(429);

    const other = await post(service, query, second);
    expect(other.status).toBe(200);
    expect(expectData(other).workflows.totalCount).toBe(0);
  });

  it('every root field (alias) of a request counts: 6 dispatches in one request are refused as a whole, 3 and then 3 more too', async () => {
    const [token] = await issueTokens(service, [{ apps: ['demo'] }]);
    const started = await wellInsideAMinute();
    const name = unique('Aliased');
    const dispatches = (count: number, prefix: string) =>
      JSON.stringify({
        query: `mutation { ${Array.from({ length: count }, (_, i) => `${prefix}${i}: dispatchWorkflow(input: { appId: "demo", environment: "dev", name: "${name}", input: "[]" }) { id }`).join(' ')} }`,
      });
    const six = await post(service, dispatches(6, 'a'), token);
    expect(six.status).toBe(429);
    const error = expectError(six, 'RATE_LIMITED');
    expect(error.message).toMatch(/6 root fields/);
    expect(Number(six.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expectNoStackTrace(six.text);

    // A fresh token: 3 aliases fit; 3 more in the same minute are refused (3 + 3 > 5) and dispatch nothing.
    const [fresh] = await issueTokens(service, [{ apps: ['demo'] }]);
    const three = await post(service, dispatches(3, 'b'), fresh);
    expect(three.status).toBe(200);
    expect(Object.keys(expectData(three))).toHaveLength(3);
    const again = await post(service, dispatches(3, 'c'), fresh);
    expect(again.status).toBe(429);
    expectError(again, 'RATE_LIMITED');
    expect(minute()).toBe(started);
    const count = await post(service, JSON.stringify({ query: `{ workflows(filter: { appId: "demo", environment: "dev", name: "${name}" }) { totalCount } }` }), second);
    expect(expectData(count).workflows.totalCount).toBe(3);
  });

  it('root fields that @skip or @include leave out are not charged: 6 aliases, 5 of them skipped, go through', async () => {
    const [token] = await issueTokens(service, [{ apps: ['demo'] }]);
    const started = await wellInsideAMinute();
    const query = `query($skip: Boolean!) { a: __typename ${Array.from({ length: 5 }, (_, i) => `s${i}: __typename @skip(if: $skip)`).join(' ')} }`;
    // With issueTokens' own request: 1 + 1 + 1 ≤ 5; charged for its six fields it was refused (1 + 6).
    const skipped = await post(service, JSON.stringify({ query, variables: { skip: true } }), token);
    expect(skipped.status).toBe(200);
    expect(expectData(skipped)).toEqual({ a: 'Query' });
    // The same operation with the fields kept is charged for all six.
    const kept = await post(service, JSON.stringify({ query, variables: { skip: false } }), token);
    expect(minute()).toBe(started);
    expect(kept.status).toBe(429);
    expect(expectError(kept, 'RATE_LIMITED').message).toMatch(/6 root fields/);
  });

  it('a request refused for its root fields spends only its own one: what none of its fields ran is not charged, and a request that fits still goes', async () => {
    const [token] = await issueTokens(service, [{ apps: ['demo'] }]);
    const started = await wellInsideAMinute();
    const name = unique('Refunded');
    const dispatches = (count: number, prefix: string) =>
      JSON.stringify({
        query: `mutation { ${Array.from({ length: count }, (_, i) => `${prefix}${i}: dispatchWorkflow(input: { appId: "demo", environment: "dev", name: "${name}", input: "[]" }) { id }`).join(' ')} }`,
      });
    const six = await post(service, dispatches(6, 'a'), token);
    expect(six.status).toBe(429);
    // Nothing of the six ran; the request itself counts (1), as any refused request does. With
    // issueTokens' own request: 1 + 1 + 3 ≤ 5 (charging the six's fields made it 1 + 6 + 3).
    const three = await post(service, dispatches(3, 'b'), token);
    expect(minute()).toBe(started);
    expect(three.status).toBe(200);
    expect(Object.keys(expectData(three))).toHaveLength(3);
    // And the limit still holds: two more dispatches in the minute are refused.
    const two = await post(service, dispatches(2, 'c'), token);
    expect(minute()).toBe(started);
    expect(two.status).toBe(429);
  });

  it('requests without a valid token answer 401, not 429 (they are not counted against a token)', async () => {
    for (let i = 0; i < 7; i++) {
      expect((await post(service, '{"query":"{ __typename }"}', null)).status).toBe(401);
    }
  });
});
