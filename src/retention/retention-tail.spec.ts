/**
 * Retention's deleteIfStillFinished reads a stream's tail backwards, 64 at a time, to its last
 * ending or retry, and deletes at the revision read. Real SQLite store; a fake read
 * model that pages with the same (updated_at, id) keyset as finishedBefore.
 */
import { describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { SqliteEventStore } from '../event-store/sqlite/sqlite-event-store.js';
import { RetentionService } from './retention.service.js';

const NOW = Date.parse('2030-01-10T00:00:00.000Z');
const ev = (type: string, data: object = {}) => ({ id: randomUUID(), type, data });

async function stream(store: SqliteEventStore, id: string, types: string[]): Promise<void> {
  await store.append(`workflow-${id}`, types.map((t) => ev(t)));
}

function service(store: SqliteEventStore, rows: Array<{ id: string; updatedAt: Date }>, calls: { batches: number }) {
  const workflows = {
    finishedBefore(_cutoff: Date, max: number, _derived: Date, after?: { id: string; updatedAt: Date }) {
      calls.batches++;
      const sorted = [...rows].sort((a, b) => a.updatedAt.getTime() - b.updatedAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const from = after ? after.updatedAt.getTime() : -1;
      return sorted.filter((r) => r.updatedAt.getTime() >= from && (r.updatedAt.getTime() > from || r.id > (after?.id ?? ''))).slice(0, max);
    },
  };
  const projections = { isLive: true, waitFor: async () => {} };
  const lifecycle = { draining: false };
  const config = { retentionDays: 1, idempotencyWindowMs: 0, retentionSweepMs: 1000 };
  return new RetentionService(config as never, store, { now: () => NOW } as never, { register() {} } as never, {} as never, workflows as never, projections as never, lifecycle as never, { registry: new Registry() } as never);
}

describe('retention reads each stream tail backwards', () => {
  it('deletes an ending far behind the tail, spares a retry far behind the tail and one never ended, and ends', async () => {
    const store = new SqliteEventStore(join(mkdtempSync(join(tmpdir(), 'baton-ret-')), 'r.db'));
    try {
      const late = Array.from({ length: 64 * 2 + 1 }, () => 'TaskResultIgnored');
      await stream(store, 'a', ['WorkflowDispatched', 'WorkflowCompleted', ...late]); // ending 129 back
      await stream(store, 'b', ['WorkflowDispatched', 'WorkflowFailed', 'WorkflowRetried', ...late]); // retry 129 back
      await stream(store, 'c', ['WorkflowDispatched', ...Array.from({ length: 64 * 3 - 1 }, () => 'TimerStarted')]); // exactly 3 pages, no ending
      await stream(store, 'd', ['WorkflowDispatched', ...Array.from({ length: 62 }, () => 'TimerStarted'), 'WorkflowTerminated']); // ending at revision 63 (page edge)
      const rows = ['a', 'b', 'c', 'd', 'gone'].map((id) => ({ id, updatedAt: new Date(NOW - 5 * 86_400_000) }));
      for (let i = 0; i < 1200; i++) rows.push({ id: `x${String(i).padStart(5, '0')}`, updatedAt: new Date(NOW - 3 * 86_400_000) });
      const calls = { batches: 0 };
      const deleted = await service(store, rows, calls).sweep();
      expect(await store.streamLength('workflow-a')).toBe(0);
      expect(await store.streamLength('workflow-b')).toBeGreaterThan(0);
      expect(await store.streamLength('workflow-c')).toBeGreaterThan(0);
      expect(await store.streamLength('workflow-d')).toBe(0);
      // a, d, gone + 1200 streams that never existed (deleted already): dropped from the read model.
      expect(deleted).toBe(3 + 1200);
      expect(calls.batches).toBe(3);
    } finally {
      await store.close();
    }
  });
});
