import { Logger } from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ReadFence } from '../event-store/read-fence.js';
import { type Clock, systemClock } from '../shared/clock.js';
import { StoreUnavailable } from '../shared/errors.js';
import { ThrottledLog } from '../shared/throttled-log.js';
import { Principal, TokensReadModel } from './tokens.projection.js';

/** Header a client sends back (the `x-baton-position` of an earlier answer) to read at least that far on any instance. */
export const MIN_POSITION_HEADER = 'x-baton-min-position';
/** Header of every /graphql answer: the log position it reflects (written or read to). */
export const POSITION_HEADER = 'x-baton-position';

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    /**
     * Charges `count` more requests to the token's rate limit (a request's further root fields:
     * rootFieldRateLimitPlugin); seconds to wait when that goes past the limit, else 0.
     */
    chargeRequests?: (tokenId: string, count: number) => number;
  }
}

/** Fixed one-minute windows per token, on this instance. */
class RateLimiter {
  private windowStart = 0;
  private counts = new Map<string, number>();
  constructor(private readonly perMinute: number) {}

  /**
   * Counts `cost` requests; seconds to wait, or 0 when they may go ahead. With `refundRefused`,
   * a charge that does not fit is not kept: the further root fields of a refused request never
   * ran, and charging them left the token refused for the rest of the minute though it had
   * room for a smaller request (the request itself was counted when it arrived, as any refused one is).
   */
  take(key: string, now = Date.now(), cost = 1, refundRefused = false): number {
    if (this.perMinute === 0) return 0;
    const window = Math.floor(now / 60_000) * 60_000;
    if (window !== this.windowStart) {
      this.windowStart = window;
      this.counts = new Map();
    }
    const count = (this.counts.get(key) ?? 0) + cost;
    const refused = count > this.perMinute;
    if (!refused || !refundRefused) this.counts.set(key, count);
    return refused ? Math.ceil((window + 60_000 - now) / 1000) : 0;
  }
}

/**
 * A client hammering with an unknown token (revoked and purged, from another store) writes one line
 * per token id a minute, with its count; 10,000 ids remembered at most, 100 lines a minute over all.
 */
export const UNKNOWN_TOKEN_LOG = { intervalMs: 60_000, maxKeys: 10_000, maxLinesPerInterval: 100 };

/** `extra` adds fields to `extensions`, e.g. `{ field }` for BAD_USER_INPUT (as BadUserInputError carries it). */
export function graphqlError(reply: FastifyReply, status: number, code: string, message: string, extra: Record<string, string> = {}): FastifyReply {
  return reply.code(status).type('application/json').send({ errors: [{ message, extensions: { code, ...extra } }] });
}

/**
 * Every request that reaches the GraphQL route carries `Authorization: Bearer <token>`, whatever
 * its shape: the check keys on the route Fastify matched (`routeOptions.url`), not on the raw URL,
 * so a percent-encoded path, an absolute-form target, a fragment, a query string, GET, HEAD and
 * OPTIONS are all authenticated and rate limited alike. The one exception is the explorer page: a
 * GET (or HEAD) with no query string at all that asks for HTML, which Apollo answers with the
 * landing page and which cannot carry an operation. A missing, malformed, unknown or revoked token
 * is answered 401 before GraphQL runs; the scope check per `appId` happens in the resolvers (FORBIDDEN).
 */
export function installAuth(
  app: FastifyInstance,
  tokens: TokensReadModel,
  rateLimitPerMinute: number,
  fence: () => ReadFence,
  clock: Clock = systemClock,
  graphqlPath = '/graphql',
  ownReadModels = false,
): void {
  const limiter = new RateLimiter(rateLimitPerMinute);
  // One function for every request (set on the request, not made for it).
  const chargeRequests = rateLimitPerMinute > 0 ? (tokenId: string, count: number) => limiter.take(tokenId, clock.now(), count, true) : undefined;
  const logger = new Logger('Auth');
  // Keyed by the token id the client sent, the one thing an operator can act on ("which client still
  // uses this token?"). Keying by address would merge every client behind one proxy, and with
  // trustProxy the address is whatever X-Forwarded-For says, as attacker-chosen as a token id;
  // against ids that never repeat the line budget per interval is what holds.
  const unknownTokens = new ThrottledLog(clock, (line) => logger.log(line), UNKNOWN_TOKEN_LOG);
  const storeReadFailures = new ThrottledLog(clock, (line) => logger.warn(line), UNKNOWN_TOKEN_LOG);
  // The request's context (request-hooks.ts) collects the position it wrote or read to.
  app.addHook('onSend', async (request, reply, payload) => {
    const position = request.batonContext?.position ?? -1n;
    if (position >= 0n && request.routeOptions.url === graphqlPath) reply.header(POSITION_HEADER, position.toString());
    return payload;
  });
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.url !== graphqlPath) return;
    if (isLandingPageRequest(request)) {
      // The page's own policy is a <meta> tag, where browsers ignore frame-ancestors: without
      // these headers any site could frame the page that takes the token and runs operations.
      reply.header('Content-Security-Policy', "frame-ancestors 'none'").header('X-Frame-Options', 'DENY').header('X-Content-Type-Options', 'nosniff');
      return;
    }
    const header = request.headers.authorization;
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) {
      reply.header('WWW-Authenticate', 'Bearer');
      return graphqlError(reply, 401, 'UNAUTHENTICATED', 'missing or malformed Authorization header: expected "Bearer <token>"');
    }
    let check = tokens.check(match[1]);
    if (check.principal && ownReadModels) {
      // Read models of this instance's own (next to EventStoreDB; READ_MODEL_PATH apart from the
      // embedded store's file): a revocation another process acknowledged (`baton tokens revoke`)
      // reaches them when their projection applies it, and until then the row read above still
      // says active. The token's own stream says whether anything happened to it since: its last
      // event is read, and waited for when this instance has not applied it yet.
      const tokenId = check.principal.tokenId;
      try {
        await fence().upToStream(`apitoken-${tokenId}`);
        check = tokens.check(match[1]);
      } catch (error) {
        // The token changed and this instance's read models did not get there in time: not
        // accepted on what they say.
        if (error instanceof StoreUnavailable) return graphqlError(reply, 503, 'STORE_UNAVAILABLE', error.message);
        // The store did not answer the read: the read models' answer stands, as for every request before.
        storeReadFailures.note('token-stream', (count) => `token check: could not read token ${tokenId}'s stream (${(error as Error).message}); went by the read models${count > 1 ? ` (${count} times)` : ''}`);
      }
    }
    if (check.reason === 'unknown') {
      // Minted elsewhere (another instance, the CLI) and not read here yet: catch up with the store's head once.
      const at = await fence().upToHead().catch((error: Error) => {
        logger.warn(`token lookup: could not catch up with the store: ${error.message}`);
        return fence().position;
      });
      check = tokens.check(match[1]);
      if (check.reason === 'unknown') {
        const id = match[1].split('_')[1] ?? '?';
        unknownTokens.note(id, (count, sinceMs) =>
          sinceMs === null && count === 1
            ? `API token ${id} not found at position ${at} (its further refusals are counted, and logged at most once a minute)`
            : `API token ${id} not found at position ${at}; refused ${count} times since ${sinceMs === null ? 'first seen' : `its last line ${Math.round(sinceMs / 1000)} s ago`}`,
        );
      }
    }
    const principal = check.principal;
    if (!principal) {
      reply.header('WWW-Authenticate', 'Bearer error="invalid_token"');
      return graphqlError(reply, 401, 'UNAUTHENTICATED', 'unknown or revoked API token');
    }
    const retryAfter = limiter.take(principal.tokenId, clock.now());
    if (retryAfter > 0) {
      reply.header('Retry-After', String(retryAfter));
      return graphqlError(reply, 429, 'RATE_LIMITED', `rate limit of ${rateLimitPerMinute} requests per minute exceeded; retry after ${retryAfter}s`);
    }
    request.principal = principal;
    if (chargeRequests) request.chargeRequests = chargeRequests;
    const min = request.headers[MIN_POSITION_HEADER];
    if (typeof min === 'string' && min !== '') {
      if (!/^\d{1,19}$/.test(min)) {
        return graphqlError(reply, 400, 'BAD_USER_INPUT', `${MIN_POSITION_HEADER}: expected a log position (a whole number)`, { field: MIN_POSITION_HEADER });
      }
      try {
        // A position beyond the log's head used to hold the request 10 s before its 503, for any
        // token and any number of requests: no write ever answered it, so it is refused at once.
        if ((await fence().clientPosition(BigInt(min))) === null) {
          return graphqlError(reply, 400, 'BAD_USER_INPUT', `${MIN_POSITION_HEADER}: ${min} is beyond the store's last position; send back an x-baton-position Baton answered`, { field: MIN_POSITION_HEADER });
        }
      } catch (error) {
        if (error instanceof StoreUnavailable) return graphqlError(reply, 503, 'STORE_UNAVAILABLE', error.message);
        throw error;
      }
    }
  });
}

/**
 * A browser opening the endpoint: GET or HEAD, asking for HTML, and no query string in the sense
 * the GraphQL handler reads one (`new URL(url).search`, the very expression it uses), so there is
 * no operation, variables or persisted-query hash it could run.
 */
function isLandingPageRequest(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  if (!/\btext\/html\b/i.test(request.headers.accept ?? '')) return false;
  let search: string;
  try {
    search = new URL(request.url, 'http://localhost/').search;
  } catch {
    return false;
  }
  return search === '' && !request.url.includes('?');
}
