import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NotFoundError } from '../shared/errors.js';
import { workflowDecider } from '../workflows/domain/workflow.decider.js';
import { SqliteEventStore } from './sqlite/sqlite-event-store.js';
import { StreamQueues } from './stream-queues.js';

const context = { actor: 'test', appId: 'demo', environment: 'test', correlationId: 'c' };

let stores: SqliteEventStore[] = [];
afterEach(async () => {
  for (const s of stores) await s.close();
  stores = [];
});

function twoInstances(): { a: SqliteEventStore; b: SqliteEventStore } {
  const file = join(mkdtempSync(join(tmpdir(), 'baton-revstore-')), 'q.db');
  const a = new SqliteEventStore(file, { watchWal: false });
  const b = new SqliteEventStore(file, { watchWal: false });
  stores.push(a, b);
  return { a, b };
}

const workflowId = '0190c4f4-0000-7000-8000-0000000000d1';
const stream = `workflow-${workflowId}`;
const dispatch = { type: 'DispatchWorkflow' as const, workflowId, appId: 'demo', environment: 'test', name: 'W', tag: null, input: [], now: 0 };

describe('StreamQueues, a stream another instance deleted (retention)', () => {
  it('is read again rather than answered from, or appended to as, the state it cached', async () => {
    const { a, b } = twoInstances();
    const queuesB = new StreamQueues(b);
    await queuesB.run(stream, workflowDecider, dispatch, context);
    await queuesB.run(stream, workflowDecider, { type: 'TerminateWorkflow', reason: 'done' }, context);
    // Instance A's retention sweep deletes the finished workflow (its WorkflowsExpired has not
    // reached B yet).
    expect(await a.deleteStream(stream, { expectedRevision: 1n })).toBe(2);
    // A command through B that appends (a control the workflow asked for, recorded as applied):
    // the workflow is gone, so it is NOT_FOUND, as it is on an instance that never cached it.
    const outcome = await queuesB
      .run(stream, workflowDecider, { type: 'RecordControlApplied', seq: 0, matched: 0, changed: 0 }, context)
      .then(() => 'appended', (error: Error) => error);
    expect(outcome).toBeInstanceOf(NotFoundError);
    // Nothing was written to the deleted stream, and B did not go round its conflict loop.
    expect(await a.readStream(stream)).toEqual([]);
    expect(queuesB.statistics.conflicts).toBeLessThanOrEqual(1);
  });

  it("is not served from this process's stream tail once another process deleted it", async () => {
    const { a, b } = twoInstances();
    const queuesB = new StreamQueues(b);
    await queuesB.run(stream, workflowDecider, dispatch, context);
    expect(await a.deleteStream(stream, { expectedRevision: 0n })).toBe(1);
    // The first event, read as an idempotent dispatch or a retry that lost its stream read it.
    expect(await b.readStream(stream, { maxCount: 1 })).toEqual([]);
  });
});
