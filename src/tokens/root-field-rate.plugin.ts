import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import type { FastifyRequest } from 'fastify';
import { type DocumentNode, type FragmentDefinitionNode, GraphQLError, Kind, type OperationDefinitionNode } from 'graphql';
import { fieldsOf } from '../graphql/answer-budget.js';
import { RateLimitedError } from '../shared/errors.js';

/**
 * Every root field of an operation counts against the token's rate limit as a request of its own.
 * The auth hook counts the request itself before its body is parsed; once Apollo has picked the
 * operation, this charges its further root fields (aliases and root-level fragments included), so
 * one request of 250 `dispatchWorkflow` aliases costs what 250 requests do. Before, the limit
 * counted HTTP requests only: `RATE_LIMIT_PER_MINUTE` bounded requests, not operations, and a
 * token could dispatch 250 times faster than the limit read.
 *
 * Over the limit, the whole request is refused before any of it runs: 429 `RATE_LIMITED`, with
 * `Retry-After`; its further root fields are then not charged (the request itself is, as any
 * refused request is), so a request too big for what is left of the minute does not also use up
 * the room a smaller one still fits in.
 */
export function rootFieldRateLimitPlugin(rateLimitPerMinute: number): ApolloServerPlugin<BaseContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, document, contextValue }) {
          const request = (contextValue as { req?: FastifyRequest }).req;
          if (!request?.chargeRequests || !request.principal || !operation) return;
          const fields = rootFieldCount(operation, document);
          if (fields <= 1) return;
          const retryAfter = request.chargeRequests(request.principal.tokenId, fields - 1);
          if (retryAfter === 0) return;
          const refusal = new RateLimitedError(
            retryAfter,
            `rate limit of ${rateLimitPerMinute} requests per minute exceeded (each root field counts, and this request has ${fields} root fields); retry after ${retryAfter}s`,
          );
          throw new GraphQLError(refusal.message, {
            originalError: refusal,
            extensions: { http: { status: 429, headers: new Map([['retry-after', String(retryAfter)]]) } },
          });
        },
      };
    },
  };
}

const counts = new WeakMap<OperationDefinitionNode, number>();

/** The operation's root fields, through fragments (Apollo keeps each parsed document: counted once). */
export function rootFieldCount(operation: OperationDefinitionNode, document: DocumentNode): number {
  let count = counts.get(operation);
  if (count === undefined) {
    const fragments: Record<string, FragmentDefinitionNode> = {};
    for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition;
    counts.set(operation, (count = fieldsOf([operation.selectionSet], fragments).length));
  }
  return count;
}
