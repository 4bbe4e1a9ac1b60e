/**
 * Hostile GraphQL documents and inputs (fuzz audit, items 3, 4, 5, 10 and 11), against the real
 * service over HTTP: fragment chains and deep nesting are refused with 400 and a stable code
 * before anything can overflow the stack; persisted-query refusals keep a client-side code; bad
 * variables, literals and the x-baton-min-position header name the offending field. No answer
 * carries internal text, and the service keeps answering.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { Service } from '../support/service.js';
import { Response, expectData, expectError, post, startServices } from '../api/api-helpers.js';

const services = startServices({ main: {} });
afterAll(() => services.stopAll());

const INTERNAL = /maximum call stack|internal server error|INTERNAL_SERVER_ERROR|RangeError/i;

/** `{ viewer { ...F0 } }` and `n` fragments, each spreading the next; the last selects `role`. */
const fragmentChain = (n: number): string => {
  const fragments = Array.from({ length: n }, (_, i) => `fragment F${i} on Viewer { ...F${i + 1} }`);
  return `{ viewer { ...F0 } } ${fragments.join(' ')} fragment F${n} on Viewer { role }`;
};

const query = (service: Service, text: string, variables?: Record<string, unknown>): Promise<Response> => post(service, JSON.stringify({ query: text, variables }));

/** A refusal: 400, one error with `code` (and `limit`), and nothing internal in the answer. */
function expectRefused(response: Response, code: string, limit?: string) {
  expect({ status: response.status, text: response.text.slice(0, 300) }).toEqual({ status: 400, text: expect.any(String) });
  const error = expectError(response, code);
  if (limit) expect(error.extensions?.limit).toBe(limit);
  expect(response.text).not.toMatch(INTERNAL);
  return error;
}

async function expectStillAnswering(service: Service) {
  expect(expectData(await query(service, '{ viewer { role } }')).viewer.role).toEqual(expect.any(String));
}

describe('fragment chains and deep nesting (audit items 3 and 4)', () => {
  let service: Service;
  beforeAll(async () => {
    service = await services.get('main');
  });

  it('a 6,000-fragment chain (226 KB) → 400 GRAPHQL_VALIDATION_FAILED, then the service still answers', async () => {
    const text = fragmentChain(6_000);
    expect(text.length).toBeGreaterThan(200_000);
    const error = expectRefused(await query(service, text), 'GRAPHQL_VALIDATION_FAILED');
    expect(error.extensions?.limit).toEqual(expect.any(String));
    await expectStillAnswering(service);
  });

  it('a 3,000-fragment chain is refused as well (not accepted after a second of work)', async () => {
    expectRefused(await query(service, fragmentChain(3_000)), 'GRAPHQL_VALIDATION_FAILED', 'fragments');
    await expectStillAnswering(service);
  });

  it('a short chain nested deeper than MAX_QUERY_DEPTH → limit depth; a chain within it runs', async () => {
    expect(expectRefused(await query(service, fragmentChain(12)), 'GRAPHQL_VALIDATION_FAILED', 'depth').message).toMatch(/fragments nested more than 10 deep/);
    expect(expectData(await query(service, fragmentChain(5))).viewer.role).toEqual(expect.any(String));
  });

  it.each([
    ['selection sets 4,000 deep', `{ viewer ${'{ role '.repeat(4_000)}${'}'.repeat(4_001)}`],
    ['selection sets 20,000 deep', `{ viewer ${'{ role '.repeat(20_000)}${'}'.repeat(20_001)}`],
    ['a list literal 3,000 deep', `{ viewer(x: ${'['.repeat(3_000)}${']'.repeat(3_000)}) { role } }`],
    ['an input object 20,000 deep', `{ workflows(filter: ${'{a:'.repeat(20_000)}1${'}'.repeat(20_000)}) { totalCount } }`],
    ['inline fragments 3,000 deep', `{ viewer { ${'... on Viewer { '.repeat(3_000)}role${' }'.repeat(3_000)} } }`],
  ])('%s → 400 GRAPHQL_VALIDATION_FAILED "document nested too deeply", no internal text', async (_label, text) => {
    const error = expectRefused(await query(service, text), 'GRAPHQL_VALIDATION_FAILED', 'depth');
    expect(error.message).toMatch(/^document nested too deeply \(more than \d+ levels\)$/);
    await expectStillAnswering(service);
  });

  it('inline fragments nested deeper than MAX_QUERY_DEPTH (but not too deep to parse) → limit depth', async () => {
    const text = `{ viewer { ${'... on Viewer { '.repeat(40)}role${' }'.repeat(40)} } }`;
    expect(expectRefused(await query(service, text), 'GRAPHQL_VALIDATION_FAILED', 'depth').message).toMatch(/fragments nested/);
  });

  it('a deep document sent with GET (in the URL, so shorter) → 400 as well', async () => {
    const text = `{ viewer(x: ${'['.repeat(1_000)}${']'.repeat(1_000)}) { role } }`;
    const response = await fetch(`${service.url}/graphql?query=${encodeURIComponent(text)}`, {
      headers: { authorization: `Bearer ${service.token}`, 'apollo-require-preflight': 'true' },
    });
    const body = await response.text();
    expect(response.status).toBe(400);
    expect(body).not.toMatch(INTERNAL);
    expect(JSON.parse(body).errors[0].extensions).toEqual({ code: 'GRAPHQL_VALIDATION_FAILED', limit: 'depth' });
  });

  it('a document of more tokens than the limit → 400 limit tokens', async () => {
    expectRefused(await query(service, `{ ${'__typename '.repeat(20_001)}}`), 'GRAPHQL_VALIDATION_FAILED', 'tokens');
  });

  it('ordinary documents with fragments still run', async () => {
    const text = `query($f: WorkflowFilterInput!) { workflows(filter: $f) { ...Page } viewer { ... on Viewer { role } } }
      fragment Page on WorkflowConnection { totalCount pageInfo { hasNextPage } nodes { ...Row } }
      fragment Row on Workflow { id name state }`;
    const data = expectData(await query(service, text, { f: { appId: 'demo', environment: 'dev' } }));
    expect(data.workflows.totalCount).toEqual(expect.any(Number));
  });
});

describe('persisted queries (audit item 5)', () => {
  let service: Service;
  beforeAll(async () => {
    service = await services.get('main');
  });

  it('a hash that does not match the query → 400 BAD_REQUEST with its message, and nothing logged as an internal error', async () => {
    const before = service.output().length;
    const response = await post(service, JSON.stringify({ query: '{ viewer { role } }', extensions: { persistedQuery: { version: 1, sha256Hash: 'zz' } } }));
    const error = expectRefused(response, 'BAD_REQUEST');
    expect(error.message).toBe('provided sha does not match query');
    // One more round trip, so that anything the service wrote for the first request has reached us.
    await expectStillAnswering(service);
    expect(service.output().slice(before)).not.toMatch(/provided sha|ERROR|\n\s+at /);
  });

  it('an unsupported version → 400 BAD_REQUEST', async () => {
    const response = await post(service, JSON.stringify({ query: '{ viewer { role } }', extensions: { persistedQuery: { version: 2, sha256Hash: 'zz' } } }));
    expectRefused(response, 'BAD_REQUEST');
  });

  it('an unknown hash without the query → PERSISTED_QUERY_NOT_FOUND; registered with it, the hash alone then runs', async () => {
    const text = '{ viewer { role } }';
    const sha256Hash = createHash('sha256').update(text).digest('hex');
    const extensions = { persistedQuery: { version: 1, sha256Hash } };
    const missing = await post(service, JSON.stringify({ extensions }));
    expectError(missing, 'PERSISTED_QUERY_NOT_FOUND');
    expect(missing.status).toBeLessThan(500);
    expectData(await post(service, JSON.stringify({ query: text, extensions })));
    expect(expectData(await post(service, JSON.stringify({ extensions }))).viewer.role).toEqual(expect.any(String));
  });
});

describe('the offending field of a bad variable or literal (audit item 10)', () => {
  let service: Service;
  beforeAll(async () => {
    service = await services.get('main');
  });

  const WORKFLOWS = 'query($f: WorkflowFilterInput!, $n: Int) { workflows(filter: $f, first: $n) { totalCount } }';
  const FILTER = { appId: 'demo', environment: 'dev' };

  it.each([1.5, 2147483648, '5'])('$n = %p bound to `first` → BAD_USER_INPUT, field "first"', async (n) => {
    const response = await query(service, WORKFLOWS, { f: FILTER, n });
    expect(response.status).toBe(400);
    expectError(response, 'BAD_USER_INPUT', 'first');
  });

  it('$f with state "NOPE" → BAD_USER_INPUT, field "filter.state"', async () => {
    expectError(await query(service, WORKFLOWS, { f: { ...FILTER, state: 'NOPE' } }), 'BAD_USER_INPUT', 'filter.state');
  });

  it('$f with a deep object for name → BAD_USER_INPUT, field "filter.name"', async () => {
    expectError(await query(service, WORKFLOWS, { f: { ...FILTER, name: { a: { a: { a: 1 } } } } }), 'BAD_USER_INPUT', 'filter.name');
  });

  it('$first on workflowHistory → field "first"', async () => {
    const text = 'query($first: Int) { workflowHistory(appId: "demo", environment: "dev", id: "x", first: $first) { revision } }';
    expectError(await query(service, text, { first: 2147483648 }), 'BAD_USER_INPUT', 'first');
  });

  it('$input keeps naming the field inside the input', async () => {
    const text = 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }';
    expectError(await query(service, text, { input: { appId: 'demo', environment: 'dev', input: '[]' } }), 'BAD_USER_INPUT', 'name');
  });

  it('a literal of the wrong type names its argument (GRAPHQL_VALIDATION_FAILED)', async () => {
    const response = await query(service, '{ workflows(filter: { appId: "demo", environment: "dev", state: NOPE }, first: 1.5) { totalCount } }');
    expect(response.status).toBe(400);
    expect(response.body.errors!.map((e) => e.extensions)).toEqual([
      { code: 'GRAPHQL_VALIDATION_FAILED', field: 'filter.state' },
      { code: 'GRAPHQL_VALIDATION_FAILED', field: 'first' },
    ]);
  });
});

describe('a malformed x-baton-min-position header (audit item 11)', () => {
  let service: Service;
  beforeAll(async () => {
    service = await services.get('main');
  });

  it.each(['garbage', '-5', '1e3', '99999999999999999999'])('%p → 400 BAD_USER_INPUT, field "x-baton-min-position"', async (value) => {
    const response = await post(service, JSON.stringify({ query: '{ viewer { role } }' }), service.token, { 'x-baton-min-position': value });
    expect(response.status).toBe(400);
    expect(expectError(response, 'BAD_USER_INPUT', 'x-baton-min-position').message).toMatch(/x-baton-min-position/);
  });

  it('a valid position is still read', async () => {
    expectData(await post(service, JSON.stringify({ query: '{ viewer { role } }' }), service.token, { 'x-baton-min-position': '0' }));
  });

  it('a position beyond the store\'s head is refused at once (it held the request 10 s, then 503), and one Baton answered is read', async () => {
    const started = Date.now();
    const response = await post(service, JSON.stringify({ query: '{ viewer { role } }' }), service.token, { 'x-baton-min-position': '9000000000000000000' });
    expect({ status: response.status, fast: Date.now() - started < 5_000 }).toEqual({ status: 400, fast: true });
    expect(expectError(response, 'BAD_USER_INPUT', 'x-baton-min-position').message).toMatch(/beyond/);
    const written = await post(
      service,
      JSON.stringify({ query: 'mutation { dispatchWorkflow(input: { appId: "demo", environment: "dev", name: "Positioned", input: "[]" }) { id } }' }),
    );
    const position = written.headers.get('x-baton-position');
    expect(position).toMatch(/^\d+$/);
    expectData(await post(service, JSON.stringify({ query: '{ viewer { role } }' }), service.token, { 'x-baton-min-position': position! }));
  });
});

describe('computed lists count in the complexity limit: nextFirings(count)', () => {
  let service: Service;
  beforeAll(async () => {
    service = await services.get('main');
  });

  // Each firing is computed (a cron occurrence resolved in its time zone, tens of microseconds), and
  // the rule used to see only `first`: nextFirings(count: 100) counted as one value. 10 aliases of
  // this over 500 schedules (daily, America/New_York) kept one request on the CPU for 20 s and held
  // a concurrent request 3.4 s; 60 aliases (within the old complexity) were two minutes.
  const firings = (aliases: number, first: number, count: string) =>
    `query${count === '$n' ? '($n: Int!)' : ''} { ${Array.from({ length: aliases }, (_, i) => `a${i}: schedules(first: ${first}, filter: { appId: "demo", environment: "dev" }) { nodes { nextFirings(count: ${count}) { at } } }`).join(' ')} }`;

  it('500 schedules × 100 firings, once or in 10 aliases, is refused before it runs (GRAPHQL_VALIDATION_FAILED, limit complexity)', async () => {
    expectRefused(await query(service, firings(10, 500, '100')), 'GRAPHQL_VALIDATION_FAILED', 'complexity');
    expectRefused(await query(service, firings(1, 500, '100')), 'GRAPHQL_VALIDATION_FAILED', 'complexity');
    expectRefused(await query(service, firings(1, 500, '$n'), { n: 1 }), 'GRAPHQL_VALIDATION_FAILED', 'complexity');
    await expectStillAnswering(service);
  });

  it("the dashboard's list (50 schedules, five firings each) and one schedule's 100 firings still run", async () => {
    const dashboard = '{ schedules(filter: { appId: "demo", environment: "dev" }) { nodes { id kind name tag cron timezone state nextFireAt lastFiredAt firedCount skippedCount triggeredCount nextFirings(count: 5) { at local } } } }';
    expect(expectData(await query(service, dashboard)).schedules.nodes).toEqual(expect.any(Array));
    const one = '{ schedules(first: 1, filter: { appId: "demo", environment: "dev" }) { nodes { nextFirings(count: 100) { at local } } } }';
    expect(expectData(await query(service, one)).schedules.nodes).toEqual(expect.any(Array));
  });
});
