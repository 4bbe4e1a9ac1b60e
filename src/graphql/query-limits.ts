import {
  ASTNode,
  ASTVisitor,
  FragmentDefinitionNode,
  GraphQLError,
  GraphQLNamedType,
  GraphQLSchema,
  Kind,
  Lexer,
  SelectionSetNode,
  Source,
  TokenKind,
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

/**
 * Lists whose length is a `count` argument and whose items are computed, not read: each of
 * `Schedule.nextFirings` is a cron occurrence resolved in its time zone (tens of microseconds,
 * against about one for a stored value), so each counts as `weight` values, with the largest
 * count the field takes (`max`) when it is a variable. The rule used to see only `first`, and
 * counted `nextFirings(count: 100)` as one value: 10 aliases over 500 schedules kept a request on
 * the CPU for 20 s. Now a query computes at most MAX_QUERY_COMPLEXITY / 20 firings (5,000).
 */
const COMPUTED_LISTS: Readonly<Record<string, { weight: number; max: number }>> = { nextFirings: { weight: 20, max: 100 } };

interface Measure {
  depth: number;
  cost: number;
  complexity: number;
  /** Most fragments (spread or inline) nested in one another on one path. */
  fragments: number;
  /** Most selection sets nested in one another on one path, whatever holds them. */
  nesting: number;
}

/**
 * Limits on the document's text, checked before it is parsed (`checkDocumentText`) so that neither
 * graphql-js's recursive parser and validation rules nor this file's rule can overflow the stack,
 * and so that parsing and validating one document stays cheap.
 */
export interface DocumentLimits {
  /** Most lexical tokens (also given to the parser as `maxLexicalTokens`). */
  maxTokens: number;
  /** Most brackets (`{`, `[`, `(`) open at once. */
  maxNesting: number;
  /** Most fragment definitions. */
  maxFragments: number;
}

/**
 * Derived from the query limits, with room to spare for any document those accept: a selection
 * `maxDepth` deep with an inline fragment at every level and arguments at the bottom; 40 tokens
 * for each field `maxCost` allows; at most 100 fragment definitions (and no more than `maxCost`:
 * each spread counts toward the cost). The absolute caps keep
 * graphql-js's own recursive rules (which follow chains of fragments and nested selections) far
 * from the stack's end, whatever MAX_QUERY_DEPTH and MAX_QUERY_COST say.
 */
export function documentLimits(limits: Pick<QueryLimits, 'maxDepth' | 'maxCost'>): DocumentLimits {
  return {
    maxTokens: Math.max(20_000, limits.maxCost * 40),
    maxNesting: Math.min(512, Math.max(64, limits.maxDepth * 2 + 32)),
    // graphql-js compares every pair of fields its fragments bring together: 500 fragments side
    // by side took 100–200 ms to validate here, 100 took 18 ms.
    maxFragments: Math.min(100, limits.maxCost),
  };
}

const limitError = (message: string, limit: string, nodes?: ASTNode | readonly ASTNode[]): GraphQLError =>
  new GraphQLError(message, { nodes, extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit, http: { status: 400 } } });

const tooDeep = (maxNesting: number, nodes?: ASTNode | readonly ASTNode[]): GraphQLError =>
  limitError(`document nested too deeply (more than ${maxNesting} levels)`, 'depth', nodes);

/**
 * One linear pass of graphql-js's lexer over the text (no recursion, so no depth can overflow
 * it): the error for a document with too many tokens, brackets nested too deeply or too many
 * fragment definitions, else undefined. A text the lexer refuses is left to the parser, which
 * reports the syntax error with its location.
 */
export function checkDocumentText(text: string, limits: DocumentLimits): GraphQLError | undefined {
  const lexer = new Lexer(new Source(text));
  let tokens = 0;
  let nesting = 0;
  let fragments = 0;
  try {
    for (let token = lexer.advance(); token.kind !== TokenKind.EOF; token = lexer.advance()) {
      if (++tokens > limits.maxTokens) return limitError(`document too large (more than ${limits.maxTokens} tokens)`, 'tokens');
      switch (token.kind) {
        case TokenKind.BRACE_L:
        case TokenKind.BRACKET_L:
        case TokenKind.PAREN_L:
          if (++nesting > limits.maxNesting) return tooDeep(limits.maxNesting);
          break;
        case TokenKind.BRACE_R:
        case TokenKind.BRACKET_R:
        case TokenKind.PAREN_R:
          if (nesting > 0) nesting--;
          break;
        case TokenKind.NAME:
          if (nesting === 0 && token.value === 'fragment' && ++fragments > limits.maxFragments) {
            return limitError(`document defines more than ${limits.maxFragments} fragments`, 'fragments');
          }
          break;
      }
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/**
 * Apollo's context function for the GraphQL route: refuses (400 GRAPHQL_VALIDATION_FAILED with
 * `extensions.limit`) a request whose document breaks `limits`, before Apollo parses it. Answers
 * undefined otherwise, which leaves Nest's default context (`{ req }`).
 */
export function documentLimitsContext(limits: DocumentLimits) {
  // Clients send the same few documents again and again (a worker's three, a dispatch): one that
  // passed is not lexed again. Bounded like Apollo's own document cache; long texts are not kept.
  const passed = new Set<string>();
  return (request: { body?: unknown; query?: unknown }): undefined => {
    for (const text of documentTexts(request)) {
      if (passed.has(text)) continue;
      const error = checkDocumentText(text, limits);
      if (error) throw error;
      if (text.length <= PASSED_TEXT_MAX_LENGTH) {
        if (passed.size >= PASSED_TEXTS) passed.clear();
        passed.add(text);
      }
    }
    return undefined;
  };
}

/** Documents remembered as within the limits (`documentLimitsContext`), and the longest kept. */
const PASSED_TEXTS = 1_000;
const PASSED_TEXT_MAX_LENGTH = 10_000;

/** The `query` texts of a request: its JSON body (or each operation of a batch), or GET's query string. */
function documentTexts(request: { body?: unknown; query?: unknown }): string[] {
  const texts: string[] = [];
  const add = (value: unknown) => {
    if (value && typeof value === 'object' && typeof (value as { query?: unknown }).query === 'string') texts.push((value as { query: string }).query);
  };
  if (Array.isArray(request.body)) request.body.forEach(add);
  else add(request.body);
  add(request.query);
  return texts;
}

/**
 * Rejects, before anything runs, operations nested deeper than `maxDepth`, selecting more than
 * `maxCost` fields (aliases and fragment spreads counted, fragments expanded) or whose answer
 * could hold more than `maxComplexity` values (list sizes multiplied). Fragments (spread or
 * inline) nested in one another more than `maxDepth` deep are refused as well, whatever the
 * depth of the fields they hold. All answer GRAPHQL_VALIDATION_FAILED with `extensions.limit`
 * naming which one. The walk stops as soon as one limit is passed, so its recursion stays
 * shallow; a stack overflow all the same is answered as a depth error, never a crash.
 */
export function queryLimitsRule(limits: QueryLimits) {
  const { maxDepth, maxCost, maxComplexity } = limits;
  const { maxNesting } = documentLimits(limits);
  return (context: ValidationContext): ASTVisitor => {
    const schema = context.getSchema();
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    }
    // The fragments being expanded on the current path (added on the way in, removed on the way out).
    const expanding = new Set<string>();
    const over = (m: Measure) => m.cost > maxCost || m.complexity > maxComplexity || m.depth > maxDepth || m.fragments > maxDepth || m.nesting > maxNesting;
    const measure = (set: SelectionSetNode, parent: GraphQLNamedType | undefined, depth: number, fragmentDepth: number, nesting: number): Measure => {
      const m: Measure = { depth, cost: 0, complexity: 0, fragments: fragmentDepth, nesting };
      if (over(m)) return m;
      for (const selection of set.selections) {
        if (selection.kind === Kind.FIELD) {
          m.cost += 1;
          const fieldName = selection.name.value;
          const def = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[fieldName] : undefined;
          let items = 1;
          let weight = 1;
          const computed = def && isListType(getNullableType(def.type)) && Object.hasOwn(COMPUTED_LISTS, fieldName) ? COMPUTED_LISTS[fieldName] : undefined;
          if (def?.args.some((a) => a.name === 'first')) {
            const page = isListType(getNullableType(def.type)) ? PAGE.list : PAGE.connection;
            const arg = selection.arguments?.find((a) => a.name.value === 'first');
            items = !arg ? page.absent : arg.value.kind === Kind.INT ? Math.max(0, Number(arg.value.value)) : page.variable;
          } else if (computed) {
            const arg = selection.arguments?.find((a) => a.name.value === 'count');
            const fallback = def!.args.find((a) => a.name === 'count')?.defaultValue;
            items = !arg ? (typeof fallback === 'number' ? fallback : computed.max) : arg.value.kind === Kind.INT ? Math.max(0, Number(arg.value.value)) : computed.max;
            weight = computed.weight;
          }
          let innerComplexity = 0;
          if (selection.selectionSet) {
            // `ofType` chains (type wrappers in introspection) are bounded by the schema, not the client.
            const nested = fieldName === 'ofType' ? depth : depth + 1;
            const inner = measure(selection.selectionSet, def ? getNamedType(def.type) : undefined, nested, fragmentDepth, nesting + 1);
            merge(m, inner);
            innerComplexity = inner.complexity;
          }
          m.complexity += 1 + items * weight * innerComplexity;
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          const type = typeOf(schema, selection.typeCondition?.name.value) ?? parent;
          const inner = measure(selection.selectionSet, type, depth, fragmentDepth + 1, nesting + 1);
          merge(m, inner);
          m.complexity += inner.complexity;
        } else {
          m.cost += 1;
          const name = selection.name.value;
          const fragment = fragments.get(name);
          if (fragment && !expanding.has(name)) {
            expanding.add(name);
            const inner = measure(fragment.selectionSet, typeOf(schema, fragment.typeCondition.name.value) ?? parent, depth, fragmentDepth + 1, nesting + 1);
            expanding.delete(name);
            merge(m, inner);
            m.complexity += inner.complexity;
          }
        }
        // Stop early: fragments spread in fragments could otherwise make this walk exponential.
        if (over(m)) break;
      }
      return m;
    };
    return {
      OperationDefinition(node) {
        const root = node.operation === 'mutation' ? schema.getMutationType() : node.operation === 'query' ? schema.getQueryType() : undefined;
        let m: Measure;
        try {
          expanding.clear();
          m = measure(node.selectionSet, root ?? undefined, 1, 0, 1);
        } catch (error) {
          if (!(error instanceof RangeError)) throw error;
          context.reportError(tooDeep(maxNesting, [node]));
          return;
        }
        const { depth, cost, complexity, fragments: fragmentDepth, nesting } = m;
        // The walk stops at the first level past a limit: the depths measured are "more than the limit", not the query's own.
        if (depth > maxDepth) {
          context.reportError(new GraphQLError(`query depth exceeds the limit of ${maxDepth}`, { nodes: [node], extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit: 'depth' } }));
        } else if (fragmentDepth > maxDepth) {
          context.reportError(new GraphQLError(`fragments nested more than ${maxDepth} deep (the query depth limit)`, { nodes: [node], extensions: { code: 'GRAPHQL_VALIDATION_FAILED', limit: 'depth' } }));
        } else if (nesting > maxNesting) {
          context.reportError(tooDeep(maxNesting, [node]));
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

/** Adds what a nested selection set measured (its complexity is the caller's to weigh). */
function merge(into: Measure, inner: Measure): void {
  into.depth = Math.max(into.depth, inner.depth);
  into.fragments = Math.max(into.fragments, inner.fragments);
  into.nesting = Math.max(into.nesting, inner.nesting);
  into.cost += inner.cost;
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
