/**
 * Fuzzing the whole API on one real service process: a few thousand hostile requests, generated
 * by fast-check from a fixed seed (set FUZZ_SEED to explore others, FUZZ_RUNS for more), across
 * every mutation, query and worker operation, with hostile values in every argument (wrong
 * types, huge and deep JSON, control characters, other apps, other tokens). Every answer must be
 * below 500, carry no stack trace or file path, and give every error an `extensions.code`; every
 * workflow acknowledged before the run must still be listed, with the same history, afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ROOT, Service } from '../support/service.js';
import { Client, expectNoStackTrace, issueTokens, startServices, unique } from './api-helpers.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_123);
const RUNS = Number(process.env.FUZZ_RUNS ?? 2_000);
const CONCURRENCY = 8;

const services = startServices({ main: { env: { RATE_LIMIT_PER_MINUTE: '0' } } });
afterAll(() => services.stopAll());

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

// Hostile scalars: what a careless or malicious client puts in any field.
const nastyString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '\u0000',
      '\u0001\u0002',
      'a\nb',
      '\uD800',
      '__proto__',
      'constructor',
      '../../../etc/passwd',
      "'; DROP TABLE events; --",
      '<script>alert(1)</script>',
      '%00%2e%2e',
      'x'.repeat(257),
      'y'.repeat(70_000),
      'Onboarding',
      'Onboarding_v2',
      'Onboarding_v99999999999999999999',
      'demo',
      'other',
      'fuzz',
      '00000000-0000-7000-8000-000000000000',
      'w:00000000-0000-7000-8000-000000000000:0',
      't:00000000-0000-7000-8000-000000000000',
    ),
  },
);
const nastyJson = fc.oneof(
  { weight: 3, arbitrary: fc.json({ maxDepth: 4 }) },
  { weight: 3, arbitrary: fc.array(fc.jsonValue({ maxDepth: 3 }), { maxLength: 5 }).map((a) => JSON.stringify(a)) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '[]',
      '{}',
      'null',
      '"s"',
      '[',
      ']',
      '[1,]',
      'NaN',
      nested(65),
      nested(5_000),
      JSON.stringify(Array(10_001).fill(0)),
      JSON.stringify(['z'.repeat(300_000)]),
      '{"__proto__":{"polluted":true}}',
      '[{"constructor":{"prototype":{"x":1}}}]',
    ),
  },
  { weight: 1, arbitrary: nastyString },
);
const nastyInt = fc.oneof(fc.integer({ min: -5, max: 600 }), fc.constantFrom(-1, 0, 2_147_483_647, 2_147_483_648, -2_147_483_649, 1e20, 1.5));
const anything = fc.oneof(nastyString, nastyInt, fc.boolean(), fc.constant(null), fc.constant({}), fc.constant([]), fc.constant({ nested: { deep: [1] } }));
/** Mostly well-typed, sometimes anything at all. */
const str = fc.oneof({ weight: 9, arbitrary: nastyString }, { weight: 1, arbitrary: anything });
const json = fc.oneof({ weight: 9, arbitrary: nastyJson }, { weight: 1, arbitrary: anything });
const int = fc.oneof({ weight: 9, arbitrary: nastyInt }, { weight: 1, arbitrary: anything });
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 3 });

/** The places requests act in: the fuzz environment, other apps, and the environment of the acknowledged baseline (read-only below). */
const appId = fc.oneof({ weight: 6, arbitrary: fc.constant('demo') }, { weight: 2, arbitrary: fc.constant('other') }, { weight: 2, arbitrary: str });
const environment = fc.oneof({ weight: 6, arbitrary: fc.constant('fuzz') }, { weight: 1, arbitrary: fc.constant('fuzz2') }, { weight: 2, arbitrary: str });

interface FuzzRequest {
  label: string;
  token: 'demo' | 'other' | 'none' | 'garbage';
  body: string;
}

const MUTATIONS: Record<string, [string, string]> = {
  dispatchWorkflow: ['DispatchWorkflowInput', '{ id }'],
  dispatchTask: ['DispatchTaskInput', '{ id }'],
  pauseWorkflows: ['PauseWorkflowsInput', '{ status matched changed workflowIds }'],
  resumeWorkflows: ['ResumeWorkflowsInput', '{ status matched changed workflowIds }'],
  terminateWorkflows: ['TerminateWorkflowsInput', '{ status matched changed workflowIds }'],
  sendEventToWorkflows: ['SendEventToWorkflowsInput', '{ status matched changed workflowIds }'],
  scheduleWorkflow: ['ScheduleWorkflowInput', '{ id nextFireAt }'],
  scheduleTask: ['ScheduleTaskInput', '{ id nextFireAt }'],
  pauseSchedule: ['PauseScheduleInput', '{ id state }'],
  resumeSchedule: ['ResumeScheduleInput', '{ id state }'],
  deleteSchedule: ['DeleteScheduleInput', '{ id state }'],
  triggerSchedule: ['TriggerScheduleInput', '{ id }'],
  pollWork: ['PollWorkInput', '{ kind ref workflowId taskId name decisionId attemptId input history }'],
  reportWork: ['ReportWorkInput', '{ accepted rejected { ref code message } }'],
  heartbeat: ['HeartbeatInput', '{ ref cancel reason }'],
};

function requests(ids: fc.Arbitrary<string>): fc.Arbitrary<FuzzRequest> {
  const id = fc.oneof({ weight: 3, arbitrary: ids }, { weight: 2, arbitrary: str });
  const selector = fc.oneof(
    fc.record({ id }),
    fc.record({ name: str, tag: maybe(str) }),
    fc.record({ id: maybe(id), name: maybe(str), tag: maybe(str) }),
    anything,
  );
  const retry = fc.record({ maxAttempts: int, initialDelayMs: int, backoffFactor: int, maxDelayMs: int });
  const command = fc.oneof(
    fc.record({ type: fc.constantFrom('ScheduleTask', 'DispatchTask', 'StartChildWorkflow'), seq: int, name: str, args: fc.oneof(fc.array(anything, { maxLength: 3 }), anything), tag: maybe(str) }),
    fc.record({ type: fc.constant('StartTimer'), seq: int, fireAt: fc.oneof(fc.constant('2030-01-01T00:00:00Z'), str) }),
    fc.record({ type: fc.constant('ControlWorkflows'), seq: int, selector, action: fc.oneof(fc.constantFrom('send', 'pause', 'resume', 'terminate'), str), event: maybe(fc.record({ name: str, data: anything })) }),
    fc.record({ type: fc.constantFrom('CompleteWorkflow', 'FailWorkflow', 'CancelTimer', 'Nope'), seq: maybe(int), result: maybe(anything), error: maybe(anything) }),
    anything,
  );
  const commands = fc.oneof({ weight: 4, arbitrary: fc.array(command, { maxLength: 4 }).map((c) => JSON.stringify(c)) }, { weight: 2, arbitrary: json });
  const ref = fc.oneof(
    ids.map((i) => `w:${i}:0`),
    ids.map((i) => `t:${i}`),
    ids.map((i) => `d:${i}`),
    str,
  );
  const cron = fc.oneof(fc.constantFrom('*/5 * * * *', '* * * * * *', '@hourly', '0 0 31 2 *', '61 * * * *', '', '* * * * * * *'), str);
  const inputs: Record<string, fc.Arbitrary<unknown>> = {
    dispatchWorkflow: fc.record({ appId, environment, name: str, input: json, tag: maybe(str) }),
    dispatchTask: fc.record({ appId, environment, name: str, input: json, tag: maybe(str) }),
    pauseWorkflows: fc.record({ appId, environment, selector }),
    resumeWorkflows: fc.record({ appId, environment, selector }),
    terminateWorkflows: fc.record({ appId, environment, selector, reason: maybe(str) }),
    sendEventToWorkflows: fc.record({ appId, environment, selector, name: str, data: json }),
    scheduleWorkflow: fc.record({ appId, environment, name: str, input: json, cron, tag: maybe(str), timezone: maybe(str), catchUpWindowMs: maybe(int), overlapPolicy: maybe(fc.oneof(fc.constantFrom('SKIP', 'BUFFER_ONE', 'ALLOW_ALL'), str)) }),
    scheduleTask: fc.record({ appId, environment, name: str, input: json, cron, timezone: maybe(str), catchUpWindowMs: maybe(int) }),
    pauseSchedule: fc.record({ appId, environment, id }),
    resumeSchedule: fc.record({ appId, environment, id }),
    deleteSchedule: fc.record({ appId, environment, id }),
    triggerSchedule: fc.record({ appId, environment, id }),
    pollWork: fc.record({
      appId,
      environment,
      workerId: str,
      workflows: fc.oneof(fc.array(str, { maxLength: 3 }), anything),
      tasks: fc.oneof(fc.array(fc.record({ name: str, retry: maybe(retry), timeoutMs: maybe(int) }), { maxLength: 2 }), anything),
      maxItems: maybe(int),
      // A valid long wait would park the request: waits here are 0, tiny, or invalid.
      waitMs: fc.oneof(fc.constantFrom(0, 1, 5, -1, 60_001, 2_147_483_648), anything),
    }),
    reportWork: fc.record({
      appId,
      environment,
      workerId: str,
      decisions: maybe(fc.array(fc.record({ ref, decisionId: id, commands: maybe(commands), failureCode: maybe(str), failureMessage: maybe(str), historyPosition: maybe(int) }), { maxLength: 3 })),
      tasks: maybe(fc.array(fc.record({ ref, attemptId: id, result: maybe(json), error: maybe(fc.record({ message: str, name: maybe(str), nonRetryable: maybe(fc.boolean()), retryAfterMs: maybe(int) })) }), { maxLength: 3 })),
    }),
    heartbeat: fc.record({ appId, environment, workerId: str, attempts: fc.oneof(fc.array(fc.record({ ref, attemptId: id }), { maxLength: 3 }), anything) }),
  };
  const mutation = fc.constantFrom(...Object.keys(MUTATIONS)).chain((name) =>
    inputs[name].map((input) => {
      const [type, selection] = MUTATIONS[name];
      return { label: name, body: JSON.stringify({ query: `mutation($input: ${type}!) { ${name}(input: $input) ${selection} }`, variables: { input } }) };
    }),
  );
  const byId = (field: string, selection: string) =>
    fc.record({ appId, environment, id }).map((v) => ({ label: field, body: JSON.stringify({ query: `query($appId: String!, $environment: String!, $id: ID!) { ${field}(appId: $appId, environment: $environment, id: $id) ${selection} }`, variables: v }) }));
  const history = (field: string) =>
    fc.record({ appId, environment, id, first: maybe(int), fromRevision: maybe(int) }).map((v) => ({
      label: field,
      body: JSON.stringify({ query: `query($appId: String!, $environment: String!, $id: ID!, $first: Int, $fromRevision: Int) { ${field}(appId: $appId, environment: $environment, id: $id, first: $first, fromRevision: $fromRevision) { revision type data } }`, variables: v }),
    }));
  const list = (field: string, filterType: string, selection: string) =>
    fc.record({ filter: fc.oneof(fc.record({ appId, environment, name: maybe(str), tag: maybe(str) }), anything), first: maybe(int), after: maybe(str) }).map((v) => ({
      label: field,
      body: JSON.stringify({ query: `query($filter: ${filterType}!, $first: Int, $after: String) { ${field}(filter: $filter, first: $first, after: $after) { totalCount nodes ${selection} } }`, variables: v }),
    }));
  const query = fc.oneof(
    byId('workflow', '{ id name state input output error tag }'),
    byId('task', '{ id name state input }'),
    byId('schedule', '{ id name state cron }'),
    history('workflowHistory'),
    history('scheduleHistory'),
    list('workflows', 'WorkflowFilterInput', '{ id name state input }'),
    list('tasks', 'TaskFilterInput', '{ id name state }'),
    list('schedules', 'ScheduleFilterInput', '{ id name state }'),
  );
  // Raw bodies: not GraphQL, or GraphQL that is malformed, oversized or in the wrong shape.
  const raw = fc.oneof(
    fc.string({ maxLength: 200 }).map((s) => ({ label: 'raw text', body: s })),
    fc.jsonValue({ maxDepth: 3 }).map((v) => ({ label: 'raw json', body: JSON.stringify(v) })),
    fc.record({ query: str, variables: maybe(anything), operationName: maybe(str) }).map((v) => ({ label: 'raw query', body: JSON.stringify(v) })),
    fc.constantFrom(
      { label: 'subscription', body: JSON.stringify({ query: 'subscription { workflows(filter: { appId: "demo", environment: "fuzz" }) { totalCount } }' }) },
      { label: 'batch', body: JSON.stringify([{ query: '{ __typename }' }, { query: '{ __typename }' }]) },
      { label: 'deep body', body: `{"query":"{ __typename }","variables":${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}}` },
      { label: 'introspection', body: JSON.stringify({ query: '{ __schema { types { name fields { name } } } }' }) },
      { label: 'deep selection', body: JSON.stringify({ query: `{ __schema { types { ${'fields { type { '.repeat(8)}name${' } }'.repeat(8)} } } }` }) },
      { label: 'alias bomb', body: JSON.stringify({ query: `{ ${Array.from({ length: 160 }, (_, i) => `a${i}: workflows(filter: { appId: "demo", environment: "fuzz" }, first: 500) { nodes { input } }`).join(' ')} }` }) },
      { label: 'unknown operation name', body: JSON.stringify({ query: 'query A { __typename }', operationName: 'B' }) },
      { label: 'two anonymous operations', body: JSON.stringify({ query: '{ __typename } { __typename }' }) },
    ),
  );
  const token = fc.oneof({ weight: 8, arbitrary: fc.constant('demo' as const) }, { weight: 2, arbitrary: fc.constant('other' as const) }, { weight: 1, arbitrary: fc.constantFrom('none' as const, 'garbage' as const) });
  return fc
    .record({ request: fc.oneof({ weight: 6, arbitrary: mutation }, { weight: 3, arbitrary: query }, { weight: 1, arbitrary: raw }), token })
    .map(({ request, token }) => ({ ...request, token }));
}

describe(`fuzzing every operation with hostile input (${RUNS} requests, seed ${SEED})`, () => {
  let service: Service;
  let baseline: Client;
  let before: unknown;
  let tokens: Record<FuzzRequest['token'], string | null>;
  const acknowledged: string[] = [];

  beforeAll(async () => {
    service = await services.get('main');
    const [other] = await issueTokens(service, [{ apps: ['other'] }]);
    tokens = { demo: service.token, other, none: null, garbage: 'baton_00000000000000000000000000000000_nope' };
    // Acknowledged work, in an environment the fuzzer only reads and names by id.
    baseline = new Client(service, 'demo', 'baseline');
    for (let i = 0; i < 5; i++) acknowledged.push(await baseline.dispatchWorkflow(unique('Kept'), { input: JSON.stringify([{ i, note: 'must survive' }]), tag: `t${i}` }));
    acknowledged.push(await baseline.dispatchTask(unique('KeptTask'), '[1]'));
    before = await baseline.snapshot();
  });

  it('answers every request below 500, with no stack trace or path, and a code on every error; acknowledged work is intact', async () => {
    const ids = fc.constantFrom(...acknowledged);
    const sample = fc.sample(requests(ids), { numRuns: RUNS, seed: SEED });
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const codes = new Map<string, number>();
    let next = 0;
    const started = Date.now();
    const worker = async () => {
      while (next < sample.length) {
        const request = sample[next++];
        const token = tokens[request.token];
        const response = await fetch(`${service.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
          body: request.body,
        });
        const text = await response.text();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const problem = judge(response.status, text);
        if (problem) failures.push(`${problem} — ${request.label} as ${request.token}: ${request.body.slice(0, 300)} → ${response.status} ${text.slice(0, 300)}`);
        for (const code of errorCodes(text)) codes.set(code, (codes.get(code) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const elapsed = Date.now() - started;
    process.stdout.write(`fuzz: ${sample.length} requests in ${elapsed} ms; statuses ${JSON.stringify(Object.fromEntries(statuses))}; codes ${JSON.stringify(Object.fromEntries(codes))}\n`);
    expect(failures.slice(0, 10)).toEqual([]);
    expect(service.output()).not.toMatch(/RangeError|Maximum call stack/);

    // Everything acknowledged before the run is still listed, unchanged, with the same history.
    expect(await baseline.snapshot()).toEqual(before);
    const listed = await baseline.workflows({}, { first: 500 });
    for (const id of acknowledged.slice(0, 5)) expect(listed.nodes.map((w) => w.id)).toContain(id);
    // And the service still works.
    expect(await new Client(service, 'demo', 'fuzz').dispatchWorkflow(unique('AfterFuzz'))).toBeTruthy();
  });
});

/** What is wrong with an answer, if anything. */
function judge(status: number, text: string): string | null {
  if (status >= 500) return `status ${status}`;
  try {
    expectNoStackTrace(text);
  } catch {
    return 'stack trace or path in the body';
  }
  // Bodies echo the fuzzed values, so only the service's own paths count.
  if (text.includes(ROOT) || /dist\/src\/|node_modules\//.test(text)) return 'file path in the body';
  let body: { data?: unknown; errors?: Array<{ extensions?: { code?: unknown } }> };
  try {
    body = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (status !== 200 && !body.errors?.length) return 'an error status without errors';
  for (const error of body.errors ?? []) {
    if (typeof error.extensions?.code !== 'string') return 'an error without extensions.code';
    if (error.extensions.code === 'INTERNAL_SERVER_ERROR') return 'INTERNAL_SERVER_ERROR';
  }
  return null;
}

function errorCodes(text: string): string[] {
  try {
    return (JSON.parse(text).errors ?? []).map((e: { extensions?: { code?: string } }) => e.extensions?.code ?? 'none');
  } catch {
    return [];
  }
}
