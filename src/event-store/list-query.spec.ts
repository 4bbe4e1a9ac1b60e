import { describe, expect, it } from '@jest/globals';
import { TasksReadModel } from '../tasks/tasks.read-model.js';
import type { WorkflowStatus } from '../workflows/domain/workflow.decider.js';
import { type WorkflowFilter, WorkflowsReadModel } from '../workflows/workflows.read-model.js';
import { QUERY_COUNT_CAP, ReadModelDb } from './read-model-db.js';

/**
 * Lists read through a named index with a bounded window (list-query.ts). Whatever the filter and
 * the order, paging through every page by its `endCursor` must give exactly the rows a plain SQL
 * query gives, in order, once each; counts are exact below the cap and a lower bound at it; and
 * no statement reads the table whole or sorts more than the cap.
 */

const N = QUERY_COUNT_CAP * 2 + 3_000;
const T0 = 1_700_000_000_000;
const STATUSES: WorkflowStatus[] = ['running', 'paused', 'completed', 'failed', 'terminated'];

/** Rows of two apps, interleaved; in app `a`, rare values near the start, the middle and the end of the log. */
function fixture(): { rm: ReadModelDb; workflows: WorkflowsReadModel; tasks: TasksReadModel } {
  const rm = new ReadModelDb(':memory:');
  const workflows = new WorkflowsReadModel(rm);
  workflows.migrate();
  const tasks = new TasksReadModel(rm);
  tasks.migrate();
  const wf = rm.db.prepare(
    `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, tag, status, input, parent_id, schedule_id, created_at, updated_at)
     VALUES (?, ?, ?, 'e', ?, ?, ?, ?, '[]', ?, ?, ?, ?)`,
  );
  const task = rm.db.prepare(
    `INSERT INTO rm_tasks (id, seq, app_id, environment, name, tag, status, attempts, input, created_at, updated_at) VALUES (?, ?, ?, 'e', ?, ?, ?, 0, '[]', ?, ?)`,
  );
  const rare = (i: number) => i % 9_001 === 7 || (i > N - 40 && i % 5 === 0);
  rm.db.transaction(() => {
    for (let i = 0; i < N; i++) {
      const app = i % 10 === 9 ? 'b' : 'a';
      const name = rare(i) ? (i % 2 ? 'A_v2' : 'A_v2_v3') : i % 3 ? 'A' : 'B';
      const base = name.replace(/_v\d+$/, '');
      const status = rare(i) ? 'paused' : STATUSES[[2, 2, 2, 3, 0, 2, 2, 4][i % 8]];
      const id = `w${String(i).padStart(7, '0')}`;
      // created_at follows the log, with a little disorder (two writers' clocks)
      const created = T0 + i * 1000 + (i % 7) * 300;
      wf.run(id, i * 2 + 1, app, name, base, i % 50 === 0 ? `t${i % 3}` : null, status, rare(i) ? 'p1' : i % 4000 === 1 ? 'p2' : null, i % 1000 === 3 ? 's1' : null, created, created + 5);
      task.run(`t${String(i).padStart(7, '0')}`, i * 2 + 2, app, rare(i) ? 'rareTask' : i % 2 ? 'x' : 'y', i % 30 === 0 ? 'tg' : null, rare(i) ? 'failed' : i % 5 ? 'completed' : 'pending', created, created);
    }
  })();
  return { rm, workflows, tasks };
}

const { rm, workflows, tasks } = fixture();
const scope = { appId: 'a', environment: 'e' };

/** The same filter as plain SQL, no index named (the reference). */
function referenceWorkflows(f: WorkflowFilter, newestFirst: boolean): string[] {
  const where = ['app_id = @appId', 'environment = @environment'];
  const params: Record<string, unknown> = { appId: f.appId, environment: f.environment };
  const add = (clause: string, key: string, value: unknown) => {
    if (value == null) return;
    where.push(clause);
    params[key] = value instanceof Date ? value.getTime() : value;
  };
  add('(name = @name OR base_name = @name)', 'name', f.name);
  add('tag = @tag', 'tag', f.tag);
  add('status = @status', 'status', f.status);
  add('parent_id = @parentId', 'parentId', f.parentId);
  add('schedule_id = @scheduleId', 'scheduleId', f.scheduleId);
  add('created_at >= @createdAfter', 'createdAfter', f.createdAfter);
  add('created_at < @createdBefore', 'createdBefore', f.createdBefore);
  return (rm.db.prepare(`SELECT id FROM rm_workflows WHERE ${where.join(' AND ')} ORDER BY seq ${newestFirst ? 'DESC' : ''}`).all(params) as Array<{ id: string }>).map((r) => r.id);
}

/** Every page by its cursor: the ids in order, how many pages, and the first page's count. */
function pageThrough<V extends { id: string }>(read: (after: string | null) => { nodes: V[]; totalCount: number; totalCountCapped: boolean; pageInfo: { endCursor: string | null; hasNextPage: boolean } }, first: number) {
  const ids: string[] = [];
  let after: string | null = null;
  let pages = 0;
  let count: { totalCount: number; totalCountCapped: boolean } | undefined;
  for (;;) {
    const page = read(after);
    pages += 1;
    count ??= page;
    expect(page.nodes.length).toBeLessThanOrEqual(first);
    ids.push(...page.nodes.map((n) => n.id));
    if (!page.pageInfo.hasNextPage) break;
    expect(page.pageInfo.endCursor).not.toBeNull();
    after = page.pageInfo.endCursor;
    if (pages > 200) throw new Error('paging does not end');
  }
  return { ids, pages, count: count! };
}

const FILTERS: Array<[string, Partial<WorkflowFilter>]> = [
  ['the whole scope', {}],
  ['a common name', { name: 'A' }],
  ['a name found nowhere', { name: 'Nope' }],
  ['a versioned name (and its own versions)', { name: 'A_v2' }],
  ['a common state', { status: 'completed' }],
  ['a rare state', { status: 'paused' }],
  ['a common name in a rare state', { name: 'A', status: 'paused' }],
  ['a common name in a state it never has', { name: 'B', status: 'paused' }],
  ['a tag', { tag: 't1' }],
  ['a tag and a state', { tag: 't2', status: 'failed' }],
  ['a parent', { parentId: 'p1' }],
  ['a parent and a name', { parentId: 'p2', name: 'A' }],
  ['a schedule', { scheduleId: 's1' }],
  ['a schedule found nowhere', { scheduleId: 'nope' }],
  ['the last minutes', { createdAfter: new Date(T0 + (N - 500) * 1000) }],
  ['the first minutes', { createdBefore: new Date(T0 + 500 * 1000) }],
  ['a window in the middle, in a state', { createdAfter: new Date(T0 + 10_000 * 1000), createdBefore: new Date(T0 + 22_000 * 1000), status: 'running' }],
  ['a rare state in the last minutes', { status: 'paused', createdAfter: new Date(T0 + (N - 500) * 1000) }],
];

describe('workflow lists (list-query.ts)', () => {
  it.each(FILTERS.flatMap(([label, f]) => [[label, f, false] as const, [label, f, true] as const]))('%s (newest first: %s): every match once, in order, by cursor', (_label, f, newestFirst) => {
    const filter = { ...scope, ...f };
    const expected = referenceWorkflows(filter, newestFirst);
    const { ids, count } = pageThrough((after) => workflows.page(filter, 500, after, newestFirst), 500);
    expect(ids).toEqual(expected);
    if (count.totalCountCapped) expect(count.totalCount).toBeLessThanOrEqual(Math.min(expected.length, QUERY_COUNT_CAP));
    else expect(count.totalCount).toBe(expected.length);
  });

  it('a filter that one index serves alone fills every page (no short page before the end)', () => {
    const filters: Array<Partial<WorkflowFilter>> = [{ name: 'A' }, { status: 'paused' }, { parentId: 'p1' }, { tag: 't1' }, { createdAfter: new Date(T0 + (N - 500) * 1000) }];
    for (const f of filters) {
      const expected = referenceWorkflows({ ...scope, ...f }, true);
      const { pages } = pageThrough((after) => workflows.page({ ...scope, ...f }, 500, after, true), 500);
      expect(pages).toBe(Math.max(1, Math.ceil(expected.length / 500)));
    }
  });

  it('a cursor whose row is gone goes on from its place (the cursor carries the row\'s seq), and so does a bare id from the next id', () => {
    const filter = { ...scope, status: 'running' as const };
    const all = referenceWorkflows(filter, false);
    const first = workflows.page(filter, 3, null);
    const cursor = first.pageInfo.endCursor!;
    const gone = first.nodes.at(-1)!.id;
    expect(cursor.endsWith(`:${gone}`)).toBe(true);
    rm.db.prepare('SAVEPOINT gone').run();
    try {
      rm.db.prepare('DELETE FROM rm_workflows WHERE id = ?').run(gone);
      expect(workflows.page(filter, 3, cursor).nodes.map((w) => w.id)).toEqual(all.slice(3, 6));
      // A row's id as `after` (the cursors of earlier versions): the row next to it by id.
      expect(workflows.page(filter, 3, gone).nodes.map((w) => w.id)).toEqual(all.slice(3, 6));
    } finally {
      rm.db.prepare('ROLLBACK TO gone').run();
      rm.db.prepare('RELEASE gone').run();
    }
  });

  it('answers without its indexes while another instance rebuilds them (a fold into empty read models drops them)', () => {
    const filter = { ...scope, status: 'paused' as const };
    const expected = referenceWorkflows(filter, false);
    const failures = workflows.failureGroups('a', 'e', 0);
    rm.db.prepare('SAVEPOINT rebuilding').run();
    try {
      rm.db.exec('DROP INDEX rm_workflows_state; DROP INDEX rm_workflows_failed; DROP INDEX rm_workflows_base_name');
      expect(pageThrough((after) => workflows.page(filter, 500, after), 500).ids).toEqual(expected);
      expect(workflows.countByStatus({ ...scope, name: 'A' }, ['paused']).get('paused')!.count).toBeGreaterThan(0);
      expect(workflows.failureGroups('a', 'e', 0)).toEqual(failures);
    } finally {
      rm.db.prepare('ROLLBACK TO rebuilding').run();
      rm.db.prepare('RELEASE rebuilding').run();
    }
  });

  it('counts by state: exact from the states index for the whole scope, a lower bound within the window otherwise', () => {
    const exact = workflows.countByStatus(scope, STATUSES);
    for (const status of STATUSES) {
      const n = referenceWorkflows({ ...scope, status }, false).length;
      expect(exact.get(status)).toEqual(n > QUERY_COUNT_CAP ? { count: QUERY_COUNT_CAP, capped: true } : { count: n, capped: false });
    }
    const byName = workflows.countByStatus({ ...scope, name: 'A' }, STATUSES);
    for (const status of STATUSES) {
      const counted = byName.get(status)!;
      expect(counted.capped).toBe(true);
      expect(counted.count).toBeLessThanOrEqual(referenceWorkflows({ ...scope, name: 'A', status }, false).length);
    }
    const recent = workflows.countByStatus({ ...scope, createdAfter: new Date(T0 + (N - 500) * 1000) }, STATUSES);
    for (const status of STATUSES) {
      expect(recent.get(status)).toEqual({ count: referenceWorkflows({ ...scope, status, createdAfter: new Date(T0 + (N - 500) * 1000) }, false).length, capped: false });
    }
  });

  it('no statement reads the table whole, and only a small index out of order is sorted', () => {
    const seen: string[] = [];
    const prepare = rm.db.prepare.bind(rm.db);
    (rm.db as { prepare: unknown }).prepare = (sql: string) => {
      seen.push(sql);
      return prepare(sql);
    };
    try {
      for (const [, f] of FILTERS) for (const newestFirst of [false, true]) workflows.page({ ...scope, ...f }, 50, null, newestFirst);
      workflows.countByStatus({ ...scope, name: 'A' }, STATUSES);
      tasks.page({ ...scope, status: 'failed' }, 50);
    } finally {
      (rm.db as { prepare: unknown }).prepare = prepare;
    }
    const params = { appId: 'a', environment: 'e', name: 'A', status: 'paused', tag: 't1', parentId: 'p1', scheduleId: 's1', createdAfter: 0, createdBefore: 0, from: 0, limit: 1, bound: 0 };
    for (const sql of new Set(seen)) {
      if (!/rm_(workflows|tasks)/.test(sql) || /^SELECT seq FROM rm_\w+ WHERE id [=<>]/.test(sql)) continue;
      const used = Object.fromEntries(Object.entries(params).filter(([k]) => sql.includes(`@${k}`)));
      const plan = (prepare(`EXPLAIN QUERY PLAN ${sql}`).all(used) as Array<{ detail: string }>).map((r) => r.detail);
      expect({ sql, scans: plan.filter((d) => /^SCAN rm_(workflows|tasks)$/.test(d)) }).toEqual({ sql, scans: [] });
      // Sorting is for merging two scans' pages or for an index out of seq order (at most the cap of it).
      if (plan.some((d) => /TEMP B-TREE/.test(d))) expect(sql).toMatch(/UNION ALL|rm_workflows_created|GROUP BY/);
    }
  });
});

describe('task lists', () => {
  it('a match found nowhere among many is searched a window at a time: short pages, each going on from where it stopped', () => {
    // The name has more entries than the cap; the state, which has no index, is checked on the rows.
    const { ids, pages } = pageThrough((after) => tasks.page({ ...scope, name: 'x', status: 'failed' }, 50, after), 50);
    expect(ids).toEqual([]);
    expect(pages).toBe(Math.ceil((rm.db.prepare("SELECT count(*) AS n FROM rm_tasks WHERE app_id = 'a' AND name = 'x'").get() as { n: number }).n / QUERY_COUNT_CAP));
  });

  it.each([
    ['a rare name', { name: 'rareTask' }],
    ['a rare state', { status: 'failed' as const }],
    ['a tag and a state', { tag: 'tg', status: 'pending' as const }],
  ])('%s: every match once, in order', (_label, f) => {
    const where = ["app_id = 'a'", "environment = 'e'", ...Object.entries(f).map(([k, v]) => `${k} = '${v}'`)];
    const expected = (rm.db.prepare(`SELECT id FROM rm_tasks WHERE ${where.join(' AND ')} ORDER BY seq`).all() as Array<{ id: string }>).map((r) => r.id);
    const { ids } = pageThrough((after) => tasks.page({ ...scope, ...f }, 300, after), 300);
    expect(ids).toEqual(expected);
  });
});
