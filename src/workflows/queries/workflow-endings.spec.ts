import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import type { StoredEvent } from '../../event-store/event-registry.js';
import { MetricsService } from '../../observability/metrics.service.js';
import { WorkflowEndings } from './workflow-endings.js';

const event = (type: string, streamId: string, data: unknown = {}): StoredEvent => ({ type, data, recorded: { streamId } }) as unknown as StoredEvent;
/** Only its registry is used. */
const metrics = () => ({ registry: new Registry() }) as unknown as MetricsService;
const settled = async (promise: Promise<void>): Promise<boolean> => {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise<void>((resolve) => setImmediate(resolve));
  return done;
};

describe('WorkflowEndings', () => {
  it('wakes every watch of a workflow when it ends, and only those', async () => {
    const endings = new WorkflowEndings(metrics());
    const a1 = endings.watch('a');
    const a2 = endings.watch('a');
    const b = endings.watch('b');
    endings.handle(event('WorkflowCompleted', 'workflow-a'));
    expect(await settled(a1.ended)).toBe(true);
    expect(await settled(a2.ended)).toBe(true);
    expect(await settled(b.ended)).toBe(false);
    // A woken watch counts until its poll cancels it (the resolver always does, in a finally).
    expect(endings.watched).toBe(3);
    a1.cancel();
    a2.cancel();
    endings.handle(event('WorkflowTerminated', 'workflow-b'));
    expect(await settled(b.ended)).toBe(true);
    b.cancel();
    expect(endings.watched).toBe(0);
  });

  it('wakes the workflows retention deleted, and forgets cancelled watches', async () => {
    const endings = new WorkflowEndings(metrics());
    const kept = endings.watch('x');
    const gone = endings.watch('y');
    const other = endings.watch('z');
    other.cancel();
    expect(endings.watched).toBe(2);
    endings.handle(event('WorkflowsExpired', 'retention-1', { workflowIds: ['y', 'z'] }));
    expect(await settled(gone.ended)).toBe(true);
    expect(await settled(other.ended)).toBe(false);
    gone.cancel();
    kept.cancel();
    kept.cancel();
    expect(endings.watched).toBe(0);
    // A failure ends a workflow too; with no watch it is a no-op.
    endings.handle(event('WorkflowFailed', 'workflow-x'));
    expect(await settled(kept.ended)).toBe(false);
  });
});
