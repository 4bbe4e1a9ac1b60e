import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { workflowDecider } from '../workflows/domain/workflow.decider.js';
import { SqliteEventStore } from './sqlite/sqlite-event-store.js';
import { StreamQueues } from './stream-queues.js';

const context = { actor: 'test', appId: 'demo', environment: 'test', correlationId: 'c' };
const EFFECT_EVENT_ID = '0190c4f4-0000-7000-8000-00000000e001';

let store: SqliteEventStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

/**
 * Two instances (two StreamQueues on one store) carrying out the same effect with the same
 * deterministic event id, as every instance's effects reactor does. The second one decides it on
 * a cached state that misses what the first instance appended before it: the store answers its
 * append as a replay of the first one (same event id), at a revision past what it decided on.
 */
describe('StreamQueues, an append answered as a replay of another instance\'s', () => {
  it('does not keep a state that misses the events appended before the replayed one', async () => {
    store = new SqliteEventStore(join(mkdtempSync(join(tmpdir(), 'baton-replayed-')), 'q.db'));
    const b = new StreamQueues(store);
    const a = new StreamQueues(store);
    const stream = 'workflow-0190c4f4-0000-7000-8000-0000000000c1';
    await b.run(stream, workflowDecider, { type: 'DispatchWorkflow', workflowId: stream.slice(9), appId: 'demo', environment: 'test', name: 'W', tag: null, input: [], now: 0 }, context);
    // A pauses it (B's cached state does not know), then carries out the effect first.
    expect((await a.run(stream, workflowDecider, { type: 'PauseWorkflow' }, context)).events.map((e) => e.type)).toEqual(['WorkflowPaused']);
    const effect = { type: 'DeliverEvent' as const, name: 'release', data: [1] };
    await a.run(stream, workflowDecider, effect, context, { eventId: () => EFFECT_EVENT_ID });
    // B carries out the same effect on its stale state: the store recognises the event id.
    await b.run(stream, workflowDecider, effect, context, { eventId: () => EFFECT_EVENT_ID });
    expect((await store.readStream(stream)).map((e) => e.type)).toEqual(['WorkflowDispatched', 'WorkflowPaused', 'WorkflowEventReceived']);
    // B must still know the workflow is paused: a resume through B resumes it.
    const resumed = await b.run(stream, workflowDecider, { type: 'ResumeWorkflow' }, context);
    expect(resumed.events.map((e) => e.type)).toEqual(['WorkflowResumed']);
    expect((await store.readStream(stream)).map((e) => e.type)).toEqual(['WorkflowDispatched', 'WorkflowPaused', 'WorkflowEventReceived', 'WorkflowResumed']);
  });
});
