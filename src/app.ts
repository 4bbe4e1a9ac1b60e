import 'reflect-metadata';
import { INestApplication, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppModule } from './app.module.js';
import { BatonConfig } from './config/config.js';
import { batonValidationPipe } from './graphql/validation.pipe.js';
import { graphqlError, installAuth } from './tokens/auth.hook.js';
import { TokensReadModel } from './tokens/tokens.projection.js';

const LEVELS: Record<BatonConfig['logLevel'], LogLevel[]> = {
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  info: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'],
};

/**
 * Builds the Nest app on Fastify: body limit, authentication before GraphQL, HTTP errors shaped
 * as GraphQL errors, validation on every input. `init` rebuilds the read models from the log.
 */
export async function createApp(config: BatonConfig): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({ bodyLimit: config.bodyLimitBytes, trustProxy: true });
  const fastify = adapter.getInstance();
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.with(config), adapter, {
    logger: LEVELS[config.logLevel],
    bufferLogs: false,
  });
  app.useGlobalPipes(batonValidationPipe());
  installAuth(fastify, app.get(TokensReadModel), config.rateLimitPerMinute);
  await app.init();
  // After init: Nest installs its own exception layer while resolving routes.
  fastify.setErrorHandler((error: FastifyError, _request: FastifyRequest, reply: FastifyReply) => {
    if (error.statusCode === 413) {
      return graphqlError(reply, 413, 'PAYLOAD_TOO_LARGE', `request body exceeds the limit of ${config.bodyLimitBytes} bytes`);
    }
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return graphqlError(reply, error.statusCode, 'BAD_REQUEST', error.message);
    }
    reply.log.error(error);
    return graphqlError(reply, 500, 'INTERNAL_SERVER_ERROR', 'Internal server error');
  });
  return app;
}

export type BatonApp = INestApplication;
