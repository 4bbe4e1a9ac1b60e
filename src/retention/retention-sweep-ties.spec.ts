/**
 * Rows that share one updated_at (one millisecond): a keyset on (updated_at, id) against an
 * index on updated_at alone looked at, and sorted by id, the whole group for every batch whose
 * cursor sat among them ((rows in the group)² / 1,000 visits; found in review). Ties now go by
 * rowid, which that index holds after updated_at: each row is looked at once.
 */
import { describe, expect, it } from '@jest/globals';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { type WorkflowView, WorkflowsReadModel } from '../workflows/workflows.read-model.js';

const NOW = Date.parse('2030-01-02T00:00:00.000Z');

describe('a retention sweep over rows that share one updated_at', () => {
  it('looks at each of 20,000 rows of one millisecond once', () => {
    const rm = new ReadModelDb(':memory:');
    const model = new WorkflowsReadModel(rm);
    model.migrate();
    rm.db.exec(`CREATE TABLE IF NOT EXISTS rm_schedules (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, revision INTEGER NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, status TEXT NOT NULL DEFAULT '')`);
    const insert = rm.db.prepare(`INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, created_at, updated_at) VALUES (?, ?, 'a', 'e', 'W', 'W', 'terminated', '[]', ?, ?)`);
    const rows = 20_000;
    rm.db.transaction(() => {
      // Inserted in an order unrelated to id (rowid order differs from id order).
      for (let i = 0; i < rows; i++) insert.run(`0190aaaa-0000-7000-8000-${((i * 7919) % rows).toString(16).padStart(12, '0')}`, i, NOW - 40 * 86_400_000, NOW - 40 * 86_400_000);
    })();
    let visited = 0;
    rm.db.function('substr', { deterministic: true }, (s: unknown, start: unknown, length: unknown) => {
      visited++;
      return String(s).substr(Number(start) - 1, Number(length));
    });
    let after: WorkflowView | undefined;
    let deleted = 0;
    for (;;) {
      const expired = model.finishedBefore(new Date(NOW - 30 * 86_400_000), 500, new Date(NOW - 86_400_000), after);
      for (const view of expired) rm.db.prepare('DELETE FROM rm_workflows WHERE id = ?').run(view.id);
      deleted += expired.length;
      after = expired.at(-1);
      if (expired.length < 500) break;
    }
    expect(deleted).toBe(rows);
    expect(visited).toBeLessThanOrEqual(2 * rows);
  });
});
