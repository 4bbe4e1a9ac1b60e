/**
 * A query handler (`ctx.onQuery`) that throws something other than an Error, or answers what JSON
 * cannot hold, gets an `{ error }` answer of its own. Before, `answerQueries` threw: the decision
 * it ended was reported failed (WORKER_ERROR), made again, failed again, and the workflow never
 * moved, for a read-only handler that only answers readers outside the workflow.
 */
import { describe, expect, it } from '@jest/globals';
import { defineWorkflow } from './definitions.js';
import { WorkflowReplay } from './workflow-context.js';

const history = [
  { revision: 0, type: 'WorkflowDispatched', data: {} },
  { revision: 1, type: 'DecisionStarted', data: { startedAt: '2030-01-01T00:00:00.000Z' } },
];

async function answers(handler: () => unknown): Promise<Record<string, unknown>> {
  const workflow = defineWorkflow('Queried', async (ctx) => {
    ctx.onQuery('broken', handler);
    ctx.onQuery('fine', () => 'ok');
    await ctx.waitForEvent('never');
  });
  const replay = new WorkflowReplay(workflow, '0190aaaa-0000-7000-8000-00000000000a', [], history);
  await replay.execute();
  return JSON.parse(replay.answerQueries()!) as Record<string, unknown>;
}

describe('query handlers that misbehave answer an error of their own', () => {
  it.each([
    ['throws undefined', () => { throw undefined; }],
    ['throws null', () => { throw null; }],
    ['throws a string', () => { throw 'not ready'; }],
  ])('one that %s', async (_what, handler) => {
    const got = await answers(handler);
    expect(got.fine).toBe('ok');
    expect(got.broken).toEqual({ error: expect.any(String) });
  });

  it.each([
    ['a BigInt', () => 10n],
    ['a circular object', () => { const o: Record<string, unknown> = {}; o.self = o; return o; }],
  ])('one that answers %s', async (_what, handler) => {
    const got = await answers(handler);
    expect(got.fine).toBe('ok');
    expect(got.broken).toEqual({ error: expect.stringContaining('JSON') });
  });
});

describe('a query handler that throws an error with a very long message (a response body in it)', () => {
  it('answers it cut to what the service records: the whole answer would go over its JSON string limit, and the decision carrying it was refused, made again and refused again', async () => {
    const got = await answers(() => {
      throw new Error(`upstream said: ${'x'.repeat(300_000)}`);
    });
    expect(got.fine).toBe('ok');
    const { error } = got.broken as { error: string };
    expect(error.startsWith('upstream said: xxx')).toBe(true);
    expect(error.length).toBeLessThanOrEqual(16_384);
  });
});
