/**
 * The worker protocol's inputs take ids and names as the public API does: a worker id is 1–128
 * characters, a workflow or task name 1–256, neither with control characters. A refusal is
 * BAD_USER_INPUT naming the field; a good input still takes the compiled validation path.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { Paramtype } from '@nestjs/common';
import { batonValidationPipe } from '../graphql/validation.pipe.js';
import { DecisionHistoryInput, HeartbeatInput, PollWorkInput, ReportWorkInput } from './worker-protocol.types.js';

const GQL_ARGS = 3 as unknown as Paramtype;
const scope = { appId: 'demo', environment: 'dev' };
const poll = (fields: Record<string, unknown> = {}) => ({ ...scope, workerId: 'w-1', workflows: ['Flow_v1'], tasks: [{ name: 'send' }], waitMs: 0, ...fields });

async function refusal(metatype: Function, value: unknown): Promise<{ field: string; message: string }> {
  const pipe = batonValidationPipe();
  const error = await pipe.transform(value, { type: GQL_ARGS, metatype: metatype as never, data: 'input' }).then(
    () => {
      throw new Error(`accepted: ${JSON.stringify(value)}`);
    },
    (e: { code?: string; details?: { field: string }; message: string }) => e,
  );
  expect(error.code).toBe('BAD_USER_INPUT');
  return { field: error.details!.field, message: error.message };
}

describe('worker ids', () => {
  it.each([
    ['pollWork', PollWorkInput, poll],
    ['reportWork', ReportWorkInput, (f: Record<string, unknown>) => ({ ...scope, workerId: 'w-1', ...f })],
    ['heartbeat', HeartbeatInput, (f: Record<string, unknown>) => ({ ...scope, workerId: 'w-1', attempts: [], ...f })],
  ] as const)('%s refuses an empty workerId, one with a control character and one of 129 characters', async (_label, cls, make) => {
    expect(await refusal(cls, make({ workerId: '' }))).toMatchObject({ field: 'workerId', message: expect.stringContaining('should not be empty') });
    expect(await refusal(cls, make({ workerId: 'a\u0000' }))).toMatchObject({ field: 'workerId', message: expect.stringContaining('must not contain control characters') });
    expect(await refusal(cls, make({ workerId: 'w'.repeat(129) }))).toMatchObject({ field: 'workerId' });
  });

  it('decisionHistory refuses an empty workerId and one with a control character', async () => {
    const input = { ...scope, workerId: 'w-1', ref: 'r', decisionId: 'd' };
    expect((await refusal(DecisionHistoryInput, { ...input, workerId: '' })).field).toBe('workerId');
    expect((await refusal(DecisionHistoryInput, { ...input, workerId: 'w\u001b' })).field).toBe('workerId');
  });
});

describe('slots a worker asks work for', () => {
  it('pollWork and the eager claim take maxDecisions and maxTasks from 0 to 100, and refuse anything else naming the field', async () => {
    const pipe = batonValidationPipe();
    await expect(pipe.transform(poll({ maxItems: 5, maxDecisions: 0, maxTasks: 5 }), { type: GQL_ARGS, metatype: PollWorkInput as never, data: 'input' })).resolves.toBeDefined();
    expect((await refusal(PollWorkInput, poll({ maxDecisions: -1 }))).field).toBe('maxDecisions');
    expect((await refusal(PollWorkInput, poll({ maxTasks: 101 }))).field).toBe('maxTasks');
    expect((await refusal(PollWorkInput, poll({ maxTasks: 1.5 }))).field).toBe('maxTasks');
    const report = (claim: Record<string, unknown>) => ({ ...scope, workerId: 'w-1', claim: { workflows: [], tasks: [], maxItems: 1, ...claim } });
    expect((await refusal(ReportWorkInput, report({ maxDecisions: -1 }))).field).toBe('claim.maxDecisions');
    expect((await refusal(ReportWorkInput, report({ maxTasks: 101 }))).field).toBe('claim.maxTasks');
  });
});

describe('names a worker registers', () => {
  it('pollWork refuses an empty workflow name, one with a control character and one of 257 characters', async () => {
    for (const workflows of [[''], ['Flow', 'a\u0000'], ['n'.repeat(257)]]) {
      expect(await refusal(PollWorkInput, poll({ workflows }))).toMatchObject({ field: 'workflows' });
    }
  });

  it('pollWork refuses an empty task name and one with a control character', async () => {
    expect(await refusal(PollWorkInput, poll({ tasks: [{ name: '' }] }))).toMatchObject({ field: 'tasks.0.name' });
    expect(await refusal(PollWorkInput, poll({ tasks: [{ name: 'send' }, { name: 's\u0000' }] }))).toMatchObject({ field: 'tasks.1.name' });
  });

  it("reportWork's eager claim and next decision take names by the same rules", async () => {
    const report = (fields: Record<string, unknown>) => ({ ...scope, workerId: 'w-1', ...fields });
    expect((await refusal(ReportWorkInput, report({ claim: { workflows: [''], tasks: [], maxItems: 1 } }))).field).toBe('claim.workflows');
    expect((await refusal(ReportWorkInput, report({ claim: { workflows: [], tasks: [{ name: 'a\u0007' }], maxItems: 1 } }))).field).toBe('claim.tasks.0.name');
    const next = { basisDecisionId: 'd0', version: '', startedAt: '2026-01-01T00:00:00.000Z', commands: '[]' };
    expect((await refusal(ReportWorkInput, report({ tasks: [{ ref: 'r', attemptId: 'a', result: '1', next }] }))).field).toBe('tasks.0.next.version');
  });

  it('takes a good poll on the compiled path, astral characters included', async () => {
    const pipe = batonValidationPipe();
    const input = poll({ workerId: 'host-1-😀', workflows: ['Flow_v1', 'Überflow'], tasks: [{ name: 'n'.repeat(256) }] });
    const result = (await pipe.transform(input, { type: GQL_ARGS, metatype: PollWorkInput, data: 'input' })) as PollWorkInput;
    expect(result).toBeInstanceOf(PollWorkInput);
    expect(pipe.counts).toEqual({ fast: 1, fallback: 0 });
  });
});
