import 'reflect-metadata';
import { LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module.js';
import { type BatonConfig } from './config/config.js';
import { batonValidationPipe } from './graphql/validation.pipe.js';
import { ProjectionRunner } from './event-store/projection-runner.js';
import { ReadFence } from './event-store/read-fence.js';
import { HttpErrorsFilter, answerClientError, answerFrameworkError } from './graphql/http-errors.filter.js';
import { installAuth } from './tokens/auth.hook.js';
import { TokensReadModel } from './tokens/tokens.projection.js';

const LEVELS: Record<BatonConfig['logLevel'], LogLevel[]> = {
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  info: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'],
};

/**
 * Builds the Nest app on Fastify: body limit, authentication before GraphQL, HTTP errors shaped
 * as GraphQL errors, validation on every input; then rebuilds the read models from the log.
 */
export async function createApp(config: BatonConfig): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: config.bodyLimitBytes,
    trustProxy: true,
    clientErrorHandler: answerClientError,
    frameworkErrors: answerFrameworkError,
  });
  const fastify = adapter.getInstance();
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.with(config), adapter, {
    logger: LEVELS[config.logLevel],
    bufferLogs: false,
  });
  app.useGlobalPipes(batonValidationPipe());
  app.useGlobalFilters(new HttpErrorsFilter(config.bodyLimitBytes));
  installAuth(fastify, app.get(TokensReadModel), config.rateLimitPerMinute, () => app.get(ReadFence));
  await app.init();
  await app.get(ProjectionRunner).start();
  return app;
}

