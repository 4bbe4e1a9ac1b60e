import { decideAndAppend } from '../event-store/decider-runner.js';
import { type EventStore } from '../event-store/event-store.port.js';
import { uuidv7 } from '../shared/ids.js';
import { tokenDecider } from './domain/token.decider.js';
import { DEFAULT_ROLE, type TokenRole } from './token-roles.js';
import { newTokenSecret } from './token-secrets.js';

export interface CreatedToken {
  tokenId: string;
  /** Shown once; only its hash is stored. */
  token: string;
}

/** Issues a token scoped to `apps` (and, optionally, `environments`), with a role (default admin). */
export async function createToken(
  store: EventStore,
  scope: { apps: string[]; environments?: string[] | null; label?: string | null; role?: TokenRole; actor?: string },
): Promise<CreatedToken> {
  const tokenId = uuidv7();
  const { token, secretHash } = newTokenSecret(tokenId);
  await decideAndAppend(
    store,
    `apitoken-${tokenId}`,
    tokenDecider,
    {
      type: 'CreateToken',
      tokenId,
      secretHash,
      apps: scope.apps,
      environments: scope.environments ?? null,
      label: scope.label ?? null,
      role: scope.role ?? DEFAULT_ROLE,
      now: Date.now(),
    },
    { actor: scope.actor ?? 'system', appId: scope.apps[0], environment: scope.environments?.[0] ?? '*', correlationId: uuidv7() },
  );
  return { tokenId, token };
}

export async function revokeToken(store: EventStore, tokenId: string, actor = 'system'): Promise<boolean> {
  const result = await decideAndAppend(
    store,
    `apitoken-${tokenId}`,
    tokenDecider,
    { type: 'RevokeToken', now: Date.now() },
    { actor, appId: '*', environment: '*', correlationId: uuidv7() },
  );
  return result.events.length > 0;
}
