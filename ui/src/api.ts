/** The dashboard's only way to the server: POST /graphql with the token the user gave. */

const TOKEN_KEY = 'baton.token';

export const getToken = (): string | null => sessionStorage.getItem(TOKEN_KEY);
export const setToken = (token: string | null): void => (token ? sessionStorage.setItem(TOKEN_KEY, token) : sessionStorage.removeItem(TOKEN_KEY));

export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

export async function gql<T = any>(query: string, variables: Record<string, unknown> = {}, token = getToken()): Promise<T> {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json().catch(() => ({ errors: [{ message: `HTTP ${response.status}`, extensions: { code: 'INTERNAL_SERVER_ERROR' } }] }));
  if (body.errors?.length) {
    const first = body.errors[0];
    throw new ApiError(first.message, first.extensions?.code ?? 'INTERNAL_SERVER_ERROR');
  }
  return body.data as T;
}

export interface Viewer {
  tokenId: string;
  role: string;
  capabilities: string[];
  apps: string[];
  environments: string[] | null;
  label: string | null;
}

export const VIEWER = '{ viewer { tokenId role capabilities apps environments label } }';

/** A type alias, not an interface: it is passed as GraphQL variables (`Record<string, unknown>`). */
export type Scope = {
  appId: string;
  environment: string;
};

export interface HistoryEvent {
  revision: number;
  type: string;
  recordedAt: string;
  data: any;
  metadata: any;
}

/** Events the dashboard reads of a history at a time: the first page shown, and each "load more". */
export const HISTORY_PAGE = 500;

/** What `readHistoryPage` read, and the request length to read on with (see there). */
export interface HistoryPage {
  events: HistoryEvent[];
  /** The history ended before `count` events (as of this read). */
  ended: boolean;
  /** The longest request the service answered: pass it to the next call. */
  size: number;
}

/**
 * Up to `count` events of a workflow's or schedule's history from `fromRevision`, in requests of
 * at most `size` events each (`fromRevision` + `first`). A request the service cannot answer
 * within its response limit (PAYLOAD_TOO_LARGE: large events, big task results) is asked for
 * again half as long, down to one event, and the rest is read at that length, as the SDK's
 * `workflowHistory` does. A history is never read in one request: it may be longer than the
 * service answers (10,000 events) or larger than its response limit.
 */
export async function readHistoryPage(kind: 'workflow' | 'schedule', scope: Scope, id: string, fromRevision: number, count: number, size = count): Promise<HistoryPage> {
  const field = kind === 'workflow' ? 'workflowHistory' : 'scheduleHistory';
  const query = `query($appId: String!, $environment: String!, $id: ID!, $fromRevision: Int!, $first: Int!) {
    ${field}(appId: $appId, environment: $environment, id: $id, fromRevision: $fromRevision, first: $first) { revision type recordedAt data metadata } }`;
  const events: HistoryEvent[] = [];
  let next = fromRevision;
  while (events.length < count) {
    const first = Math.min(size, count - events.length);
    let batch: HistoryEvent[];
    try {
      const data = await gql(query, { ...scope, id, fromRevision: next, first });
      batch = data[field].map((e: any) => ({ ...e, data: JSON.parse(e.data), metadata: JSON.parse(e.metadata) }));
    } catch (error) {
      if (error instanceof ApiError && error.code === 'PAYLOAD_TOO_LARGE' && first > 1) {
        size = Math.ceil(first / 2);
        continue;
      }
      throw error;
    }
    events.push(...batch);
    if (batch.length < first) return { events, ended: true, size };
    next = batch[batch.length - 1].revision + 1;
  }
  return { events, ended: false, size };
}
