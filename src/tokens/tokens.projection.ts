import { Injectable } from '@nestjs/common';
import type { IEventHandler } from '@nestjs/cqrs';
import { Projection, StoredEvent } from '../event-store/event-registry.js';
import { TOKEN_EVENT_TYPES, TokenEvent } from './domain/token.decider.js';
import { DEFAULT_ROLE, TokenRole } from './roles.js';
import { parseToken, secretMatches } from './token-secrets.js';

export interface TokenView {
  tokenId: string;
  apps: string[];
  environments: string[] | null;
  label: string | null;
  role: TokenRole;
  createdAt: string;
  revokedAt: string | null;
  secretHash: string;
}

/** Who a request acts as, once its token checked out. */
export interface Principal {
  tokenId: string;
  apps: string[];
  environments: string[] | null;
  /** What the token may do (see roles.ts). */
  role: TokenRole;
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
    return { tokenId: view.tokenId, apps: view.apps, environments: view.environments, role: view.role };
  }

  get activeCount(): number {
    let n = 0;
    for (const t of this.tokens.values()) if (t.revokedAt === null) n++;
    return n;
  }
}

@Projection(TOKEN_EVENT_TYPES)
export class TokensProjection implements IEventHandler<StoredEvent> {
  constructor(private readonly model: TokensReadModel) {}

  handle(stored: StoredEvent): void {
    const event = { type: stored.type, data: stored.data } as TokenEvent;
    switch (event.type) {
      case 'ApiTokenCreated':
        this.model.tokens.set(event.data.tokenId, { ...event.data, role: event.data.role ?? DEFAULT_ROLE, revokedAt: null });
        return;
      case 'ApiTokenRevoked': {
        const view = this.model.tokens.get(event.data.tokenId);
        if (view) view.revokedAt = event.data.revokedAt;
        return;
      }
    }
  }
}
