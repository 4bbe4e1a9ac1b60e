import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import type { FastifyRequest } from 'fastify';
import {
  type DirectiveNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  GraphQLError,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  Kind,
  type OperationDefinitionNode,
  getDirectiveValues,
} from 'graphql';
import { fieldsOf } from '../graphql/answer-budget.js';
import { RateLimitedError } from '../shared/errors.js';

/**
 * Every root field of an operation counts against the token's rate limit as a request of its own.
 * The auth hook counts the request itself before its body is parsed; once Apollo has picked the
 * operation, this charges its further root fields (aliases and root-level fragments included; those
 * `@skip` or `@include` leave out, with the request's variables, are not), so
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
        async didResolveOperation({ operation, document, contextValue, request: graphqlRequest }) {
          const request = (contextValue as { req?: FastifyRequest }).req;
          if (!request?.chargeRequests || !request.principal || !operation) return;
          const fields = rootFieldCount(operation, document, graphqlRequest.variables);
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

/** An operation's count when no `@skip` or `@include` decides it; `conditional` when one does (counted per request). */
const counts = new WeakMap<OperationDefinitionNode, number | 'conditional'>();

/**
 * The operation's root fields that run, through fragments: a field, inline fragment or fragment
 * spread that `@skip(if: true)` or `@include(if: false)` leaves out is not counted (with the
 * request's variables). Apollo keeps each parsed document, so an operation without such
 * directives is counted once.
 */
export function rootFieldCount(operation: OperationDefinitionNode, document: DocumentNode, variables: Record<string, unknown> = {}): number {
  const known = counts.get(operation);
  if (typeof known === 'number') return known;
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition;
  const walk = { conditional: false };
  const count = fieldsOf([operation.selectionSet], fragments, (selection) => included(selection.directives, variables, walk)).length;
  if (known === undefined) counts.set(operation, walk.conditional ? 'conditional' : count);
  return count;
}

/** Whether `@skip`/`@include` keep a selection (as graphql-js decides it); one it cannot read is counted. */
function included(directives: readonly DirectiveNode[] | undefined, variables: Record<string, unknown>, walk: { conditional: boolean }): boolean {
  if (!directives?.some((d) => d.name.value === 'skip' || d.name.value === 'include')) return true;
  walk.conditional = true;
  const node = { directives };
  try {
    if (getDirectiveValues(GraphQLSkipDirective, node, variables)?.if === true) return false;
    if (getDirectiveValues(GraphQLIncludeDirective, node, variables)?.if === false) return false;
  } catch {
    // A variable the request did not give as a Boolean: execution refuses it; counted meanwhile.
  }
  return true;
}
