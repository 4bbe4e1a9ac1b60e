import {
  ASTVisitor,
  FragmentDefinitionNode,
  GraphQLError,
  Kind,
  SelectionSetNode,
  ValidationContext,
} from 'graphql';

/**
 * Rejects operations nested deeper than `maxDepth` or selecting more than `maxCost` fields in
 * all (fragments expanded). Cheap, and enough to stop a hostile query before it runs.
 */
export function queryLimitsRule(maxDepth: number, maxCost: number) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    }
    const measure = (set: SelectionSetNode, depth: number, seen: Set<string>): { depth: number; cost: number } => {
      let deepest = depth;
      let cost = 0;
      for (const selection of set.selections) {
        let inner: { depth: number; cost: number } | undefined;
        if (selection.kind === Kind.FIELD) {
          cost += 1;
          // `ofType` chains (type wrappers in introspection) are bounded by the schema, not the client.
          const nested = selection.name.value === 'ofType' ? depth : depth + 1;
          if (selection.selectionSet) inner = measure(selection.selectionSet, nested, seen);
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          inner = measure(selection.selectionSet, depth, seen);
        } else {
          const name = selection.name.value;
          const fragment = fragments.get(name);
          if (fragment && !seen.has(name)) inner = measure(fragment.selectionSet, depth, new Set([...seen, name]));
        }
        if (inner) {
          deepest = Math.max(deepest, inner.depth);
          cost += inner.cost;
        }
        if (cost > maxCost) break;
      }
      return { depth: deepest, cost };
    };
    return {
      OperationDefinition(node) {
        const { depth, cost } = measure(node.selectionSet, 1, new Set());
        if (depth > maxDepth) {
          context.reportError(new GraphQLError(`query depth ${depth} exceeds the limit of ${maxDepth}`, { nodes: [node], extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit: 'depth' } }));
        } else if (cost > maxCost) {
          context.reportError(new GraphQLError(`query selects more than ${maxCost} fields`, { nodes: [node], extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit: 'cost' } }));
        }
      },
    };
  };
}
