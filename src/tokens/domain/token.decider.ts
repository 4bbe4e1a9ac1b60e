import { Decider } from '../../shared/decider.js';
import { ConflictError, NotFoundError } from '../../shared/errors.js';
import type { TokenRole } from '../token-roles.js';

/** `apitoken-<id>`: a token's hash and scope; the token itself is never stored. */
export type TokenEvent =
  | {
      type: 'ApiTokenCreated';
      /** `role` is absent on tokens created before roles existed: they are admin tokens. */
      data: { tokenId: string; secretHash: string; apps: string[]; environments: string[] | null; label: string | null; createdAt: string; role?: TokenRole };
    }
  | { type: 'ApiTokenRevoked'; data: { tokenId: string; revokedAt: string } };

export const TOKEN_EVENT_TYPES = ['ApiTokenCreated', 'ApiTokenRevoked'] as const;

export type TokenState = { status: 'none' } | { status: 'active' | 'revoked'; tokenId: string };

export type TokenCommand =
  | { type: 'CreateToken'; tokenId: string; secretHash: string; apps: string[]; environments: string[] | null; label: string | null; role: TokenRole; now: number }
  | { type: 'RevokeToken'; now: number };

export const tokenDecider: Decider<TokenCommand, TokenEvent, TokenState> = {
  initialState: () => ({ status: 'none' }),
  decide(command, state) {
    switch (command.type) {
      case 'CreateToken':
        if (state.status !== 'none') throw new ConflictError(`token ${command.tokenId} already exists`);
        return [
          {
            type: 'ApiTokenCreated',
            data: {
              tokenId: command.tokenId,
              secretHash: command.secretHash,
              apps: command.apps,
              environments: command.environments,
              label: command.label,
              role: command.role,
              createdAt: new Date(command.now).toISOString(),
            },
          },
        ];
      case 'RevokeToken':
        if (state.status === 'none') throw new NotFoundError('token', 'in this stream');
        return state.status === 'revoked' ? [] : [{ type: 'ApiTokenRevoked', data: { tokenId: state.tokenId, revokedAt: new Date(command.now).toISOString() } }];
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'ApiTokenCreated':
        return { status: 'active', tokenId: event.data.tokenId };
      case 'ApiTokenRevoked':
        return state.status === 'none' ? state : { ...state, status: 'revoked' };
    }
  },
};
