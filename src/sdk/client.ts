import http from 'node:http';
import https from 'node:https';

/**
 * A GraphQL error answered by Baton, with its stable `extensions.code`; also thrown by the client
 * itself for an answer that is not JSON (`BAD_RESPONSE`), a workflow it cannot find (`NOT_FOUND`)
 * and a wait that ran out (`TIMEOUT`).
 * @example
 * try {
 *   await baton.pauseWorkflows({ appId: 'demo', environment: 'dev', selector: { id } });
 * } catch (error) {
 *   if (error instanceof BatonRequestError && error.code === 'NOT_FOUND') console.warn(`no workflow ${id}`);
 *   else throw error;
 * }
 */
export class BatonRequestError extends Error {
  /**
   * Made by the client from the service's answer; user code catches it.
   * @param message - The (first) GraphQL error's message.
   * @param code - Its `extensions.code` (`UNKNOWN` when it has none).
   * @param status - The HTTP status of the answer (200 for most GraphQL errors).
   * @param extensions - All of its `extensions` (e.g. `field` for `BAD_USER_INPUT`).
   */
  constructor(
    message: string,
    /** Stable error code, e.g. `BAD_USER_INPUT`, `NOT_FOUND`, `CONFLICT`, `UNAUTHENTICATED`, `FORBIDDEN`. */
    readonly code: string,
    /** HTTP status of the answer (200 for most GraphQL errors, and for the errors the client raises itself). */
    readonly status: number,
    /** The error's `extensions` as the server sent them (empty for errors the client made itself). */
    readonly extensions: Record<string, unknown> = {},
    /** How long the service asked to wait before trying again (its `Retry-After` header, e.g. with `RATE_LIMITED`), in milliseconds; undefined when it did not say. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'BatonRequestError';
  }
}

/** Node's codes for a service that cannot be reached now (restarting, or a network hiccup). */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ENOTFOUND', 'UND_ERR_SOCKET']);

/**
 * Whether a request failed in a way that may pass: the service unreachable or restarting, a
 * request that timed out, or an answer of 429 (rate limited), 502, 503 (draining, store
 * unavailable) or 504. Not errors that retrying cannot change (UNAUTHENTICATED, NOT_FOUND,
 * BAD_USER_INPUT, ...).
 * @internal
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof BatonRequestError) return [429, 502, 503, 504].includes(error.status);
  // Not `instanceof Error`: errors made by Node's own modules may come from another realm (a vm context, Jest).
  if (typeof error !== 'object' || error === null) return false;
  const { name, code } = error as { name?: unknown; code?: unknown };
  return name === 'TimeoutError' || UNREACHABLE.has(String(code ?? ''));
}

/** How to reach a Baton service: what `new Client(...)` takes. */
export interface ClientOptions {
  /** Base URL of the service, e.g. `http://localhost:3000`. */
  url: string;
  /** API token (`baton tokens create`). */
  token: string;
  /**
   * Deadline of one request, in milliseconds (long polls add their own wait to it): a whole number
   * from 1 to 2^31 - 1 (about 24.8 days, the longest a Node timer waits; there is no "none").
   * @default 30000
   */
  timeoutMs?: number;
}

/**
 * Which workflows of an app and environment an action reaches: one by id, every not-final one of a
 * name, or every not-final one of a name and tag.
 * @example
 * const one: WorkflowSelector = { id };
 * const ada: WorkflowSelector = { name: 'Onboarding', tag: 'email:ada@example.com' };
 */
export type WorkflowSelector =
  | {
      /** One workflow, by the id `dispatchWorkflow` answered (an unknown id is a `NOT_FOUND` error). */
      id: string;
    }
  | {
      /** Every not-final workflow dispatched under this name. */
      name: string;
      /** Only those dispatched with this tag. */
      tag?: string;
    };

/** What a selector action (send an event, pause, resume, terminate) did. */
export interface SelectorActionResult {
  /** `OK` when at least one workflow matched, `NO_MATCH` when none did (nothing was done then). */
  status: 'OK' | 'NO_MATCH';
  /** How many workflows the selector matched. */
  matched: number;
  /** How many of them the action changed (e.g. a workflow already paused is not paused again). */
  changed: number;
  /**
   * Ids of the matched workflows, in dispatch order: the first 10,000 of them. `matched` counts
   * them all, so `workflowIds.length < matched` means the list stopped there.
   */
  workflowIds: string[];
}

/** One workflow as the service reads it back (the GraphQL `Workflow` type, without its app and environment). */
export interface WorkflowSummary {
  /** Workflow id (UUID v7). */
  id: string;
  /** The name it was dispatched with. */
  name: string;
  /** The `Name_vN` version its first decision chose; null until a worker picked it up. */
  version: string | null;
  /** The tag given at dispatch, if any. */
  tag: string | null;
  /** Current state: COMPLETED, FAILED and TERMINATED are final. */
  state: 'RUNNING' | 'PAUSED' | 'COMPLETED' | 'FAILED' | 'TERMINATED';
  /** Its arguments, as a string holding a JSON array. */
  input: string;
  /** Its result as a JSON string once COMPLETED, else null. */
  output: string | null;
  /** The error message once FAILED, else null. */
  error: string | null;
  /** The answers of its query handlers (`ctx.onQuery`) as of its last decision, as a JSON object string; null when it declares none. */
  queries: string | null;
  /** When it was dispatched (ISO 8601). */
  createdAt: string;
  /** When its history last changed (ISO 8601). */
  updatedAt: string;
}

/** A workflow that ended as FAILED or TERMINATED, thrown by `result()` and `workflowResult`. */
export class WorkflowEndedError extends Error {
  /**
   * Made by the client when the workflow it waits on ends without a result.
   * @param workflowId - The workflow's id.
   * @param state - How it ended.
   * @param message - Its error message (FAILED), or a sentence saying it ended.
   */
  constructor(
    /** The workflow that ended. */
    readonly workflowId: string,
    /** How it ended. */
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
   * {@link WorkflowEndedError} when it fails or is terminated. Long-polls the server (no busy loop),
   * and waits out a service restarting or refusing for a while (as {@link Client.awaitWorkflow}).
   * @example
   * const total = await baton.dispatchWorkflow({ appId: 'demo', environment: 'dev', name: 'Checkout', input: [cart] }).result<number>();
   */
  result<T = unknown>(options?: { timeoutMs?: number }): Promise<T>;
};

const SELECTOR_RESULT = '{ status matched changed workflowIds }';
/** Events per `workflowHistory` request while reading a whole history: the server's default page. */
const HISTORY_PAGE = 1000;
const WORKFLOW_FIELDS = '{ id name version tag state input output error queries createdAt updatedAt }';
const FINAL = new Set(['COMPLETED', 'FAILED', 'TERMINATED']);
/** The longest a Node timer waits (2^31 - 1 ms); past it, it fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How long `awaitWorkflow` goes on retrying requests that fail in a row, in milliseconds. */
const AWAIT_RETRY_MS = 5 * 60_000;

/**
 * A typed client for Baton's GraphQL API: the eight documented mutations (`dispatchTask`,
 * `dispatchWorkflow`, `scheduleTask`, `scheduleWorkflow`, `sendEventToWorkflows`,
 * `pauseWorkflows`, `resumeWorkflows`, `terminateWorkflows`), and the reads `workflow`,
 * `workflowHistory`, `awaitWorkflow` / `workflowResult` and `queryWorkflow`. Anything else the API
 * offers (lists, retries, schedule management, failures, the audit log) goes through
 * {@link Client.request}. Arguments are plain arrays here; the client serialises them to the JSON
 * strings the API takes, and parses the JSON it answers where noted. Every method throws
 * {@link BatonRequestError} when the service answers an error.
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

  /**
   * Makes a client; nothing is sent until the first call. Requests go to `<url>/graphql` with the
   * token as a bearer token, over kept-alive connections (http or https, from the URL).
   * @param options - The service's URL, an API token and, optionally, the request deadline.
   * @throws TypeError when `url` is not an `http://` or `https://` URL, or `timeoutMs` is not a whole number from 1 to 2^31 - 1.
   * @example
   * const baton = new Client({ url: 'http://localhost:3000', token: process.env.BATON_TOKEN!, timeoutMs: 10_000 });
   */
  constructor(options: ClientOptions) {
    this.url = options.url.replace(/\/+$/, '');
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    // 0 or 2^31 and more is a timer of 1 ms in Node (every request aborted at once, and retried by
    // awaitWorkflow as a passing failure for minutes); NaN or a fraction threw from every request.
    if (!Number.isInteger(this.timeoutMs) || this.timeoutMs < 1 || this.timeoutMs > MAX_TIMER_MS) {
      throw new TypeError(`timeoutMs must be a whole number of milliseconds from 1 to ${MAX_TIMER_MS}, not ${String(options.timeoutMs)}`);
    }
    // `localhost:3000` is a URL too, of protocol `localhost:`: every request then failed, and a Worker retried for ever.
    let endpoint: URL | undefined;
    try {
      endpoint = new URL(`${this.url}/graphql`);
    } catch {
      // Said below, with what is expected.
    }
    if (endpoint?.protocol !== 'http:' && endpoint?.protocol !== 'https:') {
      throw new TypeError(`url must be an http:// or https:// URL of the Baton service (e.g. http://localhost:3000), not ${JSON.stringify(options.url)}`);
    }
    this.endpoint = endpoint;
    this.agent = this.endpoint.protocol === 'https:' ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
  }

  /**
   * Sends one GraphQL operation and answers its `data`; throws {@link BatonRequestError} on any
   * GraphQL error (the first one's message and code) or an answer that is not JSON, and rejects
   * with the abort reason once `timeoutMs` (plus `extraTimeoutMs`) has passed or `signal` aborts,
   * and with Node's error when the service cannot be reached (e.g. `ECONNREFUSED`). The way to
   * every operation this client has no method for. A request that fails on a reused kept-alive
   * connection is sent once more on a new one only when `resendable` (by default: a document with no `mutation` in it),
   * since the service may have applied it before the connection was cut. `resent`: the caller
   * sends again a request whose answer it never got (a poll that names itself, `pollId`, is then
   * answered with the claims its first send made, on whichever instance that landed).
   * @example
   * const { workflows } = await baton.request<{ workflows: { nodes: Array<{ id: string }> } }>(
   *   'query($filter: WorkflowFilterInput!) { workflows(filter: $filter, first: 50) { nodes { id } } }',
   *   { filter: { appId: 'demo', environment: 'dev', state: 'FAILED' } },
   * );
   */
  async request<T>(
    query: string,
    variables: Record<string, unknown> = {},
    options: { signal?: AbortSignal; extraTimeoutMs?: number; resendable?: boolean; resent?: boolean } = {},
  ): Promise<T> {
    // Within what a Node timer waits: past it, the timer fires at once (a long poll's wait added to a long timeoutMs).
    const deadline = AbortSignal.timeout(Math.min(this.timeoutMs + Math.max(0, Math.round(options.extraTimeoutMs ?? 0)), MAX_TIMER_MS));
    const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
    // A mutation is sent once unless the caller says that sending it again is safe: a reset
    // connection does not prove that the service never read it (found in review: a dispatch whose
    // answer was cut off was sent again, and made a second workflow).
    // Any `mutation` word counts (after a comment, after fragments, anywhere): a query wrongly
    // taken for a mutation only loses one resend, a mutation taken for a query was applied twice.
    const resendable = options.resendable ?? !/\bmutation\b/.test(query);
    const response = await this.post(JSON.stringify({ query, variables }), signal, resendable, options.resent === true);
    const text = response.text;
    const seconds = response.retryAfter === undefined ? NaN : Number(response.retryAfter);
    const retryAfterMs = Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : undefined;
    let body: { data?: T; errors?: Array<{ message: string; extensions?: Record<string, unknown> }> };
    try {
      body = JSON.parse(text);
    } catch {
      throw new BatonRequestError(`HTTP ${response.status}: ${text.slice(0, 200)}`, 'BAD_RESPONSE', response.status, {}, retryAfterMs);
    }
    if (body.errors?.length) {
      const [first] = body.errors;
      throw new BatonRequestError(first.message, String(first.extensions?.code ?? 'UNKNOWN'), response.status, first.extensions, retryAfterMs);
    }
    return body.data as T;
  }

  /**
   * One POST over a kept-alive connection (node:http: about a millisecond less per round trip than
   * fetch here). A request that fails on a reused connection, usually because the server had just
   * closed it while idle, is sent once more on a new one when it is safe to repeat (`resendable`),
   * saying so (`x-baton-resent`, `resent`): the same error also comes when the server read the
   * request, applied it and the connection was cut before the answer (an instance killed, a
   * proxy), so a mutation that is not safe to repeat is not sent again, and fails with the error.
   */
  private post(body: string, signal: AbortSignal, resendable: boolean, resent = false): Promise<{ status: number; text: string; retryAfter?: string }> {
    return new Promise((resolve, reject) => {
      const transport = this.endpoint.protocol === 'https:' ? https : http;
      const request = transport.request(
        this.endpoint,
        {
          method: 'POST',
          agent: this.agent,
          signal,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            authorization: `Bearer ${this.token}`,
            // Sent again (see above): a poll that names itself (`pollId`) is then answered with the
            // claims its first send made, on whichever instance it landed.
            ...(resent ? { 'x-baton-resent': '1' } : {}),
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          const retryAfter = response.headers['retry-after'];
          response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), retryAfter }));
          response.on('error', reject);
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (resendable && request.reusedSocket && !signal.aborted && (error.code === 'ECONNRESET' || error.code === 'EPIPE')) {
          this.post(body, signal, false, true).then(resolve, reject);
        } else reject(signal.aborted ? (signal.reason ?? error) : error);
      });
      request.end(body);
    });
  }

  /**
   * Dispatches a standalone task to run now and answers its id at once (a worker serving the task
   * runs it, under the retry policy that worker declares).
   * @param input - App, environment, the task's name as `defineTask` registered it, its
   *   arguments (default none), optionally a `tag` (a label the `tasks` query filters on) and an
   *   `idempotencyKey` (a retry with the same key answers the first dispatch's id).
   * @returns The task's id.
   * @example
   * const taskId = await baton.dispatchTask({ appId: 'demo', environment: 'dev', name: 'sendEmail', input: ['ada@example.com', 'Welcome'] });
   */
  async dispatchTask(input: { appId: string; environment: string; name: string; input?: unknown[]; tag?: string; idempotencyKey?: string }): Promise<string> {
    const data = await this.request<{ dispatchTask: { id: string } }>(
      'mutation($input: DispatchTaskInput!) { dispatchTask(input: $input) { id } }',
      { input: { ...input, input: JSON.stringify(input.input ?? []) } },
      { resendable: input.idempotencyKey !== undefined },
    );
    return data.dispatchTask.id;
  }

  /**
   * Dispatches a workflow and answers its id; `.result()` on the answer waits for its result.
   * With `idempotencyKey`, retrying after a timeout answers the first dispatch's id instead of
   * starting a second workflow. `Name` runs the highest `Name_vN` a worker serves; `tag` lets
   * `{ name, tag }` selectors reach it.
   * @example
   * const id = await baton.dispatchWorkflow({ appId: 'demo', environment: 'dev', name: 'Onboarding', input: ['ada@example.com'], tag: 'email:ada@example.com' });
   */
  dispatchWorkflow(input: { appId: string; environment: string; name: string; input?: unknown[]; tag?: string; idempotencyKey?: string }): DispatchedWorkflow {
    const id = this.request<{ dispatchWorkflow: { id: string } }>(
      'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }',
      { input: { ...input, input: JSON.stringify(input.input ?? []) } },
      { resendable: input.idempotencyKey !== undefined },
    ).then((data) => data.dispatchWorkflow.id);
    return Object.assign(id, {
      result: <T>(options?: { timeoutMs?: number }) => id.then((workflowId) => this.workflowResult<T>(input.appId, input.environment, workflowId, options)),
    });
  }

  /**
   * Waits (long poll, up to 20 s per request) until the workflow has ended, then answers it;
   * answers it as it is once `timeoutMs` has passed (default: no limit), and null when there is
   * no such workflow (a child workflow whose id its parent's code handed out, that the service is
   * still creating, is waited for, up to 10 s). A request that fails in a way that may pass (the service restarting or
   * unreachable, a request timeout, HTTP 429, 502, 503 or 504) is sent again, with backoff and
   * after the service's `Retry-After`, for up to 5 minutes of failures in a row and within
   * `timeoutMs`; then, and for any other error, the error is thrown.
   * @example
   * const ended = await baton.awaitWorkflow('demo', 'dev', id, { timeoutMs: 60_000 });
   * if (ended?.state === 'COMPLETED') console.log(JSON.parse(ended.output!));
   */
  async awaitWorkflow(appId: string, environment: string, id: string, options: { timeoutMs?: number } = {}): Promise<WorkflowSummary | null> {
    const deadline = Date.now() + (options.timeoutMs ?? Number.POSITIVE_INFINITY);
    let failingSince: number | undefined;
    for (let backoff = 250; ; ) {
      const waitMs = Math.max(0, Math.min(20_000, deadline - Date.now()));
      let data: { awaitWorkflow: WorkflowSummary | null };
      try {
        data = await this.request<{ awaitWorkflow: WorkflowSummary | null }>(
          `query($appId: String!, $environment: String!, $id: ID!, $waitMs: Int) { awaitWorkflow(appId: $appId, environment: $environment, id: $id, waitMs: $waitMs) ${WORKFLOW_FIELDS} }`,
          { appId, environment, id, waitMs },
          { extraTimeoutMs: waitMs },
        );
      } catch (error) {
        // A wait may last days: a restart of the service (a deploy) or a moment over the rate
        // limit must not end it, while the workflow goes on.
        failingSince ??= Date.now();
        const pause = Math.max(backoff, error instanceof BatonRequestError ? (error.retryAfterMs ?? 0) : 0);
        if (!isTransient(error) || Date.now() + pause >= deadline || Date.now() + pause - failingSince > AWAIT_RETRY_MS) throw error;
        await new Promise((resolve) => setTimeout(resolve, pause));
        backoff = Math.min(backoff * 2, 5000);
        continue;
      }
      failingSince = undefined;
      backoff = 250;
      if (!data.awaitWorkflow || FINAL.has(data.awaitWorkflow.state) || Date.now() >= deadline) return data.awaitWorkflow;
    }
  }

  /**
   * The result of a workflow once it completes (parsed JSON; see `dispatchWorkflow(...).result()`).
   * Waits as {@link Client.awaitWorkflow} does, through a service restarting or refusing for a while.
   * @throws {@link WorkflowEndedError} when it fails or is terminated.
   * @throws {@link BatonRequestError} `NOT_FOUND` when there is no such workflow, `TIMEOUT` when it
   *   is still running after `timeoutMs` (default: no limit).
   * @example
   * const total = await baton.workflowResult<number>('demo', 'dev', id, { timeoutMs: 30_000 });
   */
  async workflowResult<T = unknown>(appId: string, environment: string, id: string, options: { timeoutMs?: number } = {}): Promise<T> {
    const workflow = await this.awaitWorkflow(appId, environment, id, options);
    if (!workflow) throw new BatonRequestError(`workflow ${id} not found`, 'NOT_FOUND', 200);
    if (workflow.state === 'COMPLETED') return (workflow.output === null ? undefined : JSON.parse(workflow.output)) as T;
    if (workflow.state === 'FAILED' || workflow.state === 'TERMINATED') throw new WorkflowEndedError(id, workflow.state, workflow.error ?? `workflow ${id} ${workflow.state.toLowerCase()}`);
    throw new BatonRequestError(`workflow ${id} is still ${workflow.state} after ${options.timeoutMs} ms`, 'TIMEOUT', 200);
  }

  /**
   * A running (or ended) workflow's answer to one of its query handlers (`ctx.onQuery(name, …)`),
   * as of its last decision; undefined when it has no such query (yet). Throws
   * {@link BatonRequestError} `NOT_FOUND` when there is no such workflow.
   * @example
   * const step = await baton.queryWorkflow<string>('demo', 'dev', id, 'step');
   */
  async queryWorkflow<T = unknown>(appId: string, environment: string, id: string, name: string): Promise<T | undefined> {
    const workflow = await this.workflow(appId, environment, id);
    if (!workflow) throw new BatonRequestError(`workflow ${id} not found`, 'NOT_FOUND', 200);
    const answers = workflow.queries === null ? {} : (JSON.parse(workflow.queries) as Record<string, T>);
    // Own answers only: `constructor` or `toString` is no query of the workflow's.
    return Object.prototype.hasOwnProperty.call(answers, name) ? answers[name] : undefined;
  }

  /**
   * Schedules a task by a cron expression: every occurrence dispatches the task once with these
   * arguments. The expression has 5 fields (standard cron), 6 (with a year, as the original
   * service) or 7 (with seconds), or is a macro such as `@daily`; it is read in `timezone` (an IANA
   * name, default `UTC`). A refused expression is a `BAD_USER_INPUT` error naming the field at
   * fault (`extensions.cronField`). Pause, resume, trigger or delete the schedule with
   * {@link Client.request}.
   * @returns The schedule's id.
   * @example
   * const scheduleId = await baton.scheduleTask({ appId: 'demo', environment: 'dev', cron: '0 8 * * MON-FRI', timezone: 'Europe/Paris', name: 'sendDigest', input: ['daily'] });
   */
  async scheduleTask(input: { appId: string; environment: string; cron: string; name: string; input?: unknown[]; timezone?: string }): Promise<string> {
    const data = await this.request<{ scheduleTask: { id: string } }>(
      'mutation($input: ScheduleTaskInput!) { scheduleTask(input: $input) { id } }',
      { input: { ...input, input: JSON.stringify(input.input ?? []) } },
    );
    return data.scheduleTask.id;
  }

  /**
   * Schedules a workflow by a cron expression: every occurrence dispatches one workflow with these
   * arguments (and `tag`, if given). Cron expressions and `timezone` as for
   * {@link Client.scheduleTask}; the overlap policy and catch-up window take their defaults (set
   * them with {@link Client.request} and the `scheduleWorkflow` mutation).
   * @returns The schedule's id.
   * @example
   * const scheduleId = await baton.scheduleWorkflow({ appId: 'demo', environment: 'dev', cron: '0 2 * * *', name: 'NightlyReport', input: [{ format: 'pdf' }] });
   */
  async scheduleWorkflow(input: { appId: string; environment: string; cron: string; name: string; input?: unknown[]; tag?: string; timezone?: string }): Promise<string> {
    const data = await this.request<{ scheduleWorkflow: { id: string } }>(
      'mutation($input: ScheduleWorkflowInput!) { scheduleWorkflow(input: $input) { id } }',
      { input: { ...input, input: JSON.stringify(input.input ?? []) } },
    );
    return data.scheduleWorkflow.id;
  }

  /**
   * Sends the event `name` with `data` (default none) to the workflows the selector picks: running
   * and paused ones record it (`ctx.waitForEvent` / `ctx.onEvent` get `data` as their arguments; a
   * paused one acts on it after resume); final ones do not receive it. An unknown `{ id }` is a
   * `NOT_FOUND` error; a `{ name }` selector that matches nothing answers `NO_MATCH`.
   * @example
   * const sent = await baton.sendEventToWorkflows({ appId: 'demo', environment: 'dev', selector: { name: 'Onboarding', tag: 'email:ada@example.com' }, name: 'activated', data: [{ plan: 'pro' }] });
   * if (sent.status === 'NO_MATCH') console.warn('nobody was waiting');
   */
  async sendEventToWorkflows(input: { appId: string; environment: string; selector: WorkflowSelector; name: string; data?: unknown[] }): Promise<SelectorActionResult> {
    const data = await this.request<{ sendEventToWorkflows: SelectorActionResult }>(
      `mutation($input: SendEventToWorkflowsInput!) { sendEventToWorkflows(input: $input) ${SELECTOR_RESULT} }`,
      { input: { ...input, data: JSON.stringify(input.data ?? []) } },
    );
    return data.sendEventToWorkflows;
  }

  /**
   * Pauses the running workflows the selector picks: tasks already dispatched keep running and
   * their results are recorded, but nothing new is dispatched until {@link Client.resumeWorkflows}.
   * Paused and final workflows are left as they are. An unknown `{ id }` is a `NOT_FOUND` error.
   * @example
   * await baton.pauseWorkflows({ appId: 'demo', environment: 'dev', selector: { name: 'Onboarding' } });
   */
  pauseWorkflows(input: { appId: string; environment: string; selector: WorkflowSelector }): Promise<SelectorActionResult> {
    return this.selectorAction('pauseWorkflows', 'PauseWorkflowsInput', input);
  }

  /**
   * Resumes the paused workflows the selector picks; what was recorded while they were paused
   * (task results, timers, events) is then acted on, in order. Running and final workflows are
   * left as they are. An unknown `{ id }` is a `NOT_FOUND` error.
   * @example
   * await baton.resumeWorkflows({ appId: 'demo', environment: 'dev', selector: { id } });
   */
  resumeWorkflows(input: { appId: string; environment: string; selector: WorkflowSelector }): Promise<SelectorActionResult> {
    return this.selectorAction('resumeWorkflows', 'ResumeWorkflowsInput', input);
  }

  /**
   * Terminates the running and paused workflows the selector picks; final. Their running tasks are
   * told to stop at their next heartbeat (late results are recorded and ignored); `reason` is
   * recorded in the history. Final workflows are left as they are. An unknown `{ id }` is a
   * `NOT_FOUND` error.
   * @example
   * await baton.terminateWorkflows({ appId: 'demo', environment: 'dev', selector: { id }, reason: 'customer left' });
   */
  terminateWorkflows(input: { appId: string; environment: string; selector: WorkflowSelector; reason?: string }): Promise<SelectorActionResult> {
    return this.selectorAction('terminateWorkflows', 'TerminateWorkflowsInput', input);
  }

  private async selectorAction(field: string, type: string, input: object): Promise<SelectorActionResult> {
    const data = await this.request<Record<string, SelectorActionResult>>(`mutation($input: ${type}!) { ${field}(input: $input) ${SELECTOR_RESULT} }`, { input });
    return data[field];
  }

  /**
   * One workflow as it is now, or null when this app and environment have no workflow of that id.
   * `input`, `output` and `queries` stay JSON strings here.
   * @example
   * const wf = await baton.workflow('demo', 'dev', id);
   * if (wf?.state === 'FAILED') console.error(wf.error);
   */
  async workflow(appId: string, environment: string, id: string): Promise<WorkflowSummary | null> {
    const data = await this.request<{ workflow: WorkflowSummary | null }>(
      `query($appId: String!, $environment: String!, $id: ID!) { workflow(appId: $appId, environment: $environment, id: $id) ${WORKFLOW_FIELDS} }`,
      { appId, environment, id },
    );
    return data.workflow;
  }

  /**
   * A workflow's history: its events in order, as stored, each with its `data` parsed from JSON.
   *
   * Without `first`, answers every event from `fromRevision` (default 0) to the end, reading the
   * history in pages of 1,000 events (one request each) until a page comes back short; events
   * appended while it reads may be included. A page the service cannot answer within its
   * response limit (`PAYLOAD_TOO_LARGE`: large results) is asked for again half as long, down to
   * one event a request. With `first`, answers one page: at most `first`
   * events (1 to 10,000) from `fromRevision`, in one request; page on with
   * `fromRevision: lastEvent.revision + 1` until fewer than `first` come back.
   * @param options - `fromRevision`: first revision to answer (default 0); `first`: answer this one
   *   page of at most `first` events instead of the whole rest of the history.
   * @returns The events: `revision` (index in the history, from 0), `type` (e.g.
   *   `WorkflowDispatched`, `TaskCompleted`), `data` and `recordedAt` (ISO 8601).
   * @throws {@link BatonRequestError} `NOT_FOUND` when there is no such workflow, `BAD_USER_INPUT`
   *   for a `first` outside 1 to 10,000 or a negative `fromRevision`.
   * @example
   * const history = await baton.workflowHistory('demo', 'dev', id);
   * const tasksDone = history.filter((e) => e.type === 'TaskCompleted').length;
   * // Or one page at a time:
   * const page = await baton.workflowHistory('demo', 'dev', id, { fromRevision: 0, first: 100 });
   */
  async workflowHistory(
    appId: string,
    environment: string,
    id: string,
    options: { fromRevision?: number; first?: number } = {},
  ): Promise<Array<{ revision: number; type: string; data: unknown; recordedAt: string }>> {
    const page = async (fromRevision: number, first: number) => {
      const data = await this.request<{ workflowHistory: Array<{ revision: number; type: string; data: string; recordedAt: string }> }>(
        'query($appId: String!, $environment: String!, $id: ID!, $fromRevision: Int, $first: Int) { workflowHistory(appId: $appId, environment: $environment, id: $id, fromRevision: $fromRevision, first: $first) { revision type data recordedAt } }',
        { appId, environment, id, fromRevision, first },
      );
      return data.workflowHistory.map((e) => ({ ...e, data: JSON.parse(e.data) as unknown }));
    };
    const from = options.fromRevision ?? 0;
    if (options.first !== undefined) return page(from, options.first);
    const events: Array<{ revision: number; type: string; data: unknown; recordedAt: string }> = [];
    for (let next = from, size = HISTORY_PAGE; ; ) {
      let batch;
      try {
        batch = await page(next, size);
      } catch (error) {
        // Large events (big task results): a page the service cannot answer within its response
        // limit is asked for again, half as long, and the rest is read in pages of that length.
        if (error instanceof BatonRequestError && error.code === 'PAYLOAD_TOO_LARGE' && size > 1) {
          size = Math.ceil(size / 2);
          continue;
        }
        throw error;
      }
      for (const event of batch) events.push(event);
      if (batch.length < size) return events;
      next = batch[batch.length - 1].revision + 1;
    }
  }
}
