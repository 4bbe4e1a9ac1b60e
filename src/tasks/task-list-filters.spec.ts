import { describe, expect, it } from '@jest/globals';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { type TaskStatus, TasksReadModel } from './tasks.read-model.js';

/**
 * Task lists: the name is read through its index, tag and state are checked on the rows within a
 * window of the index. Every combination, paged a few rows (or a few hundred) at a time, below
 * and past the count cap, against the same filter in plain code.
 */
const STATUSES: TaskStatus[] = ['pending', 'running', 'completed', 'failed'];

function setUp(n: number, seed: number) {
  let s = seed;
  const rnd = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const rm = new ReadModelDb(':memory:');
  const model = new TasksReadModel(rm);
  model.migrate();
  const insert = rm.db.prepare(
    `INSERT INTO rm_tasks (id, seq, app_id, environment, name, tag, status, attempts, input, output, error, schedule_id, parent_id, created_at, updated_at)
     VALUES (@id, @seq, @app, 'e', @name, @tag, @status, 0, '[]', NULL, NULL, NULL, NULL, 0, 0)`,
  );
  const rows: Array<{ id: string; seq: number; app: string; name: string; tag: string | null; status: TaskStatus }> = [];
  rm.db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const row = { id: `${Math.floor(rnd() * 1e9)}-${i}`, seq: 5 + i * 2, app: rnd() < 0.9 ? 'a' : 'b', name: pick(['email', 'sms', 'push']), tag: pick([null, 'x', 'y']), status: pick(STATUSES) };
      rows.push(row);
      insert.run(row);
    }
  })();
  return { model, rows, pick, rnd };
}

describe('task lists: every filter combination against plain code', () => {
  for (const [n, rounds, sizes] of [
    [300, 300, [1, 2, 3, 7]],
    [24_000, 30, [100, 500]],
  ] as const) {
    it(`${n} tasks`, () => {
      const { model, rows, pick } = setUp(n, n);
      for (let round = 0; round < rounds; round++) {
        const filter = { appId: 'a', environment: 'e', name: pick([null, 'email', 'sms', 'none']), tag: pick([null, 'x', 'y']), status: pick([null, ...STATUSES]) };
        const first = pick(sizes);
        const expected = rows
          .filter((r) => r.app === 'a' && (filter.name == null || r.name === filter.name) && (filter.tag == null || r.tag === filter.tag) && (filter.status == null || r.status === filter.status))
          .map((r) => r.id);
        const got: string[] = [];
        let after: string | null = null;
        for (let pages = 0; pages < 10_000; pages++) {
          const page = model.page(filter, first, after);
          if (n < 10_000) expect({ round, filter, total: page.totalCount }).toEqual({ round, filter, total: expected.length });
          got.push(...page.nodes.map((t) => t.id));
          if (!page.pageInfo.hasNextPage) break;
          after = page.pageInfo.endCursor;
        }
        expect({ round, filter, first, n: got.length, same: got.join() === expected.join() }).toEqual({ round, filter, first, n: expected.length, same: true });
      }
    });
  }
});
