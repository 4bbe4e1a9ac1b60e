/**
 * `WorkflowsReadModel.finishedBefore` skips a
 * workflow with a derived id (UUID v8: every child workflow, every keyed dispatch) dispatched
 * within IDEMPOTENCY_WINDOW_MS. Whenever the window is longer than RETENTION_DAYS (decimals are
 * allowed; the window may be up to 30 days), those rows are finished, older than the cutoff and
 * kept: they sit in the `rm_workflows_finished (updated_at)` index among the rows to delete, and
 * a sweep that restarted each batch (`LIMIT 500`) from the oldest row walked all of them again:
 * (rows kept) × (rows deleted / 500) row visits, on the event loop. Each batch now starts after
 * the last row of the one before (as RetentionService.sweepOnce does). The test counts the rows the
 * query looks at by counting `substr` calls (the v8 test evaluates it once per row visited).
 */
import { describe, expect, it } from '@jest/globals';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { type WorkflowView, WorkflowsReadModel } from '../workflows/workflows.read-model.js';

const HOUR = 3_600_000;
const NOW = Date.parse('2030-01-02T00:00:00.000Z');
const uuid = (version: '7' | '8', n: number) => {
  const hex = n.toString(16).padStart(12, '0');
  return `0190aaaa-0000-${version}000-8000-${hex}`;
};

describe('a retention sweep over finished workflows kept for their derived ids', () => {
  it('visits each row about once, not once per batch (RETENTION_DAYS=0.5, IDEMPOTENCY_WINDOW_MS=24 h, 20,000 kept children, 5,000 to delete)', () => {
    const rm = new ReadModelDb(':memory:');
    const model = new WorkflowsReadModel(rm);
    model.migrate();
    rm.db.exec(`CREATE TABLE IF NOT EXISTS rm_schedules (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, revision INTEGER NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, status TEXT NOT NULL DEFAULT '')`);
    const insert = rm.db.prepare(
      `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, created_at, updated_at)
       VALUES (?, ?, 'a', 'e', 'W', 'W', 'completed', '[]', ?, ?)`,
    );
    // Between 24 h and 12 h ago, in order of last change: four children (v8, kept) for every
    // workflow of a plain id (v7, deleted).
    const rows = 25_000;
    rm.db.transaction(() => {
      for (let i = 0; i < rows; i++) {
        const updated = NOW - 24 * HOUR + 60_000 + Math.floor((i * 11 * HOUR) / rows);
        insert.run(uuid(i % 5 === 4 ? '7' : '8', i), i, updated - 1000, updated);
      }
    })();
    let visited = 0;
    rm.db.function('substr', { deterministic: true }, (s: unknown, start: unknown, length: unknown) => {
      visited++;
      return String(s).substr(Number(start) - 1, Number(length));
    });

    // RetentionService.sweepOnce, with the rows' deletion (the WorkflowsExpired projection) inline.
    const cutoff = new Date(NOW - 0.5 * 24 * HOUR);
    const derivedSince = new Date(NOW - 24 * HOUR);
    let deleted = 0;
    let after: WorkflowView | undefined;
    for (;;) {
      const expired = model.finishedBefore(cutoff, 500, derivedSince, after);
      for (const view of expired) rm.db.prepare('DELETE FROM rm_workflows WHERE id = ?').run(view.id);
      deleted += expired.length;
      after = expired.at(-1);
      if (expired.length < 500) break;
    }
    expect(deleted).toBe(5_000);
    // Linear: each of the 25,000 rows looked at about once (twice allowed).
    expect(visited).toBeLessThanOrEqual(2 * rows);
  });

  it('visits each row about once with default settings too, when live (e.g. paused) schedules keep their last runs (5,000 kept, 5,000 to delete)', () => {
    const rm = new ReadModelDb(':memory:');
    const model = new WorkflowsReadModel(rm);
    model.migrate();
    rm.db.exec(`CREATE TABLE IF NOT EXISTS rm_schedules (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, revision INTEGER NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, status TEXT NOT NULL DEFAULT '')`);
    const insert = rm.db.prepare(
      `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, schedule_id, created_at, updated_at)
       VALUES (?, ?, 'a', 'e', 'W', 'W', 'completed', '[]', ?, ?, ?)`,
    );
    const schedule = rm.db.prepare(`INSERT INTO rm_schedules (id, seq, revision, state, created_at, updated_at, status) VALUES (?, ?, 0, ?, 0, 0, 'paused')`);
    const kept = 5_000;
    const rows = 10_000;
    rm.db.transaction(() => {
      // RETENTION_DAYS=30: the paused schedules' last runs are 60 days old, the plain ones 40 days.
      for (let i = 0; i < kept; i++) {
        const id = uuid('7', i);
        schedule.run(`s-${i}`, i, JSON.stringify({ status: 'paused', lastDispatchId: id }));
        insert.run(id, i, `s-${i}`, NOW - 60 * 24 * HOUR + i, NOW - 60 * 24 * HOUR + i);
      }
      for (let i = kept; i < rows; i++) insert.run(uuid('7', i), i, null, NOW - 40 * 24 * HOUR + i, NOW - 40 * 24 * HOUR + i);
    })();
    let visited = 0;
    rm.db.function('substr', { deterministic: true }, (s: unknown, start: unknown, length: unknown) => {
      visited++;
      return String(s).substr(Number(start) - 1, Number(length));
    });
    const cutoff = new Date(NOW - 30 * 24 * HOUR);
    const derivedSince = new Date(NOW - 24 * HOUR);
    let deleted = 0;
    let after: WorkflowView | undefined;
    for (;;) {
      const expired = model.finishedBefore(cutoff, 500, derivedSince, after);
      for (const view of expired) rm.db.prepare('DELETE FROM rm_workflows WHERE id = ?').run(view.id);
      deleted += expired.length;
      after = expired.at(-1);
      if (expired.length < 500) break;
    }
    expect(deleted).toBe(rows - kept);
    expect(visited).toBeLessThanOrEqual(2 * rows);
  });
});
