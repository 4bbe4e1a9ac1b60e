/**
 * What a retention sweep looks at (`WorkflowsReadModel.finishedBefore`, batch after batch, as
 * RetentionService.sweepOnce pages). Finished rows older than the cutoff that it keeps (a derived
 * id within IDEMPOTENCY_WINDOW_MS, which may be longer than RETENTION_DAYS; a live schedule's last
 * run) stay in the `rm_workflows_finished (updated_at)` index among the rows to delete: a sweep
 * that restarted each batch (`LIMIT 500`) from the oldest row walked all of them again, (rows
 * kept) × (rows deleted / 500) row visits, on the event loop. Each batch now starts after the last
 * row of the one before. Rows that share one updated_at (one millisecond) go by rowid, which that
 * index holds after updated_at: a keyset on (updated_at, id) sorted the whole group again for
 * every batch whose cursor sat among them (found in review). The tests count the rows the query
 * looks at by counting `substr` calls (the v8 test evaluates it once per row visited).
 */
import { describe, expect, it } from '@jest/globals';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { type WorkflowView, WorkflowsReadModel } from '../workflows/workflows.read-model.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse('2030-01-02T00:00:00.000Z');
const uuid = (version: '7' | '8', n: number) => {
  const hex = n.toString(16).padStart(12, '0');
  return `0190aaaa-0000-${version}000-8000-${hex}`;
};

/** A workflows read model in memory (with the schedules table its query reads), and a count of the rows a query looks at. */
function model() {
  const rm = new ReadModelDb(':memory:');
  const workflows = new WorkflowsReadModel(rm);
  workflows.migrate();
  rm.db.exec(`CREATE TABLE IF NOT EXISTS rm_schedules (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, revision INTEGER NOT NULL, state TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, status TEXT NOT NULL DEFAULT '')`);
  const insert = rm.db.prepare<[string, number, string, string | null, number, number]>(
    `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, schedule_id, created_at, updated_at)
     VALUES (?, ?, 'a', 'e', 'W', 'W', ?, '[]', ?, ?, ?)`,
  );
  const counted = { visited: 0 };
  const countVisits = () =>
    rm.db.function('substr', { deterministic: true }, (s: unknown, start: unknown, length: unknown) => {
      counted.visited++;
      return String(s).substr(Number(start) - 1, Number(length));
    });
  /** RetentionService.sweepOnce's paging, with the rows' deletion (the WorkflowsExpired projection) inline; answers how many it deleted. */
  const sweep = (cutoff: Date, derivedSince: Date): number => {
    let deleted = 0;
    let after: WorkflowView | undefined;
    for (;;) {
      const expired = workflows.finishedBefore(cutoff, 500, derivedSince, after);
      for (const view of expired) rm.db.prepare('DELETE FROM rm_workflows WHERE id = ?').run(view.id);
      deleted += expired.length;
      after = expired.at(-1);
      if (expired.length < 500) return deleted;
    }
  };
  return { rm, insert, counted, countVisits, sweep };
}

describe('a retention sweep over finished workflows it keeps', () => {
  it('visits each row about once, not once per batch (RETENTION_DAYS=0.5, IDEMPOTENCY_WINDOW_MS=24 h, 20,000 kept children, 5,000 to delete)', () => {
    const { rm, insert, counted, countVisits, sweep } = model();
    // Between 24 h and 12 h ago, in order of last change: four children (v8, kept) for every
    // workflow of a plain id (v7, deleted).
    const rows = 25_000;
    rm.db.transaction(() => {
      for (let i = 0; i < rows; i++) {
        const updated = NOW - 24 * HOUR + 60_000 + Math.floor((i * 11 * HOUR) / rows);
        insert.run(uuid(i % 5 === 4 ? '7' : '8', i), i, 'completed', null, updated - 1000, updated);
      }
    })();
    countVisits();
    expect(sweep(new Date(NOW - 0.5 * DAY), new Date(NOW - DAY))).toBe(5_000);
    // Linear: each of the 25,000 rows looked at about once (twice allowed).
    expect(counted.visited).toBeLessThanOrEqual(2 * rows);
  });

  it('visits each row about once with default settings too, when live (e.g. paused) schedules keep their last runs (5,000 kept, 5,000 to delete)', () => {
    const { rm, insert, counted, countVisits, sweep } = model();
    const schedule = rm.db.prepare(`INSERT INTO rm_schedules (id, seq, revision, state, created_at, updated_at, status) VALUES (?, ?, 0, ?, 0, 0, 'paused')`);
    const kept = 5_000;
    const rows = 10_000;
    rm.db.transaction(() => {
      // RETENTION_DAYS=30: the paused schedules' last runs are 60 days old, the plain ones 40 days.
      for (let i = 0; i < kept; i++) {
        const id = uuid('7', i);
        schedule.run(`s-${i}`, i, JSON.stringify({ status: 'paused', lastDispatchId: id }));
        insert.run(id, i, 'completed', `s-${i}`, NOW - 60 * DAY + i, NOW - 60 * DAY + i);
      }
      for (let i = kept; i < rows; i++) insert.run(uuid('7', i), i, 'completed', null, NOW - 40 * DAY + i, NOW - 40 * DAY + i);
    })();
    countVisits();
    expect(sweep(new Date(NOW - 30 * DAY), new Date(NOW - DAY))).toBe(rows - kept);
    expect(counted.visited).toBeLessThanOrEqual(2 * rows);
  });

  it('looks at each of 20,000 rows of one millisecond once', () => {
    const { rm, insert, counted, countVisits, sweep } = model();
    const rows = 20_000;
    rm.db.transaction(() => {
      // Inserted in an order unrelated to id (rowid order differs from id order).
      for (let i = 0; i < rows; i++) insert.run(`0190aaaa-0000-7000-8000-${((i * 7919) % rows).toString(16).padStart(12, '0')}`, i, 'terminated', null, NOW - 40 * DAY, NOW - 40 * DAY);
    })();
    countVisits();
    expect(sweep(new Date(NOW - 30 * DAY), new Date(NOW - DAY))).toBe(rows);
    expect(counted.visited).toBeLessThanOrEqual(2 * rows);
  });
});
