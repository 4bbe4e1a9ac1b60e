import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { GraphQLError, GraphQLFormattedError, buildSchema, execute, parse, specifiedRules, validate } from 'graphql';
import { formatError } from './format-error.js';

const schema = buildSchema(readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8'));

/** What formatError answers for the variable-coercion error of `query` with `variables`, wrapped as Apollo wraps it. */
function coercionError(query: string, variables: Record<string, unknown>): GraphQLFormattedError {
  const result = execute({ schema, document: parse(query), variableValues: variables }) as { errors?: readonly GraphQLError[] };
  expect(result.errors).toHaveLength(1);
  const raw = result.errors![0];
  const error = new GraphQLError(raw.message, { nodes: raw.nodes, originalError: raw.originalError ?? raw, extensions: { code: 'BAD_USER_INPUT' } });
  return formatError({ message: error.message, locations: error.locations, extensions: { code: 'BAD_USER_INPUT' } }, error);
}

/** What formatError answers for each validation error of `query`, wrapped as Apollo wraps them. */
function validationErrors(query: string): GraphQLFormattedError[] {
  return validate(schema, parse(query), specifiedRules).map((raw) => {
    const error = new GraphQLError(raw.message, { nodes: raw.nodes, originalError: raw.originalError ?? raw, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } });
    return formatError({ message: error.message, locations: error.locations, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }, error);
  });
}

/** The function as it was before variables other than `$input` were named: `$input`'s answers must not change. */
function previousOffendingField(message: string): string | undefined {
  const at = /at "input\.([^"]+)"/.exec(message)?.[1];
  const named = /Field "([^"]+)"/.exec(message)?.[1];
  if (at && named && !at.endsWith(named)) return `${at}.${named}`;
  return at ?? named ?? (/"\$input"/.test(message) ? 'input' : undefined);
}

const DISPATCH = 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }';
const WORKFLOWS = 'query($f: WorkflowFilterInput!, $n: Int) { workflows(filter: $f, first: $n) { totalCount } }';
const FILTER = { appId: 'demo', environment: 'dev' };

describe('formatError: the field of a variable that cannot be coerced', () => {
  it.each([
    ['a required field missing', { appId: 'demo', environment: 'dev', input: '[]' }, 'name'],
    ['a field of the wrong type', { appId: 'demo', environment: 'dev', name: 5, input: '[]' }, 'name'],
    ['an unknown field', { appId: 'demo', environment: 'dev', name: 'N', input: '[]', nope: 1 }, 'nope'],
    ['a value that is not an object', 'text', 'input'],
    ['null', null, 'input'],
  ])('$input with %s → the field inside input, as before', (_label, input, field) => {
    const formatted = coercionError(DISPATCH, { input });
    expect(formatted.extensions).toEqual({ code: 'BAD_USER_INPUT', field });
    expect(formatted.extensions?.field).toBe(previousOffendingField(formatted.message));
  });

  it('$input not given at all → input', () => {
    expect(coercionError(DISPATCH, {}).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'input' });
  });

  it('a variable bound to `first` → the argument: first', () => {
    for (const n of [1.5, 2147483648, '5']) {
      expect(coercionError(WORKFLOWS, { f: FILTER, n }).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'first' });
    }
  });

  it('a bad field inside a variable bound to `filter` → filter.<field>', () => {
    expect(coercionError(WORKFLOWS, { f: { ...FILTER, state: 'NOPE' } }).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'filter.state' });
    expect(coercionError(WORKFLOWS, { f: { environment: 'dev' } }).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'filter.appId' });
    expect(coercionError(WORKFLOWS, { f: { ...FILTER, name: { deep: { deeper: 1 } } } }).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'filter.name' });
    expect(coercionError(WORKFLOWS, { f: null }).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'filter' });
  });

  it('a variable inside a literal object or list → the argument and the field it stands for', () => {
    const query = 'query($s: WorkflowState, $e: String!) { workflows(filter: { appId: "demo", environment: $e, state: $s }) { totalCount } }';
    expect(coercionError(query, { s: 'NOPE', e: 'dev' }).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'filter.state' });
    expect(coercionError(query, { s: 'RUNNING', e: 5 }).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'filter.environment' });
    const dispatch = 'mutation($n: String!) { dispatchWorkflow(input: { appId: "demo", environment: "dev", name: $n, input: "[]" }) { id } }';
    expect(coercionError(dispatch, { n: 5 }).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'name' });
  });

  it('a variable used for two different arguments → named after the variable', () => {
    const query = 'query($x: Int) { a: workflows(filter: { appId: "demo", environment: "dev" }, first: $x) { totalCount } workflowHistory(appId: "demo", environment: "dev", id: "1", fromRevision: $x) { revision } }';
    expect(coercionError(query, { x: 1.5 }).extensions).toEqual({ code: 'BAD_USER_INPUT', field: 'x' });
  });
});

describe('formatError: the argument of a literal value GraphQL refuses', () => {
  it('a literal of the wrong type names its argument, or the field inside it', () => {
    const errors = validationErrors('{ workflows(filter: { appId: "demo", environment: "dev", state: NOPE }, first: 1.5) { totalCount } }');
    expect(errors.map((e) => e.extensions)).toEqual([
      { code: 'GRAPHQL_VALIDATION_FAILED', field: 'filter.state' },
      { code: 'GRAPHQL_VALIDATION_FAILED', field: 'first' },
    ]);
  });

  it('a required field missing from a literal object, and fields inside a mutation input', () => {
    expect(validationErrors('{ workflows(filter: { environment: "dev" }) { totalCount } }').map((e) => e.extensions?.field)).toEqual(['filter.appId']);
    expect(validationErrors('mutation { dispatchWorkflow(input: { appId: "demo", environment: "dev", name: 5, input: "[]" }) { id } }').map((e) => e.extensions?.field)).toEqual(['name']);
  });

  it('errors elsewhere name no field', () => {
    expect(validationErrors('{ everything }').map((e) => e.extensions)).toEqual([{ code: 'GRAPHQL_VALIDATION_FAILED' }]);
  });
});

describe('formatError: persisted queries and stack overflows', () => {
  it('a persisted-query hash that does not match → BAD_REQUEST with the message, not an internal error', () => {
    const error = new GraphQLError('provided sha does not match query', { extensions: { http: { status: 400 } } });
    expect(formatError({ message: error.message, extensions: { code: 'INTERNAL_SERVER_ERROR' } }, error)).toEqual({
      message: 'provided sha does not match query',
      extensions: { code: 'BAD_REQUEST' },
    });
  });

  it("Apollo's persisted-query codes pass through", () => {
    const error = new GraphQLError('PersistedQueryNotFound', { extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } });
    expect(formatError({ message: error.message, extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }, error).extensions).toEqual({ code: 'PERSISTED_QUERY_NOT_FOUND' });
  });

  it('"Maximum call stack size exceeded" is never passed through', () => {
    const error = new GraphQLError('Maximum call stack size exceeded', { extensions: { code: 'GRAPHQL_PARSE_FAILED' } });
    const formatted = formatError({ message: error.message, extensions: { code: 'GRAPHQL_PARSE_FAILED' } }, error);
    expect(formatted.message).not.toMatch(/call stack/i);
    expect(formatted.extensions).toEqual({ code: 'GRAPHQL_PARSE_FAILED', limit: 'depth' });
  });
});
