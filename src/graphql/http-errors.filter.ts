import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Socket } from 'node:net';

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

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (a control byte in a header → 400,
 * headers over the size limit → 431, a slow request → 408), answered on the raw socket in the same
 * GraphQL shape, with a code. Installed as Fastify's `clientErrorHandler`.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed || !socket.writable) return;
  const [status, label, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', 'PAYLOAD_TOO_LARGE', 'request headers exceed the size limit']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'BAD_REQUEST', 'request not received in time']
        : [400, 'Bad Request', 'BAD_REQUEST', 'malformed HTTP request (bad request line or header, e.g. a control character in a header value)'];
  const body = JSON.stringify({ errors: [{ message, extensions: { code } }] });
  socket.end(`HTTP/1.1 ${status} ${label}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n${body}`);
}

/**
 * Fastify's own refusals before routing (a URL that is not valid percent-encoding, …): 400 in the
 * GraphQL shape. Installed as Fastify's `frameworkErrors`.
 */
export function answerFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
  void reply
    .code(status)
    .type('application/json')
    .send({ errors: [{ message: error.code === 'FST_ERR_BAD_URL' ? 'the request URL is not valid' : 'malformed request', extensions: { code: CODES[status] ?? 'BAD_REQUEST' } }] });
}
