import type { FastifyInstance } from 'fastify';
import { REQUEST_ID_HEADER, runWithRequestContext } from '../shared/request-context.js';
import type { MetricsService } from './metrics.service.js';

/**
 * Per-request plumbing on Fastify: the correlation id (Fastify's request id, from `x-request-id`
 * or generated) goes back in the response header and is the async context of the handler, so
 * every event the request appends carries it; each response is counted and timed by route.
 */
export function installRequestContext(app: FastifyInstance, metrics: MetricsService): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
  // After the body is parsed (its stream events run outside any request context), so the
  // handler and everything it awaits inherit the context.
  app.addHook('preHandler', (request, _reply, done) => {
    runWithRequestContext({ correlationId: request.id }, done);
  });
  app.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequests.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    done();
  });
}
