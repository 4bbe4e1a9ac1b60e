import { Logger } from '@nestjs/common';
import { ASTNode, ArgumentNode, DefinitionNode, GraphQLError, GraphQLFormattedError, Kind, ObjectFieldNode, Source, ValueNode, parse, visit } from 'graphql';
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
  // Apollo's own refusals of a persisted-query request carry no code: they are the client's mistake.
  if (error instanceof GraphQLError && !error.originalError && PERSISTED_QUERY_REFUSALS.has(error.message)) {
    return { message: error.message, extensions: { code: 'BAD_REQUEST' } };
  }
  const code = formatted.extensions?.code;
  if (typeof code === 'string' && PASS_THROUGH.has(code)) {
    // A stack overflow (while parsing or validating a document, or coercing a value) is never worded as one.
    if (STACK_OVERFLOW.test(formatted.message)) {
      return { message: 'the document, or a value in it, is nested too deeply', path, extensions: { code, limit: 'depth' } };
    }
    const field = code === 'BAD_USER_INPUT' ? offendingField(formatted.message, error) : code === 'GRAPHQL_VALIDATION_FAILED' ? argumentField(formatted.message, error) : undefined;
    const limit = typeof formatted.extensions?.limit === 'string' ? formatted.extensions.limit : undefined;
    return { message: formatted.message, locations: formatted.locations, path, extensions: { code, ...(field ? { field } : {}), ...(limit ? { limit } : {}) } };
  }
  logger.error(original instanceof Error ? (original.stack ?? original.message) : String(original));
  return { message: 'Internal server error', path, extensions: { code: 'INTERNAL_SERVER_ERROR' } };
}

/** The messages of Apollo's GraphQLErrors (without a code) refusing a persisted-query request. */
const PERSISTED_QUERY_REFUSALS = new Set(['provided sha does not match query', 'Unsupported persisted query version']);

const STACK_OVERFLOW = /maximum call stack size exceeded/i;

/**
 * The field a variable-coercion message complains about, as a dotted path. A variable bound to one
 * argument is named after it (`$n` in `first: $n` → `first`; `$f` in `filter: $f` with a bad
 * `state` → `filter.state`); otherwise after the variable. Fields inside a mutation's `input`
 * are named relative to it (`name`, `tags[0]`), as Baton's own input errors name them, and
 * `input` itself when the value as a whole is wrong.
 */
function offendingField(message: string, error: unknown): string | undefined {
  const variable = /^Variable "\$([_A-Za-z][_0-9A-Za-z]*)"/.exec(message)?.[1];
  if (!variable) return /Field "([^"]+)"/.exec(message)?.[1];
  const at = new RegExp(`at "${variable}((?:\\.[_A-Za-z][_0-9A-Za-z]*|\\[\\d+\\])*)"`).exec(message)?.[1] ?? '';
  const named = /Field "([^"]+)"/.exec(message)?.[1];
  const inner = at && named && !at.endsWith(named) ? `${at}.${named}` : at || (named ? `.${named}` : '');
  const bound = error instanceof GraphQLError ? argumentBoundTo(error, variable) : undefined;
  return bound ? relativeToInput(bound.argument, `${bound.inner}${inner}`) : relativeToInput(variable, inner);
}

/**
 * The argument a validation error's first location lies in the value of, as a dotted path down
 * its input fields and list items (`first`, `filter.state`); undefined for an error elsewhere
 * (or on a variable, which is named when its value is coerced).
 */
function argumentField(message: string, error: unknown): string | undefined {
  if (!(error instanceof GraphQLError)) return undefined;
  const position = error.positions?.[0];
  const args = error.source && position !== undefined ? argumentsOf(error.source) : undefined;
  if (!args || position === undefined) return undefined;
  const within = (node: ASTNode) => !!node.loc && node.loc.start <= position && position < node.loc.end;
  const argument = args.find((a) => within(a.node.value))?.node;
  if (!argument || argument.value.kind === Kind.VARIABLE) return undefined;
  let inner = '';
  let value: ValueNode | undefined = argument.value;
  while (value) {
    if (value.kind === Kind.OBJECT) {
      const field: ObjectFieldNode | undefined = value.fields.find(within);
      if (field) inner += `.${field.name.value}`;
      value = field?.value;
    } else if (value.kind === Kind.LIST) {
      const index: number = value.values.findIndex(within);
      if (index >= 0) inner += `[${index}]`;
      value = index >= 0 ? value.values[index] : undefined;
    } else {
      value = undefined;
    }
  }
  // `Field "WorkflowFilterInput.appId" of required type "String!" was not provided.`
  const missing = /^Field "(?:[_A-Za-z][_0-9A-Za-z]*\.)?([_A-Za-z][_0-9A-Za-z]*)" of required type .* was not provided\.$/.exec(message)?.[1];
  if (missing) inner += `.${missing}`;
  return relativeToInput(argument.name.value, inner);
}

/** `root` and the path under it (`.a[0].b`); under a mutation's `input`, the path alone. */
function relativeToInput(root: string, inner: string): string {
  if (root === 'input' && inner.startsWith('.')) return inner.slice(1);
  return `${root}${inner}`;
}

/**
 * The one place `$variable` stands in the operation that declares it (and the fragments): an
 * argument it is the whole value of (`first: $n`), or a field or list item inside an argument's
 * literal value (`filter: { appId: "demo", state: $s }` → `filter` and `.state`). Undefined when it
 * stands in several places.
 */
function argumentBoundTo(error: GraphQLError, variable: string): { argument: string; inner: string } | undefined {
  const position = error.positions?.[0];
  const args = error.source && position !== undefined ? argumentsOf(error.source) : undefined;
  if (!args || position === undefined) return undefined;
  const places = new Map<string, { argument: string; inner: string }>();
  const walk = (argument: string, value: ValueNode, inner: string): void => {
    if (value.kind === Kind.VARIABLE) {
      if (value.name.value === variable) places.set(`${argument}${inner}`, { argument, inner });
    } else if (value.kind === Kind.OBJECT) {
      for (const field of value.fields) walk(argument, field.value, `${inner}.${field.name.value}`);
    } else if (value.kind === Kind.LIST) {
      value.values.forEach((item, index) => walk(argument, item, `${inner}[${index}]`));
    }
  };
  for (const { node, definition } of args) {
    const declaring = definition.kind === Kind.OPERATION_DEFINITION && !!definition.loc && definition.loc.start <= position && position < definition.loc.end;
    if (declaring || definition.kind === Kind.FRAGMENT_DEFINITION) walk(node.name.value, node.value, '');
  }
  return places.size === 1 ? [...places.values()][0] : undefined;
}

interface ArgumentIn {
  node: ArgumentNode;
  /** The operation or fragment that holds it. */
  definition: DefinitionNode;
}

/**
 * Every argument of the document an error's locations point into, parsed again once per request
 * (all errors of one request share its Source, so a request with many errors costs one parse
 * and one walk). The document's size was checked before Apollo parsed it the first time.
 */
const argumentsBySource = new WeakMap<Source, ArgumentIn[] | null>();
function argumentsOf(source: Source): ArgumentIn[] | undefined {
  if (!argumentsBySource.has(source)) {
    let args: ArgumentIn[] | null = [];
    try {
      for (const definition of parse(source).definitions) {
        visit(definition, {
          Argument(node) {
            args!.push({ node, definition });
          },
        });
      }
    } catch {
      args = null;
    }
    argumentsBySource.set(source, args);
  }
  return argumentsBySource.get(source) ?? undefined;
}
