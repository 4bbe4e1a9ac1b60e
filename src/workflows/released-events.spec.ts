/**
 * The histories handed to workers put the queued event's name and data into each release
 * (`WorkflowEventReceived { queuedAt }`), reading only those queued events, by revision, a run of
 * consecutive revisions (at most RELEASE_READ_CHUNK) a read. Real SQLite store; its reads counted.
 */
import { describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ReadStreamOptions } from '../event-store/event-store.port.js';
import { SqliteEventStore } from '../event-store/sqlite/sqlite-event-store.js';
import { RELEASE_READ_CHUNK, withReleasedData } from './released-events.js';

const ev = (type: string, data: object) => ({ id: randomUUID(), type, data });

describe('withReleasedData', () => {
  it('gives each release the name and data of its queued event, reading exactly those events in runs of consecutive revisions', async () => {
    const store = new SqliteEventStore(join(mkdtempSync(join(tmpdir(), 'baton-released-')), 'r.db'));
    try {
      const stream = 'workflow-w1';
      await store.append(stream, [ev('WorkflowDispatched', { name: 'Loop' })]);
      // Revisions 1..200 queued back to back, a large event at 201, then 202..206 queued with a cause.
      await store.append(stream, Array.from({ length: 200 }, (_, i) => ev('WorkflowEventQueued', { name: 'update', data: [i] })));
      await store.append(stream, [ev('TaskCompleted', { seq: 0, result: 'x'.repeat(100_000) })]);
      await store.append(stream, Array.from({ length: 5 }, (_, i) => ev('WorkflowEventQueued', { name: 'late', data: [i], causeId: `c${i}` })));
      const history = [
        { revision: 0, type: 'WorkflowDispatched', data: { name: 'Loop' } },
        { revision: 300, type: 'WorkflowEventReceived', data: { name: 'direct', data: [] } },
        ...Array.from({ length: 200 }, (_, i) => ({ revision: 301 + i, type: 'WorkflowEventReceived', data: { queuedAt: 1 + i } })),
        ...Array.from({ length: 5 }, (_, i) => ({ revision: 501 + i, type: 'WorkflowEventReceived', data: { queuedAt: 202 + i } })),
      ];
      const reads: Array<{ from: number; count: number; got: number }> = [];
      const counted = {
        readStream: async (streamId: string, options: ReadStreamOptions = {}) => {
          const got = await store.readStream(streamId, options);
          reads.push({ from: Number(options.fromRevision), count: options.maxCount ?? Infinity, got: got.length });
          return got;
        },
      };

      const out = await withReleasedData(counted, stream, history);
      expect(out.slice(0, 2)).toEqual(history.slice(0, 2));
      expect(out.slice(2, 202).map((e) => e.data)).toEqual(Array.from({ length: 200 }, (_, i) => ({ name: 'update', data: [i] })));
      expect(out.slice(202).map((e) => e.data)).toEqual(Array.from({ length: 5 }, (_, i) => ({ name: 'late', data: [i], causeId: `c${i}` })));
      expect(out.map((e) => [e.revision, e.type])).toEqual(history.map((e) => [e.revision, e.type]));
      // 200 back to back: ceil(200 / 64) reads; then one for the 5; never the large event at 201.
      expect(reads).toEqual([
        { from: 1, count: RELEASE_READ_CHUNK, got: RELEASE_READ_CHUNK },
        { from: 65, count: RELEASE_READ_CHUNK, got: RELEASE_READ_CHUNK },
        { from: 129, count: RELEASE_READ_CHUNK, got: RELEASE_READ_CHUNK },
        { from: 193, count: 8, got: 8 },
        { from: 202, count: 5, got: 5 },
      ]);

      // No release: no read.
      reads.length = 0;
      expect(await withReleasedData(counted, stream, history.slice(0, 2))).toEqual(history.slice(0, 2));
      expect(reads).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
