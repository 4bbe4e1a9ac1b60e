import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestMethod } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { BatonConfig } from '../config/config.js';
import { requestIdFor } from '../shared/request-context.js';

type RawRequest = IncomingMessage & { id?: string; graphqlOperation?: string };

/** Probes and scrapes are logged at debug level only, so they do not drown the request log. */
const QUIET_PATHS = /^\/(health(\/(live|ready))?|metrics)(\?|$)/;

const RANK: Record<BatonConfig['logLevel'], number> = { debug: 20, info: 30, warn: 40, error: 50 };

/**
 * pino-http adds a child logger for custom properties whenever they are truthy, even `{}`: on
 * every request, and again at its end. Its type asks for an object, but only `undefined` spares
 * the child, hence the cast.
 */
const NO_PROPS = undefined as unknown as object;

/**
 * Structured JSON logs (pino) for Nest's own logging and one line per HTTP request, with the
 * request's correlation id (`reqId`), status, duration and, for GraphQL, the operation. Pretty,
 * coloured output only when stdout is a terminal (pino-pretty as a transport); JSON otherwise.
 */
export function loggingModule(config: BatonConfig) {
  return LoggerModule.forRoot({
    // Every path, including /graphql (a Fastify route of the Apollo driver, not a Nest controller).
    forRoutes: [{ path: '/*path', method: RequestMethod.ALL }],
    pinoHttp: {
      level: config.logLevel,
      transport: process.stdout.isTTY ? { target: 'pino-pretty', options: { singleLine: true, translateTime: 'SYS:HH:MM:ss.l' } } : undefined,
      genReqId: (req) => requestIdFor(req as RawRequest),
      customLogLevel: (req, res, error) => {
        const level = requestLevel(req.url, res.statusCode, error);
        // A line the logger would drop anyway is 'silent': pino-http then builds neither the line
        // nor the child logger for it (garbage that outlived the young generation, request after request).
        return RANK[level] < RANK[config.logLevel] ? 'silent' : level;
      },
      // The operation is known once the request has been parsed: at its start there is none.
      customProps: (req) => {
        const operation = (req as RawRequest).graphqlOperation;
        return operation ? { operation } : NO_PROPS;
      },
      serializers: {
        req: (req: { id: string; method: string; url: string; remoteAddress?: string }) => ({ id: req.id, method: req.method, url: req.url, remoteAddress: req.remoteAddress }),
        res: (res: ServerResponse & { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      redact: ['req.headers.authorization'],
    },
  });
}

/** The level of a request's line: probes and scrapes at debug, failures at warn or error. */
function requestLevel(url: string | undefined, statusCode: number, error: Error | undefined): BatonConfig['logLevel'] {
  if (QUIET_PATHS.test(url ?? '')) return 'debug';
  if (error || statusCode >= 500) return 'error';
  return statusCode >= 400 ? 'warn' : 'info';
}
