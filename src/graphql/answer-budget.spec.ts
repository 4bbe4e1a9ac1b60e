import { describe, expect, it } from '@jest/globals';
import { type FieldNode, type FragmentDefinitionNode, type GraphQLResolveInfo, Kind, type OperationDefinitionNode, parse } from 'graphql';
import { AnswerBudget, AnswerTooLargeError, answerSize, selectedFieldNames } from './answer-budget.js';

/** The `info` a resolver of the document's first root field gets (only what the budget reads of it). */
function infoOf(document: string): GraphQLResolveInfo {
  const parsed = parse(document);
  const operation = parsed.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)!;
  const fragments = Object.fromEntries(
    parsed.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((d) => [d.name.value, d]),
  );
  return { fieldNodes: [operation.selectionSet.selections[0] as FieldNode], fragments } as unknown as GraphQLResolveInfo;
}

const page = (n: number, inputBytes: number) => ({ totalCount: n, nodes: Array.from({ length: n }, (_, i) => ({ id: `w${i}`, input: 'x'.repeat(inputBytes) })) });

describe('what an answer is charged', () => {
  it('only what the query selects of a value: ids of big rows cost little, their inputs their size', () => {
    const value = page(10, 10_000);
    const ids = answerSize(value, infoOf('{ workflows { nodes { id } } }').fieldNodes.map((f) => f.selectionSet!), {}, Infinity);
    const inputs = answerSize(value, infoOf('{ workflows { nodes { input } } }').fieldNodes.map((f) => f.selectionSet!), {}, Infinity);
    expect(ids).toBeLessThan(500);
    expect(inputs).toBeGreaterThan(100_000);
  });

  it('fields selected through fragments (named or inline) count, and selectedFieldNames sees them', () => {
    const info = infoOf('{ workflowHistory { ...H ... on HistoryEvent { revision } } } fragment H on HistoryEvent { data }');
    expect(selectedFieldNames(info)).toEqual(new Set(['data', 'revision']));
    expect(answerSize([{ revision: 1, data: 'd'.repeat(1000) }], info.fieldNodes.map((f) => f.selectionSet!), info.fragments, Infinity)).toBeGreaterThan(1000);
  });

  it('stops counting once past the limit', () => {
    expect(answerSize(page(1000, 1000), undefined, {}, 5_000)).toBeLessThan(10_000);
  });
});

describe('AnswerBudget', () => {
  it('refuses a read that does not fit, and every read after it without running it', async () => {
    const budget = new AnswerBudget(50_000);
    const info = infoOf('{ workflows { nodes { input } } }');
    const reads: number[] = [];
    const read = (i: number) => budget.read(info, () => (reads.push(i), page(3, 10_000)));
    const outcomes = await Promise.allSettled([read(0), read(1), read(2), read(3)]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'rejected']);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(AnswerTooLargeError);
    expect(reads).toEqual([0, 1]);
    expect(budget.exceeded).toBe(true);
  });

  it('runs the reads of one answer one at a time, in order', async () => {
    const budget = new AnswerBudget(1_000_000);
    const log: string[] = [];
    const slow = (name: string) =>
      budget.read(undefined, async () => {
        log.push(`${name} starts`);
        await new Promise((resolve) => setImmediate(resolve));
        log.push(`${name} ends`);
        return name;
      });
    expect(await Promise.all([slow('a'), slow('b')])).toEqual(['a', 'b']);
    expect(log).toEqual(['a starts', 'a ends', 'b starts', 'b ends']);
  });

  it('asking only for ids of big rows fits, however many reads', async () => {
    const budget = new AnswerBudget(50_000);
    const info = infoOf('{ workflows { nodes { id } } }');
    for (let i = 0; i < 20; i++) await budget.read(info, () => page(10, 100_000));
    expect(budget.exceeded).toBe(false);
  });
});
