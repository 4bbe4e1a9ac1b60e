import { Injectable } from '@nestjs/common';
import type { IEventHandler } from '@nestjs/cqrs';
import { Projection, StoredEvent } from '../event-store/event-registry.js';
import { TOKEN_EVENT_TYPES, TokenEvent } from './domain/token.decider.js';
import { parseToken, secretMatches } from './token-secrets.js';

export interface TokenView {
  tokenId: string;
  apps: string[];
  environments: string[] | null;
  label: string | null;
  createdAt: string;
  revokedAt: string | null;
  secretHash: string;
}

/** Who a request acts as, once its token checked out. */
export interface Principal {
  tokenId: string;
  apps: string[];
  environments: string[] | null;
}

/** Every token's hash and scope, for authenticating requests on this instance. */
@Injectable()
export class TokensReadModel {
  readonly tokens = new Map<string, TokenView>();

  authenticate(token: string): Principal | null {
    const parsed = parseToken(token);
    if (!parsed) return null;
    const view = this.tokens.get(parsed.tokenId);
    if (!view || view.revokedAt !== null || !secretMatches(parsed.secret, view.secretHash)) return null;
    return { tokenId: view.tokenId, apps: view.apps, environments: view.environments };
  }

  /** Whether any token was ever created on this store, revoked ones included. */
  get everIssued(): boolean {
    return this.tokens.size > 0;
  }
}

@Projection(TOKEN_EVENT_TYPES)
export class TokensProjection implements IEventHandler<StoredEvent> {
  constructor(private readonly model: TokensReadModel) {}

  handle(stored: StoredEvent): void {
    const event = { type: stored.type, data: stored.data } as TokenEvent;
    switch (event.type) {
      case 'ApiTokenCreated':
        this.model.tokens.set(event.data.tokenId, { ...event.data, revokedAt: null });
        return;
      case 'ApiTokenRevoked': {
        const view = this.model.tokens.get(event.data.tokenId);
        if (view) view.revokedAt = event.data.revokedAt;
        return;
      }
    }
  }
}
