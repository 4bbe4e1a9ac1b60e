import { describe, expect, it } from '@jest/globals';
import { Kind, type OperationDefinitionNode, parse } from 'graphql';
import { rootFieldCount } from './root-field-rate.plugin.js';

/** The count of the first operation of `source`, with `variables`. */
function count(source: string, variables?: Record<string, unknown>): number {
  const document = parse(source);
  const operation = document.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  return rootFieldCount(operation, document, variables);
}

describe('rootFieldCount: the root fields of an operation that run', () => {
  it('counts aliases, inline fragments and fragment spreads', () => {
    expect(count('{ a: __typename b: __typename ... on Query { c: __typename } ...F } fragment F on Query { d: __typename e: __typename }')).toBe(5);
  });

  it('leaves out what @skip or @include leave out, with literals or the request\'s variables', () => {
    expect(count('{ a: __typename b: __typename @skip(if: true) c: __typename @include(if: false) }')).toBe(1);
    const source = 'query($skip: Boolean!) { a: __typename b: __typename @skip(if: $skip) ... on Query @include(if: $skip) { c: __typename d: __typename } ...F @skip(if: $skip) } fragment F on Query { e: __typename }';
    expect(count(source, { skip: true })).toBe(3);
    expect(count(source, { skip: false })).toBe(3);
  });

  it('counts an operation with such directives again for each request (its variables differ), one without them once', () => {
    const document = parse('query($on: Boolean!) { a: __typename b: __typename @include(if: $on) c: __typename @include(if: $on) }');
    const operation = document.definitions[0] as OperationDefinitionNode;
    expect(rootFieldCount(operation, document, { on: false })).toBe(1);
    expect(rootFieldCount(operation, document, { on: true })).toBe(3);
    expect(rootFieldCount(operation, document, { on: false })).toBe(1);
  });

  it('counts a field whose condition it cannot read (execution refuses the variable)', () => {
    expect(count('query($skip: Boolean!) { a: __typename b: __typename @skip(if: $skip) }', {})).toBe(2);
    expect(count('query($skip: Boolean!) { a: __typename b: __typename @skip(if: $skip) }', { skip: 'yes' })).toBe(2);
  });
});
