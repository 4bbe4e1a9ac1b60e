/**
 * Helpers shared by the GraphQL API integration suites (`test/api/*.int-spec.ts`). Every
 * response that passes through `post` is checked for leaked stack traces.
 */
import { expect } from '@jest/globals';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, Service, createTokenViaCli, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const run = promisify(execFile);

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A name nobody else in the suite uses, so tests sharing one service do not see each other. */
export const unique = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

/** A well-formed id that names nothing (UUID v7 shape, random bits). */
export const randomId = (): string => {
  const hex = randomUUID().replaceAll('-', '');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
};

export interface GqlError {
  message: string;
  extensions?: Record<string, any>;
  path?: string[];
}

export interface Response<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: { data?: T | null; errors?: GqlError[] };
}

const STACK_PATTERNS = [/ {4}at /, /\.ts:\d/, /\.js:\d/, /\.ts:/, /\.js:/, /node_modules/];

/** No response body may carry a stack trace or a source location. */
export function expectNoStackTrace(text: string): void {
  for (const pattern of STACK_PATTERNS) {
    if (pattern.test(text)) throw new Error(`response leaks internals (${pattern}):\n${text.slice(0, 2000)}`);
  }
}

/** POSTs a raw body to /graphql, exactly as given. */
export async function post(service: Service, body: string, token: string | null = service.token, headers: Record<string, string> = {}): Promise<Response> {
  const response = await fetch(`${service.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body,
  });
  const text = await response.text();
  expectNoStackTrace(text);
  let parsed: Response['body'];
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`response ${response.status} is not JSON: ${text.slice(0, 500)}`);
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

export const gql = <T = any>(service: Service, query: string, variables?: Record<string, unknown>, token: string | null = service.token): Promise<Response<T>> =>
  post(service, JSON.stringify({ query, variables }), token);

/** Asserts one error with `code` (and `field`, when given), and no data besides nulls. */
export function expectError(response: Response, code: string, field?: string | RegExp): GqlError {
  const context = `status ${response.status}: ${response.text.slice(0, 600)}`;
  expect({ context, errors: response.body.errors?.length ?? 0 }).toEqual({ context, errors: 1 });
  const error = response.body.errors![0];
  expect({ context, code: error.extensions?.code }).toEqual({ context, code });
  if (field instanceof RegExp) expect(error.extensions?.field).toMatch(field);
  else if (field !== undefined) expect({ context, field: error.extensions?.field }).toEqual({ context, field });
  // A failed nullable query field is `{ field: null }`; a failed mutation nulls `data` itself.
  const data = response.body.data ?? null;
  if (data !== null) expect(Object.values(data).every((v) => v === null)).toBe(true);
  return error;
}

/** Asserts no errors and returns `data`. */
export function expectData<T = any>(response: Response<T>): T {
  if (response.body.errors?.length || response.status !== 200) {
    throw new Error(`expected data, got status ${response.status}: ${response.text.slice(0, 1000)}`);
  }
  return response.body.data as T;
}

export type Action = 'pause' | 'resume' | 'terminate' | 'send';

export const SELECTOR_RESULT = '{ status matched changed workflowIds }';

export const MUTATIONS: Record<Action, string> = {
  pause: `mutation($input: PauseWorkflowsInput!) { pauseWorkflows(input: $input) ${SELECTOR_RESULT} }`,
  resume: `mutation($input: ResumeWorkflowsInput!) { resumeWorkflows(input: $input) ${SELECTOR_RESULT} }`,
  terminate: `mutation($input: TerminateWorkflowsInput!) { terminateWorkflows(input: $input) ${SELECTOR_RESULT} }`,
  send: `mutation($input: SendEventToWorkflowsInput!) { sendEventToWorkflows(input: $input) ${SELECTOR_RESULT} }`,
};
const FIELD: Record<Action, string> = { pause: 'pauseWorkflows', resume: 'resumeWorkflows', terminate: 'terminateWorkflows', send: 'sendEventToWorkflows' };

export const DISPATCH_WORKFLOW = 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }';
export const DISPATCH_TASK = 'mutation($input: DispatchTaskInput!) { dispatchTask(input: $input) { id } }';

const WORKFLOW_FIELDS = 'id appId environment name tag state input output error version parentId scheduleId createdAt updatedAt';

export interface SelectorResult {
  status: 'OK' | 'NO_MATCH';
  matched: number;
  changed: number;
  workflowIds: string[];
}

export interface WorkflowRow {
  id: string;
  appId: string;
  environment: string;
  name: string;
  tag: string | null;
  state: string;
  input: string;
  createdAt: string;
  updatedAt: string;
  [key: string]: unknown;
}

export interface HistoryRow {
  revision: number;
  type: string;
  data: string;
  metadata: string;
}

/** The API as one token in one app and environment sees it. */
export class Client {
  constructor(
    readonly service: Service,
    readonly appId = 'demo',
    readonly environment = 'dev',
    readonly token: string = service.token,
  ) {}

  as(token: string, appId = this.appId, environment = this.environment): Client {
    return new Client(this.service, appId, environment, token);
  }

  in(appId: string, environment = this.environment): Client {
    return new Client(this.service, appId, environment, this.token);
  }

  gql<T = any>(query: string, variables?: Record<string, unknown>): Promise<Response<T>> {
    return gql<T>(this.service, query, variables, this.token);
  }

  dispatchWorkflowRaw(fields: Record<string, unknown>): Promise<Response> {
    return this.gql(DISPATCH_WORKFLOW, { input: { appId: this.appId, environment: this.environment, input: '[]', ...fields } });
  }

  async dispatchWorkflow(name: string, options: { tag?: string; input?: string } = {}): Promise<string> {
    const data = expectData(await this.dispatchWorkflowRaw({ name, input: options.input ?? '[]', ...(options.tag !== undefined ? { tag: options.tag } : {}) }));
    expect(data.dispatchWorkflow.id).toMatch(UUID);
    return data.dispatchWorkflow.id;
  }

  dispatchTaskRaw(fields: Record<string, unknown>): Promise<Response> {
    return this.gql(DISPATCH_TASK, { input: { appId: this.appId, environment: this.environment, input: '[]', ...fields } });
  }

  async dispatchTask(name: string, input = '[]'): Promise<string> {
    const data = expectData(await this.dispatchTaskRaw({ name, input }));
    expect(data.dispatchTask.id).toMatch(UUID);
    return data.dispatchTask.id;
  }

  actRaw(action: Action, selector: unknown, extra: Record<string, unknown> = {}): Promise<Response> {
    const event = action === 'send' ? { name: 'Ping', data: '[]' } : {};
    return this.gql(MUTATIONS[action], { input: { appId: this.appId, environment: this.environment, selector, ...event, ...extra } });
  }

  async act(action: Action, selector: unknown, extra: Record<string, unknown> = {}): Promise<SelectorResult> {
    return expectData(await this.actRaw(action, selector, extra))[FIELD[action]];
  }

  workflowRaw(id: string): Promise<Response> {
    return this.gql(`query($appId: String!, $environment: String!, $id: ID!) { workflow(appId: $appId, environment: $environment, id: $id) { ${WORKFLOW_FIELDS} } }`, {
      appId: this.appId,
      environment: this.environment,
      id,
    });
  }

  async workflow(id: string): Promise<WorkflowRow | null> {
    return expectData(await this.workflowRaw(id)).workflow;
  }

  async state(id: string): Promise<string | undefined> {
    return (await this.workflow(id))?.state;
  }

  workflowsRaw(filter: Record<string, unknown> = {}, page: { first?: number; after?: string | null } = {}): Promise<Response> {
    return this.gql(
      `query($filter: WorkflowFilterInput!, $first: Int, $after: String) { workflows(filter: $filter, first: $first, after: $after) { totalCount totalCountCapped pageInfo { endCursor hasNextPage } nodes { ${WORKFLOW_FIELDS} } } }`,
      { filter: { appId: this.appId, environment: this.environment, ...filter }, ...page },
    );
  }

  async workflows(filter: Record<string, unknown> = {}, page: { first?: number; after?: string | null } = {}): Promise<{ totalCount: number; totalCountCapped: boolean; pageInfo: { endCursor: string | null; hasNextPage: boolean }; nodes: WorkflowRow[] }> {
    return expectData(await this.workflowsRaw(filter, page)).workflows;
  }

  historyRaw(id: string): Promise<Response> {
    return this.gql(
      `query($appId: String!, $environment: String!, $id: ID!) { workflowHistory(appId: $appId, environment: $environment, id: $id) { revision type data metadata } }`,
      { appId: this.appId, environment: this.environment, id },
    );
  }

  async history(id: string): Promise<HistoryRow[]> {
    return expectData(await this.historyRaw(id)).workflowHistory;
  }

  taskRaw(id: string): Promise<Response> {
    return this.gql(
      `query($appId: String!, $environment: String!, $id: ID!) { task(appId: $appId, environment: $environment, id: $id) { id appId environment name state input attempts } }`,
      { appId: this.appId, environment: this.environment, id },
    );
  }

  async task(id: string): Promise<Record<string, any> | null> {
    return expectData(await this.taskRaw(id)).task;
  }

  tasksRaw(filter: Record<string, unknown> = {}, page: { first?: number; after?: string | null } = {}): Promise<Response> {
    return this.gql(
      `query($filter: TaskFilterInput!, $first: Int, $after: String) { tasks(filter: $filter, first: $first, after: $after) { totalCount pageInfo { endCursor hasNextPage } nodes { id name state input } } }`,
      { filter: { appId: this.appId, environment: this.environment, ...filter }, ...page },
    );
  }

  async tasks(filter: Record<string, unknown> = {}): Promise<{ totalCount: number; nodes: Array<Record<string, any>> }> {
    return expectData(await this.tasksRaw(filter, { first: 500 })).tasks;
  }

  /** Everything this client can see of its app and environment: workflows with their histories, and tasks (two requests). */
  async snapshot(): Promise<unknown> {
    const workflows = await this.workflows({}, { first: 500 });
    const scope = `appId: ${JSON.stringify(this.appId)}, environment: ${JSON.stringify(this.environment)}`;
    const histories = workflows.nodes.map((w, i) => `h${i}: workflowHistory(${scope}, id: ${JSON.stringify(w.id)}) { revision type data }`);
    const data = expectData(await this.gql(`{ tasks(filter: { ${scope} }, first: 500) { totalCount nodes { id name state input } } ${histories.join(' ')} }`));
    return { workflows, data };
  }
}

/** The token id inside a `baton_<id hex>_<secret>` token. */
export function tokenIdOf(token: string): string {
  const hex = /^baton_([0-9a-f]{32})_/.exec(token)?.[1];
  if (!hex) throw new Error(`not a Baton token: ${token}`);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** `npm run baton -- tokens revoke <id>` against a store. */
export async function revokeTokenViaCli(storeUrl: string, tokenId: string): Promise<string> {
  const { stdout } = await run(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), 'tokens', 'revoke', tokenId], {
    cwd: ROOT,
    env: { ...process.env, EVENT_STORE_URL: storeUrl },
  });
  return stdout;
}

/**
 * Starts several services at once (each start is about a second of mostly CPU-bound work), for a
 * file whose describe blocks each need their own configuration. Call `stopAll` in a file-level
 * `afterAll`: it also stops services whose describe block was filtered out.
 */
export function startServices<K extends string>(options: Record<K, Parameters<typeof startService>[0]>): {
  get(key: K): Promise<Service>;
  stopAll(): Promise<void>;
} {
  const starting = new Map<K, Promise<Service>>();
  for (const key of Object.keys(options) as K[]) {
    const promise = startService(options[key]);
    promise.catch(() => undefined); // reported by whoever awaits it
    starting.set(key, promise);
  }
  return {
    get: (key) => starting.get(key)!,
    stopAll: async () => {
      await Promise.all([...starting.values()].map((p) => p.then((s) => s.stop(), () => undefined)));
    },
  };
}

/**
 * Issues tokens through the CLI against a running service's store (in parallel), then polls
 * until the service accepts each of them (it reads the other process's events from the log).
 */
export async function issueTokens(service: Service, scopes: Array<{ apps: string[]; environments?: string[]; role?: string }>): Promise<string[]> {
  const tokens = await Promise.all(scopes.map((s) => createTokenViaCli(service.storeUrl, s.apps, s.environments ?? [], s.role)));
  await Promise.all(
    tokens.map((token) =>
      waitFor(async () => (await post(service, '{"query":"{ __typename }"}', token)).status === 200, {
        timeoutMs: 15_000,
        intervalMs: 20,
        description: 'the running service to accept a token made by the CLI',
      }),
    ),
  );
  return tokens;
}

/** Whether the running service's schema has a mutation of this name. */
export async function hasMutation(service: Service, name: string): Promise<boolean> {
  const data = expectData(await gql(service, '{ __type(name: "Mutation") { fields { name } } }'));
  return data.__type.fields.some((f: { name: string }) => f.name === name);
}

/**
 * Two service processes on one fresh SQLite store (as behind a load balancer), each with a client
 * of app `demo`, environment `dev`, both using A's bootstrap token.
 */
export async function startTwoInstances(): Promise<{ a: Service; b: Service; apiA: Client; apiB: Client }> {
  const storeUrl = freshStoreUrl();
  const a = await startService({ storeUrl, env: { LOG_LEVEL: 'info' } });
  const b = await startService({ storeUrl, env: { LOG_LEVEL: 'info' } });
  return { a, b, apiA: new Client(a, 'demo', 'dev'), apiB: new Client({ ...b, token: a.token } as Service, 'demo', 'dev') };
}
