import { describe, expect, it } from '@jest/globals';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { baseName } from './domain/workflow.decider.js';
import { type WorkflowFilter, WorkflowsReadModel } from './workflows.read-model.js';
import type { WorkflowStatus } from './domain/workflow.decider.js';

/**
 * Every combination of the list filters (name, tag, state, parent, schedule, time range; oldest
 * or newest first), paged a few rows at a time, against the same filter applied to the rows in
 * plain code: the pages hold exactly the matches, in order, once each, and `totalCount` and
 * `countByStatus` agree with them (far below the count cap, every count is exact).
 */

const STATUSES: WorkflowStatus[] = ['running', 'paused', 'completed', 'failed', 'terminated'];
const NAMES = ['Order', 'Order_v2', 'Order_v2_v3', 'Pay'];

interface Plain {
  id: string;
  seq: number;
  app: string;
  name: string;
  tag: string | null;
  status: WorkflowStatus;
  parent: string | null;
  schedule: string | null;
  created: number;
}

/** A small deterministic generator (mulberry32). */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function setUp(n: number, rnd: () => number): { model: WorkflowsReadModel; rows: Plain[] } {
  const rm = new ReadModelDb(':memory:');
  const model = new WorkflowsReadModel(rm);
  model.migrate();
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const rows: Plain[] = [];
  const insert = rm.db.prepare(
    `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, version, tag, status, input, output, error, parent_id, parent_seq, schedule_id, queries, created_at, updated_at, run_from)
     VALUES (@id, @seq, @app, 'e', @name, @base, NULL, @tag, @status, '[]', NULL, NULL, @parent, NULL, @schedule, NULL, @created, @created, NULL)`,
  );
  for (let i = 0; i < n; i++) {
    const row: Plain = {
      // Ids not in seq order (as derived ids are not).
      id: `${(Math.floor(rnd() * 1e9) + 1e9).toString(16)}-${i}`,
      seq: 10 + i * 3,
      app: rnd() < 0.85 ? 'a' : 'b',
      name: pick(NAMES),
      tag: pick([null, 't1', 't2']),
      status: pick(STATUSES),
      parent: pick([null, null, 'p1', 'p2']),
      schedule: pick([null, null, 's1']),
      // Dispatch times roughly, not strictly, in seq order.
      created: 1_700_000_000_000 + i * 1000 + Math.floor(rnd() * 5000),
    };
    rows.push(row);
    insert.run({ ...row, base: baseName(row.name) });
  }
  return { model, rows };
}

const matches = (f: WorkflowFilter) => (r: Plain) =>
  r.app === f.appId &&
  (f.name == null || r.name === f.name || baseName(r.name) === f.name) &&
  (f.tag == null || r.tag === f.tag) &&
  (f.status == null || r.status === f.status) &&
  (f.parentId == null || r.parent === f.parentId) &&
  (f.scheduleId == null || r.schedule === f.scheduleId) &&
  (f.createdAfter == null || r.created >= f.createdAfter.getTime()) &&
  (f.createdBefore == null || r.created < f.createdBefore.getTime());

describe('workflow lists: every filter combination against plain code', () => {
  it('pages hold exactly the matches, in order, and the counts agree', () => {
    const rnd = random(7);
    const { model, rows } = setUp(400, rnd);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const t0 = 1_700_000_000_000;
    for (let round = 0; round < 600; round++) {
      const filter: WorkflowFilter = {
        appId: 'a',
        environment: 'e',
        name: pick([null, null, ...NAMES, 'Order_v3']),
        tag: pick([null, null, 't1', 't2']),
        status: pick([null, null, ...STATUSES]),
        parentId: pick([null, null, null, 'p1', 'p2']),
        scheduleId: pick([null, null, null, 's1']),
        createdAfter: rnd() < 0.3 ? new Date(t0 + Math.floor(rnd() * 400_000)) : null,
        createdBefore: rnd() < 0.3 ? new Date(t0 + Math.floor(rnd() * 400_000)) : null,
      };
      const newestFirst = rnd() < 0.5;
      const first = 1 + Math.floor(rnd() * 7);
      const expected = rows.filter(matches(filter)).sort((x, y) => (newestFirst ? y.seq - x.seq : x.seq - y.seq)).map((r) => r.id);
      const got: string[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 1000; pages++) {
        const page = model.page(filter, first, after, newestFirst);
        expect({ round, filter, totalCount: page.totalCount, capped: page.totalCountCapped }).toEqual({ round, filter, totalCount: expected.length, capped: false });
        got.push(...page.nodes.map((n) => n.id));
        if (!page.pageInfo.hasNextPage) break;
        after = page.pageInfo.endCursor;
      }
      expect({ round, filter, newestFirst, first, got }).toEqual({ round, filter, newestFirst, first, got: expected });
      const counts = model.countByStatus(filter, STATUSES);
      const byStatus = Object.fromEntries(STATUSES.map((s) => [s, rows.filter(matches({ ...filter, status: s })).length]));
      expect({ round, filter, counts: Object.fromEntries(STATUSES.map((s) => [s, counts.get(s)?.count])) }).toEqual({ round, filter, counts: byStatus });
    }
  });

  it('past the count cap: paging still reaches every match once, in order, through short pages', () => {
    const rnd = random(11);
    const { model, rows } = setUp(26_000, rnd);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const t0 = 1_700_000_000_000;
    for (let round = 0; round < 40; round++) {
      const filter: WorkflowFilter = {
        appId: 'a',
        environment: 'e',
        name: pick([null, ...NAMES]),
        tag: pick([null, 't1', 't2']),
        status: pick([null, ...STATUSES]),
        parentId: pick([null, null, 'p1']),
        scheduleId: pick([null, null, 's1']),
        createdAfter: rnd() < 0.4 ? new Date(t0 + Math.floor(rnd() * 26_000_000)) : null,
        createdBefore: rnd() < 0.4 ? new Date(t0 + Math.floor(rnd() * 26_000_000)) : null,
      };
      const newestFirst = rnd() < 0.5;
      const first = 50 + Math.floor(rnd() * 400);
      const expected = rows.filter(matches(filter)).sort((x, y) => (newestFirst ? y.seq - x.seq : x.seq - y.seq)).map((r) => r.id);
      const got: string[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 10_000; pages++) {
        const page = model.page(filter, first, after, newestFirst);
        expect(page.nodes.length).toBeLessThanOrEqual(first);
        got.push(...page.nodes.map((n) => n.id));
        if (!page.pageInfo.hasNextPage) break;
        after = page.pageInfo.endCursor;
      }
      expect({ round, filter, newestFirst, first, n: got.length, same: got.join() === expected.join() }).toEqual({ round, filter, newestFirst, first, n: expected.length, same: true });
    }
  });
});
