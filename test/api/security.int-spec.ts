/**
 * Hostile requests, as an attacker would send them: every shape of request that reaches the
 * GraphQL route is authenticated and rate limited; amplification is bounded (query complexity,
 * response budget); every JSON input, public or worker, is bounded (bytes, depth, arrays, report
 * items, event data shape); the HTTP layer's own refusals carry a code; long polls (pollWork and
 * awaitWorkflow) and the workers remembered per token are bounded; the store file and a read-model
 * file of its own are owner-only; the bootstrap token is never re-created.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmodSync, existsSync, mkdtempSync, statSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Client, expectData, expectError, expectNoStackTrace, gql, issueTokens, post, revokeTokenViaCli, startServices, tokenIdOf, unique } from './api-helpers.js';
import { HEARTBEAT, POLL_WORK, REPORT_WORK, poll, rawRequest } from './security-helpers.js';

const services = startServices({
  main: {},
  tight: { env: { MAX_POLLS_PER_TOKEN: '2', MAX_RESPONSE_BYTES: '4096', MAX_REPORT_ITEMS: '3', MAX_WORKERS_PER_TOKEN: '5', MAX_AWAITS_PER_TOKEN: '3' } },
  limited: { env: { RATE_LIMIT_PER_MINUTE: '4' } },
});
afterAll(() => services.stopAll());

const QUERY = '{"query":"{ __typename }"}';
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('authentication runs on the route, whatever the shape of the request', () => {
  let service: Service;
  let host: string;
  beforeAll(async () => {
    service = await services.get('main');
    host = new URL(service.url).host;
  });

  const enc = encodeURIComponent('{ __typename }');
  /** [label, request line and headers]: each without a token. */
  const variants = (h: string): Array<[string, string, string?]> => [
    ['POST /%67raphql (percent-encoded path)', `POST /%67raphql HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
    ['POST /%67%72%61%70%68%71%6c (all encoded)', `POST /%67%72%61%70%68%71%6c HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
    ['POST /graphql#x (fragment)', `POST /graphql#x HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
    ['POST http://host/graphql (absolute-form target)', `POST http://${h}/graphql HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
    ['POST /graphql?x=1 (query string)', `POST /graphql?x=1 HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
    ['POST /graphql/ (trailing slash)', `POST /graphql/ HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
    ['POST /GRAPHQL (case)', `POST /GRAPHQL HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
    ['POST /GraphQL?x (case and query)', `POST /GraphQL?x HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
    ['POST //graphql (double slash)', `POST //graphql HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
    ['POST /./graphql (dot segment)', `POST /./graphql HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
    ['GET /graphql?query=', `GET /graphql?query=${enc} HTTP/1.1\r\nHost: ${h}\r\napollo-require-preflight: 1`],
    ['GET /graphql?query= asking for HTML', `GET /graphql?query=${enc} HTTP/1.1\r\nHost: ${h}\r\nAccept: text/html`],
    ['GET /graphql#?query= (query behind a fragment)', `GET /graphql#?query=${enc} HTTP/1.1\r\nHost: ${h}\r\napollo-require-preflight: 1`],
    ['GET /%67raphql?query=', `GET /%67raphql?query=${enc} HTTP/1.1\r\nHost: ${h}\r\napollo-require-preflight: 1`],
    ['GET http://host/graphql?query= (absolute-form)', `GET http://${h}/graphql?query=${enc} HTTP/1.1\r\nHost: ${h}\r\napollo-require-preflight: 1`],
    ['GET /graphql?extensions= (persisted query)', `GET /graphql?extensions=${encodeURIComponent('{"persistedQuery":{"version":1,"sha256Hash":"ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38"}}')} HTTP/1.1\r\nHost: ${h}\r\napollo-require-preflight: 1`],
    ['GET /graphql (JSON, no query)', `GET /graphql HTTP/1.1\r\nHost: ${h}\r\nAccept: application/json`],
    ['HEAD /graphql?query=', `HEAD /graphql?query=${enc} HTTP/1.1\r\nHost: ${h}`],
    ['OPTIONS /graphql', `OPTIONS /graphql HTTP/1.1\r\nHost: ${h}\r\nOrigin: http://evil.example\r\nAccess-Control-Request-Method: POST`],
    ['PUT /graphql', `PUT /graphql HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json`, QUERY],
  ];

  it('no variant without a token runs an operation; each one that reaches GraphQL answers 401 UNAUTHENTICATED with a code', async () => {
    const outcomes: Array<{ label: string; status: number; code: string | null; ranOperation: boolean }> = [];
    for (const [label, head, body] of variants(host)) {
      const response = await rawRequest(service, head, body);
      expectNoStackTrace(response.body);
      const isHead = head.startsWith('HEAD');
      const parsed = isHead ? null : JSON.parse(response.body);
      outcomes.push({ label, status: response.status, code: parsed?.errors?.[0]?.extensions?.code ?? null, ranOperation: /__typename|"data"/.test(response.body) });
    }
    for (const outcome of outcomes) {
      expect({ ...outcome, refused: outcome.status >= 400 && outcome.status < 500 }).toMatchObject({ label: outcome.label, ranOperation: false, refused: true });
      if (!outcome.label.startsWith('HEAD')) expect({ label: outcome.label, code: outcome.code }).toEqual({ label: outcome.label, code: expect.any(String) });
    }
    const reachingGraphql = outcomes.filter((o) => !/trailing slash|case|double slash|dot segment|PUT/.test(o.label));
    expect(reachingGraphql.map((o) => [o.label, o.status])).toEqual(reachingGraphql.map((o) => [o.label, 401]));
    expect(reachingGraphql.filter((o) => o.code !== null).every((o) => o.code === 'UNAUTHENTICATED')).toBe(true);
  });

  it('with a valid token the same shapes work, so the check is on the route and not on the spelling', async () => {
    const auth = `Authorization: Bearer ${service.token}`;
    for (const head of [
      `POST /%67raphql HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n${auth}`,
      `POST http://${host}/graphql HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n${auth}`,
    ]) {
      const response = await rawRequest(service, head, QUERY);
      expect({ head, status: response.status, body: JSON.parse(response.body) }).toEqual({ head, status: 200, body: { data: { __typename: 'Query' } } });
    }
    const get = await rawRequest(service, `GET /graphql?query=${enc} HTTP/1.1\r\nHost: ${host}\r\napollo-require-preflight: 1\r\n${auth}`);
    expect(JSON.parse(get.body)).toEqual({ data: { __typename: 'Query' } });
  });

  it('GET /graphql from a browser (Accept: text/html, no query string) still serves the landing page without a token', async () => {
    const response = await fetch(`${service.url}/graphql`, { headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toContain('id="token-form"');
  });

  it('every variant counts against the token\'s rate limit (RATE_LIMIT_PER_MINUTE=4)', async () => {
    const limited = await services.get('limited');
    const [token] = await issueTokens(limited, [{ apps: ['demo'] }]); // issueTokens spends one request of it
    const h = new URL(limited.url).host;
    if (Date.now() % 60_000 > 50_000) {
      const minute = Math.floor(Date.now() / 60_000);
      await waitFor(() => Math.floor(Date.now() / 60_000) !== minute, { timeoutMs: 12_000, intervalMs: 50, description: 'the next minute' });
    }
    const auth = `Authorization: Bearer ${token}`;
    const statuses: number[] = [];
    for (const head of [
      `POST /%67raphql HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json\r\n${auth}`,
      `GET /graphql?query=${enc} HTTP/1.1\r\nHost: ${h}\r\napollo-require-preflight: 1\r\n${auth}`,
      `POST http://${h}/graphql HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json\r\n${auth}`,
      `POST /graphql#x HTTP/1.1\r\nHost: ${h}\r\nContent-Type: application/json\r\n${auth}`,
      `GET /%67raphql?query=${enc} HTTP/1.1\r\nHost: ${h}\r\napollo-require-preflight: 1\r\n${auth}`,
    ]) {
      const response = await rawRequest(limited, head, head.startsWith('POST') ? QUERY : '');
      statuses.push(response.status);
      if (response.status === 429) expect(JSON.parse(response.body).errors[0].extensions.code).toBe('RATE_LIMITED');
    }
    // Whatever minute the token's first request fell in, at most four of the five (plus the one issueTokens spent) pass.
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  });
});

describe('amplification: query complexity and a response budget', () => {
  let service: Service;
  let api: Client;
  beforeAll(async () => {
    service = await services.get('main');
    api = new Client(service, 'demo', 'dev');
  });

  it('a 22 KB query of aliases over big pages is refused before it runs (GRAPHQL_VALIDATION_FAILED, limit complexity)', async () => {
    await api.dispatchWorkflow(unique('Bomb'), { input: JSON.stringify(['z'.repeat(4096)]) });
    const pad = 'p'.repeat(40);
    const aliases: string[] = [];
    for (let i = 0; aliases.join(' ').length < 22_000; i++) {
      aliases.push(`a${i}: workflows(filter: { appId: "demo", environment: "dev", tag: null, name: null }, first: 500, after: null) { nodes { input } } # ${pad}\n`);
    }
    const query = `{ ${aliases.join(' ')} }`;
    expect(query.length).toBeGreaterThanOrEqual(22_000);
    expect(aliases.length * 3).toBeLessThanOrEqual(500); // within the field-count cost: only list sizes give it away
    const response = await post(service, JSON.stringify({ query }));
    expect(response.status).toBe(400);
    const error = expectError(response, 'GRAPHQL_VALIDATION_FAILED');
    expect(error.extensions?.limit).toBe('complexity');
  });

  it('fragments spread under aliases count for every spread', async () => {
    const spreads = Array.from({ length: 150 }, (_, i) => `a${i}: workflows(filter: { appId: "demo", environment: "dev" }, first: 500) { ...N }`).join(' ');
    const response = await post(service, JSON.stringify({ query: `{ ${spreads} } fragment N on WorkflowConnection { nodes { input } }` }));
    expect(expectError(response, 'GRAPHQL_VALIDATION_FAILED').extensions?.limit).toBe('complexity');
  });

  it('an answer over MAX_RESPONSE_BYTES (4096) is replaced by PAYLOAD_TOO_LARGE; a smaller one is answered', async () => {
    const tight = await services.get('tight');
    const client = new Client(tight, 'demo', 'dev');
    const name = unique('Fat');
    await client.dispatchWorkflow(name, { input: JSON.stringify(['f'.repeat(1500)]) });
    const one = `w0: workflows(filter: { appId: "demo", environment: "dev", name: "${name}" }) { nodes { input } }`;
    expect(expectData(await post(tight, JSON.stringify({ query: `{ ${one} }` }))).w0.nodes).toHaveLength(1);
    const many = [0, 1, 2, 3].map((i) => one.replace('w0:', `w${i}:`)).join(' ');
    const response = await post(tight, JSON.stringify({ query: `{ ${many} }` }));
    const error = expectError(response, 'PAYLOAD_TOO_LARGE');
    expect(error.extensions?.limit).toBe('response');
    expect(response.text.length).toBeLessThan(1024);
  });
});

describe('one set of input limits for public and worker inputs', () => {
  let service: Service;
  let api: Client;
  const scope = { appId: 'demo', environment: 'limits' };
  beforeAll(async () => {
    service = await services.get('main');
    api = new Client(service, 'demo', 'limits');
  });

  it('a value nested 5,000 deep is BAD_USER_INPUT on "input" (never a stack overflow), and listing still works', async () => {
    const name = unique('Deep');
    expectError(await api.dispatchWorkflowRaw({ name, input: nested(5_000) }), 'BAD_USER_INPUT', 'input');
    expectError(await api.dispatchWorkflowRaw({ name, input: nested(65) }), 'BAD_USER_INPUT', 'input');
    expect(await api.dispatchWorkflow(name, { input: nested(64) })).toBeTruthy();
    expectError(await api.dispatchTaskRaw({ name, input: nested(5_000) }), 'BAD_USER_INPUT', 'input');
    expect((await api.workflows({ name })).totalCount).toBe(1);
  });

  it('event data nested 5,000 deep or with an array over MAX_JSON_ARRAY_LENGTH is BAD_USER_INPUT on "data"', async () => {
    const id = await api.dispatchWorkflow(unique('Evt'));
    expectError(await api.actRaw('send', { id }, { name: 'E', data: nested(5_000) }), 'BAD_USER_INPUT', 'data');
    expectError(await api.actRaw('send', { id }, { name: 'E', data: JSON.stringify(Array(10_001).fill(0)) }), 'BAD_USER_INPUT', 'data');
    expect((await api.history(id)).some((e) => e.type === 'WorkflowEventReceived')).toBe(false);
  });

  it('a worker\'s task results are bounded per item: a 900 KB result and a 5,000-deep one are rejected, the good one in the same report is recorded', async () => {
    const name = unique('Result');
    const ids = [await api.dispatchTask(name), await api.dispatchTask(name), await api.dispatchTask(name)];
    const claimed: Awaited<ReturnType<typeof poll>> = [];
    await waitFor(
      async () => {
        claimed.push(...(await poll(service, scope, { tasks: [name] }, { waitMs: 1_000 })));
        return claimed.length === 3;
      },
      { timeoutMs: 15_000, description: 'three claimed task attempts' },
    );
    const [big, deep, good] = claimed;
    const response = await gql(service, REPORT_WORK, {
      input: {
        ...scope,
        workerId: 'hostile-test',
        tasks: [
          { ref: big.ref, attemptId: big.attemptId, result: JSON.stringify('b'.repeat(900 * 1024)) },
          { ref: deep.ref, attemptId: deep.attemptId, result: nested(5_000) },
          { ref: good.ref, attemptId: good.attemptId, result: '"ok"' },
        ],
      },
    });
    const result = expectData(response).reportWork;
    expect(result.accepted).toBe(1);
    expect(result.rejected.map((r: { ref: string; code: string }) => [r.ref, r.code])).toEqual([
      [big.ref, 'BAD_USER_INPUT'],
      [deep.ref, 'BAD_USER_INPUT'],
    ]);
    expect(claimed.map((c) => c.taskId).sort()).toEqual([...ids].sort());
    expect((await api.task(good.taskId!))?.state).toBe('COMPLETED');
    expect((await api.task(big.taskId!))?.state).toBe('RUNNING');
    expect((await api.task(deep.taskId!))?.state).toBe('RUNNING');
  });

  it('decision commands are bounded: event data that is not an array, or a malformed step record, is rejected and records nothing', async () => {
    const name = unique('Decider');
    const id = await api.dispatchWorkflow(name);
    let decision: Awaited<ReturnType<typeof poll>>[number] | undefined;
    await waitFor(
      async () => {
        decision = (await poll(service, scope, { workflows: [name] }, { waitMs: 1_000 })).find((i) => i.kind === 'DECISION');
        return decision !== undefined;
      },
      { timeoutMs: 15_000, description: 'a claimed decision' },
    );
    const report = (commands: unknown) =>
      gql(service, REPORT_WORK, { input: { ...scope, workerId: 'hostile-test', decisions: [{ ref: decision!.ref, decisionId: decision!.decisionId, commands: JSON.stringify(commands) }] } });
    const poisoned = expectData(await report([{ type: 'ControlWorkflows', seq: 0, selector: { name }, action: 'send', event: { name: 'e', data: 'not an array' } }])).reportWork;
    expect(poisoned).toMatchObject({ accepted: 0, rejected: [{ ref: decision!.ref, code: 'BAD_USER_INPUT' }] });
    const longName = expectData(await report([{ type: 'ScheduleTask', seq: 0, name: 'n'.repeat(10_000), args: [] }])).reportWork;
    expect(longName.rejected[0]?.code).toBe('BAD_USER_INPUT');
    // An inline step's record: a name, and a result or an error with a message, never both.
    for (const step of [
      { type: 'RecordStep', seq: 0, result: 1 },
      { type: 'RecordStep', seq: 0, name: 's', result: 1, error: { message: 'both' } },
      { type: 'RecordStep', seq: 0, name: 's', error: 'not an object' },
    ]) {
      const refused = expectData(await report([step])).reportWork;
      expect(refused.rejected).toEqual([expect.objectContaining({ ref: decision!.ref, code: 'BAD_USER_INPUT', message: expect.stringContaining('RecordStep') })]);
    }
    const types = (await api.history(id)).map((e) => e.type);
    expect(types).not.toContain('ControlRequested');
    expect(types).not.toContain('TaskScheduled');
    expect(types).not.toContain('StepCompleted');
    expect(types).not.toContain('StepFailed');
    expect(await api.state(id)).toBe('RUNNING');
  });

  it('a report or heartbeat with more items than MAX_REPORT_ITEMS (3) is BAD_USER_INPUT naming the list', async () => {
    const tight = await services.get('tight');
    const items = Array.from({ length: 4 }, (_, i) => ({ ref: `t:${i}`, attemptId: `a${i}`, result: 'null' }));
    expectError(await gql(tight, REPORT_WORK, { input: { ...scope, workerId: 'w', tasks: items } }), 'BAD_USER_INPUT', 'tasks');
    expectError(await gql(tight, HEARTBEAT, { input: { ...scope, workerId: 'w', attempts: items.map(({ ref, attemptId }) => ({ ref, attemptId })) } }), 'BAD_USER_INPUT', 'attempts');
    const three = expectData(await gql(tight, REPORT_WORK, { input: { ...scope, workerId: 'w', tasks: items.slice(0, 3) } })).reportWork;
    expect(three.rejected).toHaveLength(3); // within the limit: judged (and refused) item by item
  });
});

describe('long polls per token (MAX_POLLS_PER_TOKEN=2)', () => {
  it('a third concurrent poll of one token is RATE_LIMITED; other tokens are not affected; the slots free up', async () => {
    const tight = await services.get('tight');
    const [other] = await issueTokens(tight, [{ apps: ['demo'] }]);
    const scope = { appId: 'demo', environment: 'polls' };
    const idle = (waitMs: number, token = tight.token, signal?: AbortSignal) =>
      fetch(`${tight.url}/graphql`, {
        method: 'POST',
        signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: POLL_WORK, variables: { input: { ...scope, workerId: 'idle', workflows: ['NobodyDispatchesThis'], tasks: [], waitMs } } }),
      });
    const abort = new AbortController();
    const parked = [idle(30_000, tight.token, abort.signal), idle(30_000, tight.token, abort.signal)].map((p) => p.catch(() => null));
    await waitFor(
      async () => {
        const body = await (await idle(0)).json();
        return body.errors?.[0]?.extensions?.code === 'RATE_LIMITED';
      },
      { timeoutMs: 10_000, intervalMs: 25, description: 'the third poll of the token to be refused' },
    );
    const otherBody = await (await idle(0, other)).json();
    expect(otherBody).toEqual({ data: { pollWork: [] } });
    abort.abort();
    await Promise.all(parked);
    await waitFor(async () => ((await (await idle(0)).json()) as any).data?.pollWork !== undefined, {
      timeoutMs: 10_000,
      intervalMs: 25,
      description: 'the slots of the aborted polls to be released',
    });
  });
});

describe('awaitWorkflow polls per token (MAX_AWAITS_PER_TOKEN=3, every alias counts)', () => {
  it('a fourth waiting awaitWorkflow of one token is RATE_LIMITED; another token still waits; ended or unknown workflows need no slot; the slots free up', async () => {
    const tight = await services.get('tight');
    const [reader] = await issueTokens(tight, [{ apps: ['demo'] }]);
    const scope = { appId: 'demo', environment: unique('awaits') };
    const dispatch = async () =>
      expectData(await gql(tight, `mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }`, { input: { ...scope, name: 'NobodyRunsThis', input: '[]' } })).dispatchWorkflow.id as string;
    const running = await dispatch();
    const awaits = (id: string, count: number, waitMs: number) =>
      `{ ${Array.from({ length: count }, (_, i) => `a${i}: awaitWorkflow(appId: "demo", environment: "${scope.environment}", id: "${id}", waitMs: ${waitMs}) { state }`).join(' ')} }`;
    // Every alias counts: one request of four aliases waits with three and is refused the fourth.
    // (Another token's, so that nothing else of its own can hold a slot meanwhile.)
    const four = await gql(tight, awaits(running, 4, 300), undefined, reader);
    expect(four.body.errors?.map((error) => error.extensions?.code)).toEqual(['RATE_LIMITED']);
    expect(Object.values(four.body.data ?? {}).filter((answer) => answer !== null)).toEqual([{ state: 'RUNNING' }, { state: 'RUNNING' }, { state: 'RUNNING' }]);
    // Three waiting polls, one request each. A probe below holds a slot for its 100 ms, so one of
    // them may arrive while it does and be refused at once: that one is sent again.
    type Held = { settled: boolean; answer: Promise<Awaited<ReturnType<typeof gql>>> };
    const hold = (): Held => {
      const held: Held = { settled: false, answer: gql(tight, awaits(running, 1, 30_000)) };
      void held.answer.finally(() => (held.settled = true)).catch(() => undefined);
      return held;
    };
    const held = [hold(), hold(), hold()];
    const refused = await waitFor(
      async () => {
        for (let i = 0; i < held.length; i++) {
          if (!held[i].settled) continue;
          expect((await held[i].answer).body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
          held[i] = hold();
        }
        const response = await gql(tight, awaits(running, 1, 100));
        return response.body.errors?.[0]?.extensions?.code === 'RATE_LIMITED' ? response : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 25, description: 'the fourth waiting awaitWorkflow of the token to be refused' },
    );
    expect(refused.body.errors![0].message).toMatch(/MAX_AWAITS_PER_TOKEN/);
    // Another token is not affected: it waits, and answers the workflow as it is when its wait ends.
    expect(expectData(await gql(tight, awaits(running, 1, 200), undefined, reader))).toEqual({ a0: { state: 'RUNNING' } });
    // No wait, no slot: an unknown workflow, or waitMs 0, is answered at once even now.
    expect(expectData(await gql(tight, awaits(randomUUID(), 1, 5_000)))).toEqual({ a0: null });
    expect(expectData(await gql(tight, awaits(running, 1, 0)))).toEqual({ a0: { state: 'RUNNING' } });
    // Its end answers the three that waited, and frees their slots.
    expectData(await gql(tight, `mutation($input: TerminateWorkflowsInput!) { terminateWorkflows(input: $input) { status } }`, { input: { ...scope, selector: { id: running } } }));
    for (const { answer } of held) expect(expectData(await answer)).toEqual({ a0: { state: 'TERMINATED' } });
    expect(expectData(await gql(tight, awaits(await dispatch(), 3, 100)))).toEqual({ a0: { state: 'RUNNING' }, a1: { state: 'RUNNING' }, a2: { state: 'RUNNING' } });
  });
});

describe('the workers an instance remembers, per token (MAX_WORKERS_PER_TOKEN)', () => {
  const WORKERS = `query($appId: String!, $environment: String!) { workers(appId: $appId, environment: $environment) { workers { workerId } } }`;
  const pollAs = (service: Service, token: string, scope: { appId: string; environment: string }, workerId: string, workflows: string[] = ['Sighted']) =>
    gql(service, POLL_WORK, { input: { ...scope, workerId, workflows, tasks: [], waitMs: 0 } }, token).then(expectData);
  const listed = async (service: Service, scope: { appId: string; environment: string }): Promise<string[]> =>
    expectData(await gql(service, WORKERS, scope)).workers.workers.map((w: { workerId: string }) => w.workerId);

  it('a token polling under ever new worker ids is remembered for its 5 most recent; another token\'s worker stays listed', async () => {
    const tight = await services.get('tight');
    const [steady] = await issueTokens(tight, [{ apps: ['demo'] }]);
    const scope = { appId: 'demo', environment: unique('sightings') };
    await pollAs(tight, steady, scope, 'steady-worker');
    for (let i = 0; i < 8; i++) await pollAs(tight, tight.token, scope, `flood-${i}`);
    const workers = await listed(tight, scope);
    expect(workers.filter((id) => id.startsWith('flood-')).sort()).toEqual(['flood-3', 'flood-4', 'flood-5', 'flood-6', 'flood-7']);
    expect(workers).toContain('steady-worker');
    // A forgotten worker comes back at its next poll.
    await pollAs(tight, tight.token, scope, 'flood-0');
    expect(await listed(tight, scope)).toContain('flood-0');
  });

  it('the names a token\'s workers serve are bounded too: 20 workers naming 2,000 names of 256 characters each are not all kept', async () => {
    const main = await services.get('main');
    const scope = { appId: 'demo', environment: unique('sightings') };
    const names = (i: number) => Array.from({ length: 1000 }, (_, n) => `W${i}-${n}-`.padEnd(256, 'x'));
    for (let i = 0; i < 20; i++) {
      const response = await gql(main, POLL_WORK, { input: { ...scope, workerId: `big-${i}`, workflows: names(i), tasks: names(i).map((name) => ({ name })), waitMs: 0 } });
      expectData(response);
    }
    const workers = await listed(main, scope);
    // 8 MiB of names per token: about 16 of these workers, the most recent ones.
    expect(workers.length).toBeGreaterThan(10);
    expect(workers.length).toBeLessThan(20);
    expect(workers).toContain('big-19');
    expect(workers).not.toContain('big-0');
  });
});

describe('the HTTP layer\'s own refusals carry a code; a subscription is refused with one', () => {
  let service: Service;
  let host: string;
  beforeAll(async () => {
    service = await services.get('main');
    host = new URL(service.url).host;
  });

  it('subscription { ... } → GRAPHQL_VALIDATION_FAILED, no INTERNAL_SERVER_ERROR, no stack logged', async () => {
    const before = service.output().length;
    const response = await post(service, JSON.stringify({ query: 'subscription { workflows(filter: { appId: "demo", environment: "dev" }) { totalCount } }' }));
    expect(response.status).toBe(400);
    expect(expectError(response, 'GRAPHQL_VALIDATION_FAILED').message).toMatch(/subscription/i);
    expect(service.output().slice(before)).not.toMatch(/ERROR|\n\s+at /);
  });

  it('a control byte in Authorization → 400 with extensions.code', async () => {
    const response = await rawRequest(service, `POST /graphql HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nAuthorization: Bearer a\x01b`, QUERY);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body).errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('a 20 KB header → 431 with extensions.code', async () => {
    const response = await rawRequest(service, `POST /graphql HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nX-Big: ${'a'.repeat(20_000)}`, QUERY);
    expect(response.status).toBe(431);
    expect(JSON.parse(response.body).errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('a URL that is not valid percent-encoding → 400 with extensions.code', async () => {
    const response = await rawRequest(service, `GET /%zz HTTP/1.1\r\nHost: ${host}`);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body).errors[0].extensions.code).toBe('BAD_REQUEST');
  });
});

describe('the store and the bootstrap token', () => {
  it('the SQLite file and its -wal/-shm files are owner-only (0600)', async () => {
    const service = await services.get('main');
    const file = service.storeUrl.slice('sqlite:'.length);
    for (const path of [file, `${file}-wal`, `${file}-shm`]) {
      expect({ path, mode: (statSync(path).mode & 0o777).toString(8) }).toEqual({ path, mode: '600' });
    }
  });

  it('a read-model file of its own (READ_MODEL_PATH) is owner-only too, its directory 0700; one left 0644 is tightened at start', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'baton-rm-')), 'read-models');
    const file = join(dir, 'read-models.db');
    const modes = () => [dir, file, `${file}-wal`, `${file}-shm`].map((path) => ({ path, mode: (statSync(path).mode & 0o777).toString(8) }));
    const owner = (dirMode: string) => [dir, file, `${file}-wal`, `${file}-shm`].map((path) => ({ path, mode: path === dir ? dirMode : '600' }));
    const first = await startService({ env: { READ_MODEL_PATH: file } });
    try {
      // Something in it: a dispatched workflow's input is what a local reader must not see.
      expectData(await gql(first, `mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }`, { input: { appId: 'demo', environment: 'dev', name: 'Payroll', input: '["secret"]' } }));
      expect(modes()).toEqual(owner('700'));
    } finally {
      await first.stop();
    }
    for (const path of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(path)) chmodSync(path, 0o644);
    const second = await startService({ storeUrl: first.storeUrl, env: { READ_MODEL_PATH: file } });
    try {
      expect(modes()).toEqual(owner('700'));
    } finally {
      await second.stop();
    }
  });

  it('after the operator revoked every token, a restart does not create a new bootstrap token', async () => {
    const first = await startService();
    try {
      expect(first.token).toMatch(/^baton_/);
    } finally {
      await first.stop();
    }
    await revokeTokenViaCli(first.storeUrl, tokenIdOf(first.token));
    const second = await startService({ storeUrl: first.storeUrl });
    try {
      expect(second.token).toBe('');
      expect(second.output()).not.toContain('BATON_BOOTSTRAP_TOKEN=');
      expect((await post(second, QUERY, first.token)).status).toBe(401);
    } finally {
      await second.stop();
    }
  });
});
