/**
 * An event sent to a workflow with a backlog is recorded as `WorkflowEventQueued` (the send, with
 * its actor) and later released as `WorkflowEventReceived { queuedAt }` in the append of a
 * resume or a decision: the audit log lists the send once, as the queued event, not the release.
 */
import { describe, expect, it } from '@jest/globals';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { StoredEvent } from '../event-store/event-registry.js';
import { AuditReadModel } from './audit.read-model.js';

const stored = (position: number, type: string, data: unknown, actor: string) =>
  new StoredEvent({
    id: `e${position}`,
    type,
    streamId: 'workflow-w1',
    revision: BigInt(position),
    position: BigInt(position),
    data,
    metadata: { actor, appId: 'a', environment: 'e' },
    recordedAt: new Date(1_700_000_000_000 + position),
  });

describe('the audit log of a backlog', () => {
  it('lists a queued send once (as WorkflowEventQueued), not its release, even when an API action (a resume) released it', () => {
    const model = new AuditReadModel(new ReadModelDb(':memory:'));
    model.migrate();
    model.project(stored(1, 'WorkflowEventReceived', { name: 'update', data: [1] }, 'tok_a'));
    model.project(stored(2, 'WorkflowEventQueued', { name: 'update', data: [2] }, 'tok_a'));
    model.project(stored(3, 'WorkflowResumed', {}, 'tok_b'));
    model.project(stored(4, 'WorkflowEventReceived', { queuedAt: 2 }, 'tok_b'));
    const page = model.page({ appId: 'a', environment: 'e' }, 10, null);
    expect(page.entries.map((e) => [e.action, e.actor])).toEqual([
      ['WorkflowResumed', 'tok_b'],
      ['WorkflowEventQueued', 'tok_a'],
      ['WorkflowEventReceived', 'tok_a'],
    ]);
  });
});
