import http from 'node:http';
import https from 'node:https';

/** A GraphQL error answered by Baton, with its stable `extensions.code`. */
export class BatonRequestError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
    readonly extensions: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'BatonRequestError';
  }
}

export interface ClientOptions {
  /** Base URL of the service, e.g. `http://localhost:3000`. */
  url: string;
  /** API token (`baton tokens create`). */
  token: string;
  /**
   * Deadline of one request, in milliseconds (long polls add their own wait to it).
   * @default 30000
   */
  timeoutMs?: number;
}

export type WorkflowSelector = { id: string } | { name: string; tag?: string };

export interface SelectorActionResult {
  status: 'OK' | 'NO_MATCH';
  matched: number;
  changed: number;
  workflowIds: string[];
}

export interface WorkflowSummary {
  id: string;
  name: string;
  version: string | null;
  tag: string | null;
  state: 'RUNNING' | 'PAUSED' | 'COMPLETED' | 'FAILED' | 'TERMINATED';
  input: string;
  output: string | null;
  error: string | null;
  /** The answers of its query handlers (`ctx.onQuery`) as of its last decision, as a JSON object string. */
  queries: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A workflow that ended as FAILED or TERMINATED, thrown by `result()`. */
export class WorkflowEndedError extends Error {
  constructor(
    readonly workflowId: string,
    readonly state: 'FAILED' | 'TERMINATED',
    message: string,
  ) {
    super(message);
    this.name = 'WorkflowEndedError';
  }
}

/**
 * What `dispatchWorkflow` answers: a promise of the new workflow's id (awaiting it works as
 * before), which can also wait for the workflow's result.
 */
export type DispatchedWorkflow = Promise<string> & {
  /**
   * Waits until the workflow completes and resolves with its result (parsed JSON); rejects with
   * {@link WorkflowEndedError} when it fails or is terminated. Long-polls the server (no busy loop).
   * @example
   * const total = await baton.dispatchWorkflow({ appId: 'demo', environment: 'dev', name: 'Checkout', input: [cart] }).result<number>();
   */
  result<T = unknown>(options?: { timeoutMs?: number }): Promise<T>;
};

const SELECTOR_RESULT = '{ status matched changed workflowIds }';
const WORKFLOW_FIELDS = '{ id name version tag state input output error queries createdAt updatedAt }';
const FINAL = new Set(['COMPLETED', 'FAILED', 'TERMINATED']);

/**
 * A typed client for Baton's GraphQL API: the eight documented mutations and the queries.
 * Arguments are plain arrays here; the client serialises them to the JSON strings the API takes.
 * @example
 * const baton = new Client({ url: 'http://localhost:3000', token: process.env.BATON_TOKEN! });
 * const id = await baton.dispatchWorkflow({ appId: 'demo', environment: 'dev', name: 'Onboarding', input: ['ada@example.com'], tag: 'email:ada@example.com' });
 * await baton.sendEventToWorkflows({ appId: 'demo', environment: 'dev', selector: { name: 'Onboarding', tag: 'email:ada@example.com' }, name: 'activated', data: [] });
 */
export class Client {
  private readonly url: string;
  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly endpoint: URL;
  /** Keep-alive connections, reused from one request to the next (idle ones do not keep the process alive). */
  private readonly agent: http.Agent;

  constructor(options: ClientOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.endpoint = new URL(`${this.url}/graphql`);
    this.agent = this.endpoint.protocol === 'https:' ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
  }

  /** Sends one GraphQL operation; throws {@link BatonRequestError} on any error. */
  async request<T>(query: string, variables: Record<string, unknown> = {}, options: { signal?: AbortSignal; extraTimeoutMs?: number } = {}): Promise<T> {
    const deadline = AbortSignal.timeout(this.timeoutMs + (options.extraTimeoutMs ?? 0));
    const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
    const response = await this.post(JSON.stringify({ query, variables }), signal);
    const text = response.text;
    let body: { data?: T; errors?: Array<{ message: string; extensions?: Record<string, unknown> }> };
    try {
      body = JSON.parse(text);
    } catch {
      throw new BatonRequestError(`HTTP ${response.status}: ${text.slice(0, 200)}`, 'BAD_RESPONSE', response.status);
    }
    if (body.errors?.length) {
      const [first] = body.errors;
      throw new BatonRequestError(first.message, String(first.extensions?.code ?? 'UNKNOWN'), response.status, first.extensions);
    }
    return body.data as T;
  }

  /**
   * One POST over a kept-alive connection (node:http: about a millisecond less per round trip than
   * fetch here). A request that fails as it is written on a reused connection, because the server
   * had just closed it while idle, is sent once more on a new one: the server never read it.
   */
  private post(body: string, signal: AbortSignal, retried = false): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const transport = this.endpoint.protocol === 'https:' ? https : http;
      const request = transport.request(
        this.endpoint,
        {
          method: 'POST',
          agent: this.agent,
          signal,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${this.token}` },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
          response.on('error', reject);
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (!retried && request.reusedSocket && !signal.aborted && (error.code === 'ECONNRESET' || error.code === 'EPIPE')) {
          this.post(body, signal, true).then(resolve, reject);
        } else reject(signal.aborted ? (signal.reason ?? error) : error);
      });
      request.end(body);
    });
  }

  async dispatchTask(input: { appId: string; environment: string; name: string; input?: unknown[] }): Promise<string> {
    const data = await this.request<{ dispatchTask: { id: string } }>(
      'mutation($input: DispatchTaskInput!) { dispatchTask(input: $input) { id } }',
      { input: { ...input, input: JSON.stringify(input.input ?? []) } },
    );
    return data.dispatchTask.id;
  }

  /**
   * Dispatches a workflow and answers its id; `.result()` on the answer waits for its result.
   * With `idempotencyKey`, retrying after a timeout answers the first dispatch's id instead of
   * starting a second workflow.
   */
  dispatchWorkflow(input: { appId: string; environment: string; name: string; input?: unknown[]; tag?: string; idempotencyKey?: string }): DispatchedWorkflow {
    const id = this.request<{ dispatchWorkflow: { id: string } }>('mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', {
      input: { ...input, input: JSON.stringify(input.input ?? []) },
    }).then((data) => data.dispatchWorkflow.id);
    return Object.assign(id, {
      result: <T>(options?: { timeoutMs?: number }) => id.then((workflowId) => this.workflowResult<T>(input.appId, input.environment, workflowId, options)),
    });
  }

  /**
   * Waits (long poll, up to `waitMs` per request) until the workflow has ended, then answers it;
   * answers it as it is once `timeoutMs` has passed.
   */
  async awaitWorkflow(appId: string, environment: string, id: string, options: { timeoutMs?: number } = {}): Promise<WorkflowSummary | null> {
    const deadline = Date.now() + (options.timeoutMs ?? Number.POSITIVE_INFINITY);
    for (;;) {
      const waitMs = Math.max(0, Math.min(20_000, deadline - Date.now()));
      const data = await this.request<{ awaitWorkflow: WorkflowSummary | null }>(
        `query($appId: String!, $environment: String!, $id: ID!, $waitMs: Int) { awaitWorkflow(appId: $appId, environment: $environment, id: $id, waitMs: $waitMs) ${WORKFLOW_FIELDS} }`,
        { appId, environment, id, waitMs },
        { extraTimeoutMs: waitMs },
      );
      if (!data.awaitWorkflow || FINAL.has(data.awaitWorkflow.state) || Date.now() >= deadline) return data.awaitWorkflow;
    }
  }

  /** The result of a workflow once it completes (see `dispatchWorkflow(...).result()`). */
  async workflowResult<T = unknown>(appId: string, environment: string, id: string, options: { timeoutMs?: number } = {}): Promise<T> {
    const workflow = await this.awaitWorkflow(appId, environment, id, options);
    if (!workflow) throw new BatonRequestError(`workflow ${id} not found`, 'NOT_FOUND', 200);
    if (workflow.state === 'COMPLETED') return (workflow.output === null ? undefined : JSON.parse(workflow.output)) as T;
    if (workflow.state === 'FAILED' || workflow.state === 'TERMINATED') throw new WorkflowEndedError(id, workflow.state, workflow.error ?? `workflow ${id} ${workflow.state.toLowerCase()}`);
    throw new BatonRequestError(`workflow ${id} is still ${workflow.state} after ${options.timeoutMs} ms`, 'TIMEOUT', 200);
  }

  /**
   * A running (or ended) workflow's answer to one of its query handlers (`ctx.onQuery(name, …)`),
   * as of its last decision; undefined when it has no such query (yet).
   * @example
   * const step = await baton.queryWorkflow<string>('demo', 'dev', id, 'step');
   */
  async queryWorkflow<T = unknown>(appId: string, environment: string, id: string, name: string): Promise<T | undefined> {
    const workflow = await this.workflow(appId, environment, id);
    if (!workflow) throw new BatonRequestError(`workflow ${id} not found`, 'NOT_FOUND', 200);
    const answers = workflow.queries === null ? {} : (JSON.parse(workflow.queries) as Record<string, T>);
    return answers[name];
  }

  async scheduleTask(input: { appId: string; environment: string; cron: string; name: string; input?: unknown[]; timezone?: string }): Promise<string> {
    const data = await this.request<{ scheduleTask: { id: string } }>(
      'mutation($input: ScheduleTaskInput!) { scheduleTask(input: $input) { id } }',
      { input: { ...input, input: JSON.stringify(input.input ?? []) } },
    );
    return data.scheduleTask.id;
  }

  async scheduleWorkflow(input: { appId: string; environment: string; cron: string; name: string; input?: unknown[]; tag?: string; timezone?: string }): Promise<string> {
    const data = await this.request<{ scheduleWorkflow: { id: string } }>(
      'mutation($input: ScheduleWorkflowInput!) { scheduleWorkflow(input: $input) { id } }',
      { input: { ...input, input: JSON.stringify(input.input ?? []) } },
    );
    return data.scheduleWorkflow.id;
  }

  async sendEventToWorkflows(input: { appId: string; environment: string; selector: WorkflowSelector; name: string; data?: unknown[] }): Promise<SelectorActionResult> {
    const data = await this.request<{ sendEventToWorkflows: SelectorActionResult }>(
      `mutation($input: SendEventToWorkflowsInput!) { sendEventToWorkflows(input: $input) ${SELECTOR_RESULT} }`,
      { input: { ...input, data: JSON.stringify(input.data ?? []) } },
    );
    return data.sendEventToWorkflows;
  }

  pauseWorkflows(input: { appId: string; environment: string; selector: WorkflowSelector }): Promise<SelectorActionResult> {
    return this.selectorAction('pauseWorkflows', 'PauseWorkflowsInput', input);
  }

  resumeWorkflows(input: { appId: string; environment: string; selector: WorkflowSelector }): Promise<SelectorActionResult> {
    return this.selectorAction('resumeWorkflows', 'ResumeWorkflowsInput', input);
  }

  terminateWorkflows(input: { appId: string; environment: string; selector: WorkflowSelector; reason?: string }): Promise<SelectorActionResult> {
    return this.selectorAction('terminateWorkflows', 'TerminateWorkflowsInput', input);
  }

  private async selectorAction(field: string, type: string, input: object): Promise<SelectorActionResult> {
    const data = await this.request<Record<string, SelectorActionResult>>(`mutation($input: ${type}!) { ${field}(input: $input) ${SELECTOR_RESULT} }`, { input });
    return data[field];
  }

  async workflow(appId: string, environment: string, id: string): Promise<WorkflowSummary | null> {
    const data = await this.request<{ workflow: WorkflowSummary | null }>(
      `query($appId: String!, $environment: String!, $id: ID!) { workflow(appId: $appId, environment: $environment, id: $id) ${WORKFLOW_FIELDS} }`,
      { appId, environment, id },
    );
    return data.workflow;
  }

  async workflowHistory(appId: string, environment: string, id: string): Promise<Array<{ revision: number; type: string; data: unknown; recordedAt: string }>> {
    const data = await this.request<{ workflowHistory: Array<{ revision: number; type: string; data: string; recordedAt: string }> }>(
      'query($appId: String!, $environment: String!, $id: ID!) { workflowHistory(appId: $appId, environment: $environment, id: $id) { revision type data recordedAt } }',
      { appId, environment, id },
    );
    return data.workflowHistory.map((e) => ({ ...e, data: JSON.parse(e.data) }));
  }
}
