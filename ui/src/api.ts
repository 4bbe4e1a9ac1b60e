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

export interface Scope {
  appId: string;
  environment: string;
}

export interface HistoryEvent {
  revision: number;
  type: string;
  recordedAt: string;
  data: any;
  metadata: any;
}

export async function readHistory(kind: 'workflow' | 'schedule', scope: Scope, id: string): Promise<HistoryEvent[]> {
  const field = kind === 'workflow' ? 'workflowHistory' : 'scheduleHistory';
  const data = await gql(`query($appId: String!, $environment: String!, $id: ID!) { ${field}(appId: $appId, environment: $environment, id: $id, first: 10000) { revision type recordedAt data metadata } }`, { ...scope, id });
  return data[field].map((e: any) => ({ ...e, data: JSON.parse(e.data), metadata: JSON.parse(e.metadata) }));
}
