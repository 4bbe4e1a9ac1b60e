import 'reflect-metadata';
import type { FastifyInstance } from 'fastify';
import { Logger } from 'nestjs-pino';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';
import { resolve } from 'node:path';
import { type BatonConfig, readModelPath } from './config/config.js';
import { batonValidationPipe } from './graphql/validation.pipe.js';
import { ProjectionRunner } from './event-store/projection-runner.js';
import { ReadFence } from './event-store/read-fence.js';
import { HttpErrorsFilter, answerClientError, answerFrameworkError } from './graphql/http-errors.filter.js';
import { BytesInFlight } from './observability/bytes-in-flight.js';
import { MetricsService } from './observability/metrics.service.js';
import { installRequestContext } from './observability/request-hooks.js';
import { CLOCK } from './shared/clock.js';
import { requestIdFor } from './shared/request-context.js';
import { graphqlError, installAuth } from './tokens/auth.hook.js';
import { TokensReadModel } from './tokens/tokens.projection.js';


/**
 * Builds the Nest app on Fastify: JSON logs and a correlation id per request, metrics, body limit, authentication before GraphQL, HTTP errors shaped
 * as GraphQL errors, validation on every input; then rebuilds the read models from the log (or, told
 * `later`, leaves that to `startReadModels`, so that the service can listen, live and not ready, meanwhile).
 */
export async function createApp(config: BatonConfig, options: { readModels?: 'await' | 'later' } = {}): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: config.bodyLimitBytes,
    trustProxy: true,
    genReqId: requestIdFor,
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
    // `//graphql` is `/graphql`: the original client appends `/graphql` to a gateway URL that may end in `/`.
    // Authentication keys on the route matched (auth.hook.ts), so the doubled form is checked alike.
    routerOptions: { ignoreDuplicateSlashes: true },
  });
  const fastify = adapter.getInstance();
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.with(config), adapter, { bufferLogs: true });
  app.useLogger(app.get(Logger));
  app.flushLogs();
  installRequestContext(fastify, app.get(MetricsService));
  app.useGlobalPipes(batonValidationPipe());
  app.useGlobalFilters(new HttpErrorsFilter(config.bodyLimitBytes));
  // Until the read models have caught up with the log (at start), GraphQL answers 503: tokens,
  // selectors and queries read them. /health (live, and ready saying why not) and /metrics answer.
  const projections = app.get(ProjectionRunner);
  fastify.addHook('onRequest', async (request, reply) => {
    if (projections.isLive || request.routeOptions.url !== '/graphql') return;
    reply.header('Retry-After', String(STARTING_RETRY_AFTER_S));
    return graphqlError(reply, 503, 'STORE_UNAVAILABLE', 'starting: the read models are catching up with the log; retry shortly');
  });
  // Read models apart from the embedded store's file (EventStoreDB; READ_MODEL_PATH): `baton tokens
  // revoke` cannot mark them, so the token check reads the token's stream (auth.hook.ts).
  const ownReadModels = !config.eventStoreUrl.startsWith('sqlite:') || resolve(config.readModelPath) !== resolve(readModelPath(config.eventStoreUrl, {}));
  installAuth(fastify, app.get(TokensReadModel), config.rateLimitPerMinute, () => app.get(ReadFence), app.get(CLOCK), '/graphql', ownReadModels);
  installAdmission(fastify, app.get(BytesInFlight), config.bodyLimitBytes);
  await app.init();
  if (options.readModels !== 'later') await startReadModels(app);
  return app;
}

/** Catches the read models up with the log and goes live (`createApp` does it unless told `later`). */
export function startReadModels(app: NestFastifyApplication): Promise<void> {
  return app.get(ProjectionRunner).start();
}

const STARTING_RETRY_AFTER_S = 5;

/**
 * Admits each authenticated GraphQL request against the instance's `MAX_BYTES_IN_FLIGHT`
 * (bytes-in-flight.ts), after the token check and before the body is read: its declared body (the
 * whole `BODY_LIMIT_BYTES` when it declares none), then its answer's stored values as they are
 * read. Refused: 503 `RATE_LIMITED` with `Retry-After: 1`, nothing of it run. Given back when the
 * response closes, answered or cut off.
 */
function installAdmission(fastify: FastifyInstance, bytes: BytesInFlight, bodyLimit: number): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    const context = request.batonContext;
    if (!request.principal || !context || bytes.max === 0) return done();
    const declared = request.headers['content-length'];
    const length = declared === undefined ? (request.headers['transfer-encoding'] ? bodyLimit : 0) : Math.min(Number(declared) || 0, bodyLimit);
    const held = bytes.admit(length);
    if (!held) {
      reply.header('Retry-After', '1');
      graphqlError(reply, 503, 'RATE_LIMITED', `this instance holds its most bytes of requests in flight (MAX_BYTES_IN_FLIGHT=${bytes.max}); retry shortly`, {
        limit: 'MAX_BYTES_IN_FLIGHT',
      });
      return;
    }
    context.held = held;
    reply.raw.once('close', held.release);
    done();
  });
}

