import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestMethod } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { BatonConfig } from '../config/config.js';
import { requestIdFor } from '../shared/request-context.js';

type RawRequest = IncomingMessage & { id?: string; graphqlOperation?: string };

/** Probes and scrapes are logged at debug level only, so they do not drown the request log. */
const QUIET_PATHS = /^\/(health(\/(live|ready))?|metrics)(\?|$)/;

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
        if (QUIET_PATHS.test(req.url ?? '')) return 'debug';
        if (error || res.statusCode >= 500) return 'error';
        return res.statusCode >= 400 ? 'warn' : 'info';
      },
      customProps: (req) => {
        const operation = (req as RawRequest).graphqlOperation;
        return operation ? { operation } : {};
      },
      serializers: {
        req: (req: { id: string; method: string; url: string; remoteAddress?: string }) => ({ id: req.id, method: req.method, url: req.url, remoteAddress: req.remoteAddress }),
        res: (res: ServerResponse & { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      redact: ['req.headers.authorization'],
    },
  });
}
