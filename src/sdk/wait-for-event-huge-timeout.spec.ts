/**
 * `waitForEvent` with a timeout that is a valid duration but too far away
 * for a date (`1e300` ms, `"100000000000w"`): `toMs` accepts it, and the call then throws
 * "Invalid time value" from `new Date(...).toISOString()` inside the promise's executor, AFTER
 * the wait was registered. The promise rejects (the code may catch it), but the dead wait stays
 * in the list and takes the next event of that name: the following `waitForEvent('go')` never
 * gets it. The same class of bug the comment in `waitForEvent` says was fixed for bad durations.
 */
import { describe, expect, it } from '@jest/globals';
import { defineWorkflow } from './definitions.js';
import { HistoryEvent, WorkflowReplay } from './workflow-context.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const WF = '0190aaaa-0000-7000-8000-00000000000c';
const at = (n: number) => new Date(T0 + n * 1000).toISOString();

describe('waitForEvent with a timeout too far for a date', () => {
  it('leaves no wait behind: a later waitForEvent of the same name gets the event', async () => {
    const wf = defineWorkflow('HugeTimeout', async (ctx) => {
      const first = await ctx.waitForEvent('go', { timeout: 1e300 }).catch((e: Error) => `refused: ${e.name}`);
      const second = await ctx.waitForEvent('go');
      return { first, second };
    });
    const history: HistoryEvent[] = [
      { revision: 0, type: 'WorkflowDispatched', data: { workflowId: WF, name: 'HugeTimeout', input: [], seqBase: 0 } },
      { revision: 1, type: 'DecisionStarted', data: { startedAt: at(0) } },
      { revision: 2, type: 'DecisionCompleted', data: { commands: [] } },
      { revision: 3, type: 'WorkflowEventReceived', data: { name: 'go', data: [42] } },
      { revision: 4, type: 'DecisionStarted', data: { startedAt: at(1) } },
    ];
    const commands = await new WorkflowReplay(wf, WF, [], history).execute();
    expect(commands).toEqual([{ type: 'CompleteWorkflow', result: { first: 'refused: RangeError', second: ['go', 42] } }]);
  });
});
