/**
 * What a token may do. `admin` everything; `operator` read and control (dispatch, schedule,
 * pause, resume, terminate, send events, retry); `read-only` queries only; `worker` the worker
 * protocol only. A token created before roles existed has none recorded and is `admin`.
 * Apart from roles.ts (the guard, which needs Nest) so that the CLI can name them without loading Nest.
 */
export const TOKEN_ROLES = ['admin', 'operator', 'read-only', 'worker'] as const;
export type TokenRole = (typeof TOKEN_ROLES)[number];
export const DEFAULT_ROLE: TokenRole = 'admin';
