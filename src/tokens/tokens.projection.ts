import { Inject } from '@nestjs/common';
import { DurableProjection, ReadModel, StoredEvent } from '../event-store/event-registry.js';
import { READ_MODEL_DB, ReadModelDb } from '../event-store/read-model-db.js';
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

interface Row {
  token_id: string;
  apps: string;
  environments: string | null;
  label: string | null;
  created_at: string;
  revoked_at: string | null;
  secret_hash: string;
  role: string | null;
}

/** The outcome of a token check: who it is, or why not (`unknown`: this instance has no such token yet). */
export type Authentication = { principal: Principal; reason?: undefined } | { principal: null; reason: 'malformed' | 'unknown' | 'revoked' | 'mismatch' };

/** Most verified tokens remembered (`TokensReadModel.check`); past it the memory starts afresh. */
const MAX_VERIFIED = 10_000;

/** Every token's hash and scope (`rm_tokens`), for authenticating requests on this instance. */
@ReadModel(TOKEN_EVENT_TYPES)
export class TokensReadModel implements DurableProjection {
  private stmt!: ReturnType<TokensReadModel['prepare']>;
  /** Tokens whose secret was checked against their row's hash, with the principal built then. */
  private readonly verified = new Map<string, { hash: string; apps: string; environments: string | null; role: string | null; principal: Principal }>();

  constructor(@Inject(READ_MODEL_DB) private readonly rm: ReadModelDb) {}

  migrate(): void {
    this.rm.db.exec(`
      CREATE TABLE IF NOT EXISTS rm_tokens (
        token_id     TEXT PRIMARY KEY,
        apps         TEXT NOT NULL,
        environments TEXT,
        label        TEXT,
        created_at   TEXT NOT NULL,
        revoked_at   TEXT,
        secret_hash  TEXT NOT NULL,
        role         TEXT
      );
    `);
    this.stmt = this.prepare();
  }

  private prepare() {
    const db = this.rm.db;
    return {
      get: db.prepare<[string], Row>('SELECT * FROM rm_tokens WHERE token_id = ?'),
      insert: db.prepare(
        `INSERT OR IGNORE INTO rm_tokens (token_id, apps, environments, label, created_at, revoked_at, secret_hash, role)
         VALUES (@token_id, @apps, @environments, @label, @created_at, NULL, @secret_hash, @role)`,
      ),
      revoke: db.prepare<[string, string]>('UPDATE rm_tokens SET revoked_at = ? WHERE token_id = ?'),
      ever: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM rm_tokens'),
    };
  }

  /**
   * Every request: the token's row is read each time (a revocation by any instance sharing the
   * file counts at once); the SHA-256 check and the principal are reused while the row still
   * holds the same hash and scope (`verified`).
   */
  check(token: string): Authentication {
    const parsed = parseToken(token);
    if (!parsed) return { principal: null, reason: 'malformed' };
    const row = this.stmt.get.get(parsed.tokenId);
    if (!row) return { principal: null, reason: 'unknown' };
    if (row.revoked_at !== null) return { principal: null, reason: 'revoked' };
    const known = this.verified.get(token);
    if (known && known.hash === row.secret_hash && known.apps === row.apps && known.environments === row.environments && known.role === row.role) {
      return { principal: known.principal };
    }
    if (!secretMatches(parsed.secret, row.secret_hash)) return { principal: null, reason: 'mismatch' };
    const principal: Principal = Object.freeze({
      tokenId: row.token_id,
      apps: Object.freeze(JSON.parse(row.apps) as string[]) as string[],
      environments: row.environments === null ? null : (Object.freeze(JSON.parse(row.environments) as string[]) as string[]),
      role: (row.role as TokenRole | null) ?? DEFAULT_ROLE,
    });
    if (this.verified.size >= MAX_VERIFIED) this.verified.clear();
    this.verified.set(token, { hash: row.secret_hash, apps: row.apps, environments: row.environments, role: row.role, principal });
    return { principal };
  }

  /**
   * Whether the token is still valid: known and not revoked (its row, read now). For a request
   * that was authenticated and then waits (a worker's long poll, `awaitWorkflow`): it checks
   * again before it acts, so a revocation stops what the token's parked requests would do next.
   */
  isActive(tokenId: string): boolean {
    const row = this.stmt.get.get(tokenId);
    return row !== undefined && row.revoked_at === null;
  }

  /** The label given to a token when it was created, if any. */
  label(tokenId: string): string | null {
    return this.stmt.get.get(tokenId)?.label ?? null;
  }

  authenticate(token: string): Principal | null {
    return this.check(token).principal;
  }

  /** Whether any token was ever created on this store, revoked ones included. */
  get everIssued(): boolean {
    return this.stmt.ever.get()!.n > 0;
  }

  project(stored: StoredEvent): void {
    const event = { type: stored.type, data: stored.data } as TokenEvent;
    switch (event.type) {
      case 'ApiTokenCreated': {
        const d = event.data;
        this.stmt.insert.run({
          token_id: d.tokenId,
          apps: JSON.stringify(d.apps),
          environments: d.environments === null ? null : JSON.stringify(d.environments),
          label: d.label,
          created_at: d.createdAt,
          secret_hash: d.secretHash,
          role: d.role ?? DEFAULT_ROLE,
        });
        return;
      }
      case 'ApiTokenRevoked':
        this.stmt.revoke.run(event.data.revokedAt, event.data.tokenId);
        return;
    }
  }
}
