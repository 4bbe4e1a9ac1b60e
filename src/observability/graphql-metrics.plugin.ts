import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import { Plugin } from '@nestjs/apollo';
import type { FastifyRequest } from 'fastify';
import { Kind, type OperationDefinitionNode } from 'graphql';
import { MetricsService } from './metrics.service.js';

/**
 * Names a GraphQL operation by its root field (`dispatchWorkflow`, `pollWork`), or, for several,
 * by the first of them in alphabetical order followed by `,…` (`workflow,…`): at most two labels
 * per field of the schema, unlike client-chosen operation names, or the combinations of root
 * fields a client may send (up to three of 33 fields made 6,017 labels, each a histogram per
 * outcome). Records its duration and outcome and puts the name on the request's log line.
 */
export function operationLabel(operation: OperationDefinitionNode | undefined | null): string {
  if (!operation) return 'unparsed';
  // Apollo keeps each parsed document: the same query string brings the same node back.
  let label = labels.get(operation);
  if (label === undefined) labels.set(operation, (label = labelOf(operation)));
  return label;
}

const labels = new WeakMap<OperationDefinitionNode, string>();

function labelOf(operation: OperationDefinitionNode): string {
  const fields = operation.selectionSet.selections.flatMap((s) => (s.kind === Kind.FIELD ? [s.name.value] : []));
  if (fields.length === 0) return 'fragment';
  const unique = [...new Set(fields)].sort();
  return unique.length > 1 ? `${unique[0]},…` : unique[0];
}

@Plugin()
export class GraphqlMetricsPlugin implements ApolloServerPlugin<{ req?: FastifyRequest }> {
  constructor(private readonly metrics: MetricsService) {}

  async requestDidStart(): Promise<GraphQLRequestListener<{ req?: FastifyRequest }>> {
    const started = process.hrtime.bigint();
    const metrics = this.metrics;
    let operation = 'unparsed';
    let type = 'unknown';
    return {
      async didResolveOperation({ operation: node, contextValue }) {
        operation = operationLabel(node);
        type = node?.operation ?? 'unknown';
        const raw = contextValue.req?.raw as { graphqlOperation?: string } | undefined;
        if (raw) raw.graphqlOperation = operation;
      },
      async willSendResponse({ response }) {
        const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
        const outcome = errors?.length ? String(errors[0].extensions?.code ?? 'ERROR') : 'ok';
        metrics.graphqlOperations.observe({ operation, type, outcome }, Number(process.hrtime.bigint() - started) / 1e9);
      },
    };
  }
}
