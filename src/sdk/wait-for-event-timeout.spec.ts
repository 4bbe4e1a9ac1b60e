/**
 * `waitForEvent` with a bad timeout returns a promise that rejects, as it always did; a version
 * that threw synchronously from the call (found in review) broke workflow code
 * that handles the failure on the promise (`.catch`, `Promise.allSettled`, `Promise.race`): the
 * workflow failed instead of going on, and a workflow in flight whose
 * recorded decisions went on after that `.catch` failed on its next decision after the worker
 * upgrade (FailWorkflow where the history has more commands).
 */
import { describe, expect, it } from '@jest/globals';
import { defineWorkflow } from './definitions.js';
import { HistoryEvent, WorkflowReplay } from './workflow-context.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const WF = '0190aaaa-0000-7000-8000-00000000000b';

const history = (name: string): HistoryEvent[] => [
  { revision: 0, type: 'WorkflowDispatched', data: { workflowId: WF, name, input: [], seqBase: 0 } },
  { revision: 1, type: 'DecisionStarted', data: { startedAt: new Date(T0).toISOString() } },
];

describe('waitForEvent with a bad timeout', () => {
  it('reports the bad timeout through the promise it returns (as before), so .catch on it handles it', async () => {
    const careful = defineWorkflow('CatchesOnPromise', async (ctx, timeout: unknown) => {
      const got = await ctx.waitForEvent('go', { timeout: timeout as never }).catch((e: Error) => `refused: ${e.name}`);
      return got;
    });
    const commands = await new WorkflowReplay(careful, WF, [-5], history('CatchesOnPromise')).execute();
    expect(commands).toEqual([{ type: 'CompleteWorkflow', result: 'refused: RangeError' }]);
  });
});
