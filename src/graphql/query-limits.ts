import {
  ASTVisitor,
  FragmentDefinitionNode,
  GraphQLError,
  GraphQLNamedType,
  GraphQLSchema,
  Kind,
  SelectionSetNode,
  ValidationContext,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
} from 'graphql';

export interface QueryLimits {
  /** Deepest selection (`MAX_QUERY_DEPTH`). */
  maxDepth: number;
  /** Most fields selected in all, aliases and fragment spreads each counted (`MAX_QUERY_COST`). */
  maxCost: number;
  /** Most values the answer may hold, each field counted once per list item it sits under (`MAX_QUERY_COMPLEXITY`). */
  maxComplexity: number;
}

/**
 * Page sizes assumed for a field with a `first` argument, when the query gives no literal: the
 * default when it is absent, the largest accepted when it is a variable (validation runs before
 * variables are known). Lists (histories) page by 1,000 up to 10,000; connections by 50 up to 500.
 */
const PAGE = { list: { absent: 1_000, variable: 10_000 }, connection: { absent: 50, variable: 500 } };

interface Measure {
  depth: number;
  cost: number;
  complexity: number;
}

/**
 * Rejects, before anything runs, operations nested deeper than `maxDepth`, selecting more than
 * `maxCost` fields (aliases and fragments expanded) or whose answer could hold more than
 * `maxComplexity` values (list sizes multiplied). All three answer GRAPHQL_VALIDATION_FAILED with
 * `extensions.limit` naming which one.
 */
export function queryLimitsRule(limits: QueryLimits) {
  const { maxDepth, maxCost, maxComplexity } = limits;
  return (context: ValidationContext): ASTVisitor => {
    const schema = context.getSchema();
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    }
    const measure = (set: SelectionSetNode, parent: GraphQLNamedType | undefined, depth: number, seen: Set<string>): Measure => {
      let deepest = depth;
      let cost = 0;
      let complexity = 0;
      for (const selection of set.selections) {
        if (selection.kind === Kind.FIELD) {
          cost += 1;
          const fieldName = selection.name.value;
          const def = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[fieldName] : undefined;
          let items = 1;
          if (def?.args.some((a) => a.name === 'first')) {
            const page = isListType(getNullableType(def.type)) ? PAGE.list : PAGE.connection;
            const arg = selection.arguments?.find((a) => a.name.value === 'first');
            items = !arg ? page.absent : arg.value.kind === Kind.INT ? Math.max(0, Number(arg.value.value)) : page.variable;
          }
          let innerComplexity = 0;
          if (selection.selectionSet) {
            // `ofType` chains (type wrappers in introspection) are bounded by the schema, not the client.
            const nested = fieldName === 'ofType' ? depth : depth + 1;
            const inner = measure(selection.selectionSet, def ? getNamedType(def.type) : undefined, nested, seen);
            deepest = Math.max(deepest, inner.depth);
            cost += inner.cost;
            innerComplexity = inner.complexity;
          }
          complexity += 1 + items * innerComplexity;
        } else {
          let inner: Measure | undefined;
          if (selection.kind === Kind.INLINE_FRAGMENT) {
            inner = measure(selection.selectionSet, typeOf(schema, selection.typeCondition?.name.value) ?? parent, depth, seen);
          } else {
            const name = selection.name.value;
            const fragment = fragments.get(name);
            if (fragment && !seen.has(name)) {
              inner = measure(fragment.selectionSet, typeOf(schema, fragment.typeCondition.name.value) ?? parent, depth, new Set([...seen, name]));
            }
          }
          if (inner) {
            deepest = Math.max(deepest, inner.depth);
            cost += inner.cost;
            complexity += inner.complexity;
          }
        }
        // Stop early: fragments spread in fragments could otherwise make this walk exponential.
        if (cost > maxCost || complexity > maxComplexity || deepest > maxDepth) break;
      }
      return { depth: deepest, cost, complexity };
    };
    return {
      OperationDefinition(node) {
        const root = node.operation === 'mutation' ? schema.getMutationType() : node.operation === 'query' ? schema.getQueryType() : undefined;
        const { depth, cost, complexity } = measure(node.selectionSet, root ?? undefined, 1, new Set());
        if (depth > maxDepth) {
          context.reportError(new GraphQLError(`query depth ${depth} exceeds the limit of ${maxDepth}`, { nodes: [node], extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit: 'depth' } }));
        } else if (cost > maxCost) {
          context.reportError(new GraphQLError(`query selects more than ${maxCost} fields`, { nodes: [node], extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit: 'cost' } }));
        } else if (complexity > maxComplexity) {
          context.reportError(
            new GraphQLError(`the answer could hold more than ${maxComplexity} values (fields times page sizes); ask for smaller pages or fewer fields`, {
              nodes: [node],
              extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit: 'complexity' },
            }),
          );
        }
      },
    };
  };
}

function typeOf(schema: GraphQLSchema, name: string | undefined): GraphQLNamedType | undefined {
  return name ? schema.getType(name) : undefined;
}

/** Baton serves queries and mutations over HTTP only: a subscription is refused before it runs. */
export function noSubscriptionsRule(context: ValidationContext): ASTVisitor {
  return {
    OperationDefinition(node) {
      if (node.operation === 'subscription') {
        context.reportError(
          new GraphQLError('subscriptions are not supported: use queries (or a worker\'s pollWork) instead', {
            nodes: [node],
            extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit: 'subscription' },
          }),
        );
      }
    },
  };
}
