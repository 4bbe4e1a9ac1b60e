import type { FastifyInstance } from 'fastify';
import { REQUEST_ID_HEADER, RequestContext, currentRequestContext, runWithRequestContext } from '../shared/request-context.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's context (correlation id, log position), also its async context. */
    batonContext?: RequestContext;
  }
}
import type { MetricsService } from './metrics.service.js';

/**
 * Per-request plumbing on Fastify: the correlation id (Fastify's request id, from `x-request-id`
 * or generated) goes back in the response header and is the async context of the handler, so
 * every event the request appends carries it; each response is counted and timed by route.
 */
export function installRequestContext(app: FastifyInstance, metrics: MetricsService): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    const context: RequestContext = { correlationId: request.id, position: -1n };
    request.batonContext = context;
    runWithRequestContext(context, done);
  });
  // After the body is parsed (its stream events may run outside the request's context): the
  // handler and everything it awaits must run in it.
  app.addHook('preHandler', (request, _reply, done) => {
    const context = request.batonContext;
    if (context && currentRequestContext() !== context) runWithRequestContext(context, done);
    else done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    metrics.httpRequests.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    done();
  });
}
