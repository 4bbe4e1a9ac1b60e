import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Principal, TokensReadModel } from './tokens.projection.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

/** Fixed one-minute windows per token, on this instance. */
class RateLimiter {
  private windowStart = 0;
  private counts = new Map<string, number>();
  constructor(private readonly perMinute: number) {}

  /** Seconds to wait, or 0 when the request may go ahead. */
  take(key: string, now = Date.now()): number {
    if (this.perMinute === 0) return 0;
    const window = Math.floor(now / 60_000) * 60_000;
    if (window !== this.windowStart) {
      this.windowStart = window;
      this.counts = new Map();
    }
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    return count > this.perMinute ? Math.ceil((window + 60_000 - now) / 1000) : 0;
  }
}

export function graphqlError(reply: FastifyReply, status: number, code: string, message: string): FastifyReply {
  return reply.code(status).type('application/json').send({ errors: [{ message, extensions: { code } }] });
}

/**
 * Every POST to /graphql carries `Authorization: Bearer <token>`. A missing, malformed,
 * unknown or revoked token is answered 401 before GraphQL runs; the scope check per `appId`
 * happens in the resolvers (FORBIDDEN).
 */
export function installAuth(app: FastifyInstance, tokens: TokensReadModel, rateLimitPerMinute: number): void {
  const limiter = new RateLimiter(rateLimitPerMinute);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method !== 'POST' || request.url.split('?')[0] !== '/graphql') return;
    const header = request.headers.authorization;
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) {
      reply.header('WWW-Authenticate', 'Bearer');
      return graphqlError(reply, 401, 'UNAUTHENTICATED', 'missing or malformed Authorization header: expected "Bearer <token>"');
    }
    const principal = tokens.authenticate(match[1]);
    if (!principal) {
      reply.header('WWW-Authenticate', 'Bearer error="invalid_token"');
      return graphqlError(reply, 401, 'UNAUTHENTICATED', 'unknown or revoked API token');
    }
    const retryAfter = limiter.take(principal.tokenId);
    if (retryAfter > 0) {
      reply.header('Retry-After', String(retryAfter));
      return graphqlError(reply, 429, 'RATE_LIMITED', `rate limit of ${rateLimitPerMinute} requests per minute exceeded; retry after ${retryAfter}s`);
    }
    request.principal = principal;
  });
}
