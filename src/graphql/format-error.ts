import { Logger } from '@nestjs/common';
import { GraphQLError, GraphQLFormattedError } from 'graphql';
import { BatonError } from '../shared/errors.js';

const logger = new Logger('GraphQL');

/** Apollo's own codes that are safe to pass through as they are. */
const PASS_THROUGH = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
]);

/**
 * The one place errors become `extensions.code`. Baton's errors keep their message and code
 * (NOT_FOUND also as a top-level `type: "NOT_FOUND"`, which the original service's client reads);
 * GraphQL's own request errors pass through; anything else is logged here and answered as
 * INTERNAL_SERVER_ERROR without its message or stack.
 */
export function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const original = error instanceof GraphQLError ? (error.originalError ?? error) : error;
  const path = formatted.path;
  if (original instanceof BatonError) {
    const error: GraphQLFormattedError = { message: original.message, path, extensions: { code: original.code, ...original.details } };
    // The original service's client (npm `zenaton`) reads "nothing matched" from a top-level `type`.
    return original.code === 'NOT_FOUND' ? { ...error, type: 'NOT_FOUND' } as GraphQLFormattedError : error;
  }
  const code = formatted.extensions?.code;
  if (typeof code === 'string' && PASS_THROUGH.has(code)) {
    const field = code === 'BAD_USER_INPUT' ? offendingField(formatted.message) : undefined;
    const limit = typeof formatted.extensions?.limit === 'string' ? formatted.extensions.limit : undefined;
    return { message: formatted.message, locations: formatted.locations, path, extensions: { code, ...(field ? { field } : {}), ...(limit ? { limit } : {}) } };
  }
  logger.error(original instanceof Error ? (original.stack ?? original.message) : String(original));
  return { message: 'Internal server error', path, extensions: { code: 'INTERNAL_SERVER_ERROR' } };
}

/** The field a variable-coercion message complains about, as a dotted path. */
function offendingField(message: string): string | undefined {
  const at = /at "input\.([^"]+)"/.exec(message)?.[1];
  const named = /Field "([^"]+)"/.exec(message)?.[1];
  if (at && named && !at.endsWith(named)) return `${at}.${named}`;
  return at ?? named ?? (/"\$input"/.test(message) ? 'input' : undefined);
}
