import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { GraphQLError, buildSchema, getIntrospectionQuery, parse, specifiedRules, validate } from 'graphql';
import { checkDocumentText, documentLimits, documentLimitsContext, queryLimitsRule } from './query-limits.js';

const schema = buildSchema(readFileSync(new URL('../../schema.graphql', import.meta.url), 'utf8'));
const LIMITS = { maxDepth: 10, maxCost: 500, maxComplexity: 100_000 };
const DOCUMENT = documentLimits(LIMITS);

/** The errors of Baton's rule alone (graphql-js's own rules run in the integration tests). */
const limitErrors = (query: string, limits = LIMITS) => validate(schema, parse(query), [queryLimitsRule(limits)]).map((e) => ({ message: e.message, limit: e.extensions.limit }));

const chain = (n: number) => `{ viewer { ...F0 } } ${Array.from({ length: n }, (_, i) => `fragment F${i} on Viewer { ...F${i + 1} }`).join(' ')} fragment F${n} on Viewer { role }`;
const inline = (n: number) => `{ viewer { ${'... on Viewer { '.repeat(n)}role${' }'.repeat(n)} } }`;

describe('checkDocumentText (before parsing)', () => {
  it('accepts ordinary documents, the introspection query among them', () => {
    for (const query of [getIntrospectionQuery(), chain(5), inline(5), '{ viewer { role } }', 'query($f: WorkflowFilterInput!) { workflows(filter: $f) { nodes { id } } }']) {
      expect(checkDocumentText(query, DOCUMENT)).toBeUndefined();
    }
  });

  it.each([
    ['selection sets', (n: number) => `{ viewer ${'{ role '.repeat(n)}${'}'.repeat(n + 1)}`],
    ['lists', (n: number) => `{ viewer(x: ${'['.repeat(n)}${']'.repeat(n)}) { role } }`],
    ['input objects', (n: number) => `{ workflows(filter: ${'{a:'.repeat(n)}1${'}'.repeat(n)}) { totalCount } }`],
    ['inline fragments', inline],
  ])('refuses %s nested deeper than the limit, however deep (limit depth)', (_label, make) => {
    for (const n of [DOCUMENT.maxNesting + 1, 20_000]) {
      const error = checkDocumentText(make(n), DOCUMENT);
      expect(error).toBeInstanceOf(GraphQLError);
      expect(error!.message).toBe(`document nested too deeply (more than ${DOCUMENT.maxNesting} levels)`);
      expect(error!.extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', limit: 'depth', http: { status: 400 } });
    }
  });

  it('refuses more fragment definitions than the limit (a 3,000- or 6,000-fragment chain)', () => {
    for (const n of [3_000, 6_000]) expect(checkDocumentText(chain(n), DOCUMENT)?.extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', limit: 'fragments' });
  });

  it('refuses more tokens than the limit', () => {
    const error = checkDocumentText(`{ ${'__typename '.repeat(DOCUMENT.maxTokens)}}`, DOCUMENT);
    expect(error?.extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', limit: 'tokens' });
  });

  it('leaves syntax errors and brackets inside strings to the parser', () => {
    expect(checkDocumentText('{ workflow(id: "abc) { id } }', DOCUMENT)).toBeUndefined();
    expect(checkDocumentText(`{ workflow(id: "${'{'.repeat(10_000)}") { id } }`, DOCUMENT)).toBeUndefined();
    expect(checkDocumentText(`# ${'['.repeat(10_000)}\n{ viewer { role } }`, DOCUMENT)).toBeUndefined();
  });

  it('documentLimitsContext throws for a JSON body, a batch or a GET query string, and answers undefined otherwise', () => {
    const context = documentLimitsContext(DOCUMENT);
    expect(context({ body: { query: '{ viewer { role } }' } })).toBeUndefined();
    expect(context({ body: { variables: {} } })).toBeUndefined();
    expect(() => context({ body: { query: chain(3_000) } })).toThrow(GraphQLError);
    expect(() => context({ body: [{ query: '{ viewer { role } }' }, { query: inline(5_000) }] })).toThrow(GraphQLError);
    expect(() => context({ query: { query: inline(5_000) } })).toThrow(GraphQLError);
  });

  it('allows at most 100 fragment definitions (the default MAX_QUERY_COST of 500 would allow 500)', () => {
    const limits = documentLimits({ maxDepth: 10, maxCost: 500 });
    expect(limits.maxFragments).toBe(100);
    const sideBySide = (n: number) => `{ viewer { ${Array.from({ length: n }, (_, i) => `...F${i}`).join(' ')} } } ${Array.from({ length: n }, (_, i) => `fragment F${i} on Viewer { role }`).join(' ')}`;
    expect(checkDocumentText(sideBySide(100), limits)).toBeUndefined();
    expect(checkDocumentText(sideBySide(101), limits)?.extensions.limit).toBe('fragments');
  });

  it('keeps its caps below what overflows graphql-js, whatever the query limits', () => {
    const most = documentLimits({ maxDepth: 100, maxCost: 100_000 });
    expect(most.maxNesting).toBeLessThanOrEqual(512);
    expect(most.maxFragments).toBeLessThanOrEqual(100);
    // The longest fragment chain and the deepest nesting the limits let through still validate without a stack overflow.
    const rules = [...specifiedRules, queryLimitsRule({ maxDepth: 100, maxCost: 100_000, maxComplexity: 100_000_000 })];
    for (const query of [chain(most.maxFragments - 1), inline(most.maxNesting - 2)]) {
      expect(checkDocumentText(query, most)).toBeUndefined();
      // No stack overflow: at most the depth limit's own refusal (a chain of 99 is within a depth of 100).
      expect(validate(schema, parse(query), rules).map((e) => e.extensions.limit).filter((limit) => limit !== 'depth')).toEqual([]);
    }
  });
});

describe('queryLimitsRule', () => {
  it('accepts the introspection query and ordinary fragments', () => {
    expect(limitErrors(getIntrospectionQuery())).toEqual([]);
    expect(limitErrors(getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true }))).toEqual([]);
    expect(limitErrors('{ workflows(filter: { appId: "a", environment: "b" }) { ...P } } fragment P on WorkflowConnection { pageInfo { hasNextPage } nodes { ...W } } fragment W on Workflow { id state }')).toEqual([]);
  });

  it('counts fragments nested in fragments (named or inline) against the depth limit', () => {
    expect(limitErrors(chain(9))).toEqual([]);
    expect(limitErrors(inline(10))).toEqual([]);
    for (const query of [chain(10), chain(450), inline(11), inline(60)]) {
      expect(limitErrors(query)).toEqual([{ message: 'fragments nested more than 10 deep (the query depth limit)', limit: 'depth' }]);
    }
  });

  it('still measures the depth of fields inside fragments', () => {
    const query = '{ workflows(filter: { appId: "a", environment: "b" }) { ...P } } fragment P on WorkflowConnection { pageInfo { hasNextPage } }';
    expect(limitErrors(query, { ...LIMITS, maxDepth: 2 })).toEqual([{ message: 'query depth exceeds the limit of 2', limit: 'depth' }]);
  });

  it('stops early on fragments that double at each level (no exponential walk)', () => {
    const query = `{ viewer { ...D0 } } ${Array.from({ length: 40 }, (_, i) => `fragment D${i} on Viewer { ...D${i + 1} ...D${i + 1} }`).join(' ')} fragment D40 on Viewer { role }`;
    expect(limitErrors(query, { ...LIMITS, maxDepth: 100 })).toEqual([{ message: 'query selects more than 500 fields', limit: 'cost' }]);
  });

  it('counts each fragment spread toward the cost', () => {
    const spreads = (n: number) => `{ viewer { ${Array.from({ length: n }, () => '...R').join(' ')} } } fragment R on Viewer { role }`;
    // viewer, then a spread and its field each time.
    expect(limitErrors(spreads(249))).toEqual([]);
    expect(limitErrors(spreads(250))).toEqual([{ message: 'query selects more than 500 fields', limit: 'cost' }]);
  });

  it('bounds `ofType` chains (which do not count toward depth) by the nesting limit', () => {
    const query = (n: number) => `{ __type(name: "Query") { ${'ofType { '.repeat(n)}name${' }'.repeat(n)} } }`;
    expect(limitErrors(query(20))).toEqual([]);
    expect(limitErrors(query(DOCUMENT.maxNesting + 5))).toEqual([{ message: `document nested too deeply (more than ${DOCUMENT.maxNesting} levels)`, limit: 'depth' }]);
  });
});
