import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';

const CODES: Record<number, string> = { 413: 'PAYLOAD_TOO_LARGE', 429: 'RATE_LIMITED', 401: 'UNAUTHENTICATED', 403: 'FORBIDDEN', 404: 'NOT_FOUND' };

/**
 * Errors raised before GraphQL runs (body too large, malformed JSON, unknown route) answered
 * in the same shape as GraphQL errors, with a stable code and no stack. Errors inside GraphQL
 * operations pass through to the GraphQL error formatter.
 */
@Catch()
export class HttpErrorsFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  constructor(private readonly bodyLimitBytes: number) {}

  catch(exception: unknown, host: ArgumentsHost): unknown {
    if (host.getType<string>() !== 'http') return exception;
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const status =
      exception instanceof HttpException
        ? exception.getStatus()
        : typeof (exception as { statusCode?: unknown }).statusCode === 'number'
          ? (exception as { statusCode: number }).statusCode
          : 500;
    // A failed health check (terminus) answers 503 with its own report, which probes and operators read.
    const body = exception instanceof HttpException ? exception.getResponse() : undefined;
    if (status === 503 && typeof body === 'object' && body !== null && 'details' in body) {
      return reply.code(503).type('application/json').send(body);
    }
    let message = exception instanceof Error ? exception.message : 'error';
    let code = CODES[status] ?? (status >= 500 ? 'INTERNAL_SERVER_ERROR' : 'BAD_REQUEST');
    if (status === 413) message = `request body exceeds the limit of ${this.bodyLimitBytes} bytes`;
    if (status >= 500) {
      this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
      message = 'Internal server error';
      code = 'INTERNAL_SERVER_ERROR';
    }
    return reply.code(status).type('application/json').send({ errors: [{ message, extensions: { code } }] });
  }
}
