/**
 * A replay of the effects (read models and their effects checkpoint started anew: a separate
 * READ_MODEL_PATH deleted, as a restore says) after retention deleted a child that an EARLIER run
 * of its parent started (the parent continued as new since, so its current run does not know the
 * child): the child ran and ended once, and must not be created, and run, again.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from '../../src/event-store/sqlite/better-sqlite3.js';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { startWorker } from '../support/worker.js';
import { Engine, unique } from './engine-helpers.js';

/** How many events the store holds for `streamId` (0 once retention deleted it). */
function eventsOf(storeUrl: string, streamId: string): number {
  const db = new Database(storeUrl.slice('sqlite:'.length), { readonly: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM events WHERE stream_id = ?').get(streamId) as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('a replay of the effects after retention, for a child of an earlier run of its parent', () => {
  const running: Service[] = [];
  afterAll(async () => {
    for (const s of running.reverse()) await s.stop();
  });

  it('does not create the child again: it ran once, ended, and retention deleted it', async () => {
    const storeUrl = freshStoreUrl();
    const rmFile = join(mkdtempSync(join(tmpdir(), 'baton-rm-')), 'read-models.db');
    // 0.00003 days = 2.6 s, swept every 300 ms; a child's derived id is kept IDEMPOTENCY_WINDOW_MS.
    const service = await startService({ storeUrl, env: { READ_MODEL_PATH: rmFile, RETENTION_DAYS: '0.00003', RETENTION_SWEEP_MS: '300', IDEMPOTENCY_WINDOW_MS: '1000' } });
    running.push(service);
    const token = service.token;
    const environment = unique('replayed-child');
    let worker = await startWorker({ url: service.url, token, environment });
    const engine = new Engine(service, environment, token);
    let parent: string;
    let child: string;
    try {
      // The parent's first run dispatches the child; the child is released and completes.
      parent = await engine.dispatch('DispatchThenContinue', [unique('earlier-run'), 0]);
      child = await engine.childOf(parent);
      await engine.waitForEventType(child, 'DecisionCompleted');
      await engine.send({ id: child }, 'release', 'once');
      await engine.waitForState(child);
      // The parent continues as new: its second run waits on, and knows nothing of the child.
      await engine.send({ id: parent }, 'continue');
      await engine.waitForHistory(
        parent,
        (h) => h.some((e) => e.type === 'WorkflowContinuedAsNew') && h.findLastIndex((e) => e.type === 'DecisionCompleted') > h.findIndex((e) => e.type === 'WorkflowContinuedAsNew'),
        'the second run waiting',
      );
      await waitFor(async () => (await engine.client.workflow('demo', environment, child)) === null, {
        timeoutMs: 20_000,
        intervalMs: 200,
        description: 'retention to delete the finished child',
      });
    } finally {
      await worker.stop();
    }
    await service.stop();
    expect(eventsOf(storeUrl, `workflow-${child}`)).toBe(0);
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${rmFile}${suffix}`, { force: true });

    // Read models and effects checkpoint anew: every effect in the log is carried out again.
    const again = await startService({ storeUrl, env: { READ_MODEL_PATH: rmFile } });
    running.push(again);
    worker = await startWorker({ url: again.url, token, environment });
    try {
      const after = new Engine(again, environment, token);
      // Effects are carried out in log order: once a later parent's child exists, the first
      // parent's ChildWorkflowStarted has been handled too.
      const later = await after.dispatch('DispatchThenWait', [unique('later')]);
      const laterChild = await after.childOf(later);
      await waitFor(async () => (await after.client.workflow('demo', environment, laterChild)) !== null, { description: 'the later child' });
      await after.effectsCaughtUp();
      // Not created again: no WorkflowDispatched (nor anything else) under its id.
      expect(eventsOf(storeUrl, `workflow-${child}`)).toBe(0);
      expect(await after.client.workflow('demo', environment, child)).toBeNull();
      expect((await after.workflow(parent)).state).toBe('RUNNING');
    } finally {
      await worker.stop();
    }
  }, 90_000);
});
