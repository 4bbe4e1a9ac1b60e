import type BetterSqlite3 from 'better-sqlite3';
import type { Page } from '../graphql/common.types.js';
import { QUERY_COUNT_CAP, type ReadModelDb } from './read-model-db.js';

/**
 * Lists of a read-model table (workflows, tasks) in `seq` order, at a cost bounded by the page and
 * by `QUERY_COUNT_CAP`, never by the table, whatever the filter, and whether or not SQLite has
 * statistics. The read models are never `ANALYZE`d, and without statistics SQLite walked a
 * million-workflow app in `seq` order for a rare name, state, parent or schedule: 0.15–0.45 s a
 * page, on the event loop.
 *
 * Each statement names its index (`INDEXED BY`). A filter's equalities that have an index of
 * their own are the candidates (`ListPlan.candidates`); the one with the fewest entries, counted
 * in its index up to the cap, is read, and the other conditions are checked on its rows. A page
 * is read through an index whose next column is `seq`, so entries come in page order and the
 * page stops after `first + 1` matches. When conditions are left to check, only
 * `QUERY_COUNT_CAP` entries past the cursor are searched: if that window ends before the page is
 * full, the page is short (even empty), `hasNextPage` is true and `endCursor` is the last entry
 * searched, so the next page goes on from there. Counts need no order, so any candidate serves
 * them.
 */

/** A scan of one index: `clause` holds the equalities (and ranges) of its leading columns. */
export interface IndexScan {
  index: string;
  clause: string;
  /** The index's own order, newest first, when its next column is not `seq` (default `seq DESC`). */
  newest?: string;
}

/** An indexed way to a filter's rows: scans whose rows together are exactly those `condition` selects. */
export interface Candidate {
  /** One scan; two, disjoint, for a versioned workflow name. */
  scans: IndexScan[];
  condition: string;
  /** The index's column after the clause's is `seq`: it can read a page. */
  ordered: boolean;
}

/** How a filter can be read. */
export interface ListPlan {
  table: string;
  params: Record<string, unknown>;
  candidates: Candidate[];
  /** Conditions no index serves, checked on the rows. */
  residual: string[];
  /** The scope's own index (app, environment, seq): read when no candidate can be. */
  scope: IndexScan;
}

/** What one statement reads: the scans, and the conditions left to check on their rows. */
export interface ChosenScan {
  table: string;
  scans: IndexScan[];
  residual: string[];
  /** The index's entries come in `seq` order; else it holds at most the cap, read whole and sorted. */
  ordered: boolean;
}

type Order = 'ASC' | 'DESC';

/**
 * Prepares a statement that names its indexes. While an instance folds a whole log into empty
 * read models, it drops their secondary indexes and builds them at the end (read-model-folder.ts);
 * another instance on the same file answering meanwhile reads without them rather than failing.
 */
export function prepareIndexed(rm: ReadModelDb, sql: string): BetterSqlite3.Statement {
  try {
    return rm.db.prepare(sql);
  } catch (error) {
    if (!/no such index/i.test((error as Error).message)) throw error;
    return rm.db.prepare(sql.replace(/ INDEXED BY \w+/g, ''));
  }
}

/** At most one entry past the cap of the scans, newest first in their index's order, with `columns`. */
function newestWindow(chosen: ChosenScan, columns: string): string {
  const limit = QUERY_COUNT_CAP + 1;
  const one = (s: IndexScan, extra: string) => `SELECT ${columns}${extra} FROM ${chosen.table} INDEXED BY ${s.index} WHERE ${s.clause} ORDER BY ${s.newest ?? 'seq DESC'} LIMIT ${limit}`;
  if (chosen.scans.length === 1) return one(chosen.scans[0], '');
  return `SELECT * FROM (${chosen.scans.map((s) => `SELECT * FROM (${one(s, ', seq')})`).join(' UNION ALL ')}) ORDER BY seq DESC LIMIT ${limit}`;
}

type CursorOp = '' | '>' | '>=' | '<' | '<=';

/** The statements a chosen scan runs. */
function listStatements(chosen: ChosenScan, order: Order, cursor: CursorOp) {
  const after = cursor === '' ? '' : ` AND seq ${cursor} @from`;
  const residual = chosen.residual.length > 0 ? ` AND ${chosen.residual.join(' AND ')}` : '';
  const residualExpr = chosen.residual.length > 0 ? chosen.residual.join(' AND ') : '1';
  const scan = (s: IndexScan, columns: string, where: string, tail: string) => `SELECT ${columns} FROM ${chosen.table} INDEXED BY ${s.index} WHERE ${s.clause}${where}${tail}`;
  const inOrder = (limit: string) => ` ORDER BY seq ${order} LIMIT ${limit}`;
  // Two scans are merged by `seq`: each is read in order up to the limit, then those few rows sorted.
  const union = (columns: string, where: string, limit: string) =>
    chosen.scans.length === 1
      ? scan(chosen.scans[0], columns, where, inOrder(limit))
      : `SELECT * FROM (${chosen.scans.map((s) => `SELECT * FROM (${scan(s, columns, where, inOrder(limit))})`).join(' UNION ALL ')})${inOrder(limit)}`;
  const windowEnd = order === 'ASC' ? ' AND seq <= @bound' : ' AND seq >= @bound';
  return {
    /** The page's rows: `first + 1` of them, up to the window's end when there is one. */
    page: (bounded: boolean) => union('*', `${after}${bounded ? windowEnd : ''}${residual}`, '@limit'),
    /**
     * Where the window of `QUERY_COUNT_CAP` entries past the cursor ends, and its row's id (no
     * row: it reaches the end of the index). SQLite skips an offset's rows before it reads their
     * columns, so one row is read besides the index.
     */
    bound:
      chosen.scans.length === 1
        ? scan(chosen.scans[0], 'seq, id', after, ` ORDER BY seq ${order} LIMIT 1 OFFSET ${QUERY_COUNT_CAP - 1}`)
        : `SELECT seq, id FROM (${union('seq, id', after, String(QUERY_COUNT_CAP))}) ORDER BY seq ${order} LIMIT 1 OFFSET ${QUERY_COUNT_CAP - 1}`,
    /**
     * Counts over a window of at most one entry past the cap, newest first in the index's order:
     * how many entries it holds (`scanned`; past the cap, the count stopped) and how many of them
     * pass the residual conditions (`n`), overall or by the value of `column`.
     */
    count: `SELECT count(*) AS scanned, coalesce(sum(ok), 0) AS n FROM (${newestWindow(chosen, `(${residualExpr}) AS ok`)})`,
    countBy: (column: string) =>
      `SELECT value, count(*) AS scanned, coalesce(sum(ok), 0) AS n FROM (${newestWindow(chosen, `${column} AS value, (${residualExpr}) AS ok`)}) GROUP BY value`,
  };
}

/** Entries of a candidate's index, counted up to one past the cap. */
function entries(rm: ReadModelDb, table: string, candidate: Candidate, params: Record<string, unknown>): number {
  return (prepareIndexed(rm, listStatements({ table, scans: candidate.scans, residual: [], ordered: candidate.ordered }, 'DESC', '').count).get(params) as { scanned: number }).scanned;
}

/**
 * The scan a statement reads: the candidate with the fewest entries (the only one, or the first
 * of those that tie, without counting). A page reads an index out of `seq` order only when it
 * holds at most the cap (then all its entries are read and sorted, a bounded cost). The other
 * candidates' conditions go to the residual; with no candidate, the scope's index is read.
 */
function choose(rm: ReadModelDb, plan: ListPlan, forPage: boolean, sizes = new Map<Candidate, number>()): ChosenScan {
  const size = (candidate: Candidate) => {
    let n = sizes.get(candidate);
    if (n === undefined) sizes.set(candidate, (n = entries(rm, plan.table, candidate, plan.params)));
    return n;
  };
  let best: Candidate | undefined;
  if (plan.candidates.length === 1 && (plan.candidates[0].ordered || !forPage)) best = plan.candidates[0];
  else {
    let fewest = Infinity;
    for (const candidate of plan.candidates) {
      const n = size(candidate);
      if (forPage && !candidate.ordered && n > QUERY_COUNT_CAP) continue;
      if (n < fewest) [best, fewest] = [candidate, n];
    }
  }
  const residual = [...plan.candidates.filter((c) => c !== best).map((c) => c.condition), ...plan.residual];
  return { table: plan.table, scans: best ? best.scans : [plan.scope], residual, ordered: best?.ordered ?? true };
}

/**
 * How many rows match, up to `QUERY_COUNT_CAP`. With conditions left to check on the rows, the
 * count is of the matches among the chosen index's newest `QUERY_COUNT_CAP` entries, `capped`
 * when it holds more.
 */
export function countPlanned(rm: ReadModelDb, plan: ListPlan, sizes?: Map<Candidate, number>): { count: number; capped: boolean } {
  const { scanned, n } = prepareIndexed(rm, listStatements(choose(rm, plan, false, sizes), 'DESC', '').count).get(plan.params) as { scanned: number; n: number };
  return { count: Math.min(n, QUERY_COUNT_CAP), capped: scanned > QUERY_COUNT_CAP };
}

/**
 * The matches counted by the value of `column`, among the chosen index's newest `QUERY_COUNT_CAP`
 * entries (one read of them for every value), `capped` when it holds more.
 */
export function countByPlanned(rm: ReadModelDb, plan: ListPlan, column: string): { counts: Map<unknown, number>; capped: boolean } {
  const rows = prepareIndexed(rm, listStatements(choose(rm, plan, false), 'DESC', '').countBy(column)).all(plan.params) as Array<{ value: unknown; scanned: number; n: number }>;
  const scanned = rows.reduce((sum, r) => sum + r.scanned, 0);
  return { counts: new Map(rows.map((r) => [r.value, Math.min(r.n, QUERY_COUNT_CAP)])), capped: scanned > QUERY_COUNT_CAP };
}

/**
 * A page's `endCursor`: the row's `seq` and id. The `seq` keeps the cursor's place when the row is
 * gone by the next page (retention deleted it): ids are not in `seq` order (a dispatch with an
 * idempotency key has a derived UUID v8; a schedule's carries its occurrence's time, not its
 * dispatch's), so "the next row by id" could skip or repeat rows.
 */
const cursorFor = (row: { seq: number; id: string }): string => `${row.seq}:${row.id}`;
const SEQ_CURSOR = /^(\d{1,16}):/;

/**
 * The cursor's place in `seq` order: a `cursorFor` cursor's `seq`; or, for a bare id (a row's id
 * passed as `after`, or a cursor of an earlier version), after that row, or (a row since deleted)
 * from the next one by id. Only rows of the plan's scope (app and environment) count: a row of
 * another scope is as if it did not exist. Looked up in the whole table, another app's id placed
 * the page at that row, which told whether it existed and when it was made (an idempotency key's
 * id is derived from app, environment and key, so anyone guessing the key could ask). The next
 * row by id is searched among at most `QUERY_COUNT_CAP` ids past the cursor (the primary key's
 * order), a bounded cost whatever the table holds; none of the scope there ends the list.
 */
function cursorOf(rm: ReadModelDb, plan: ListPlan, after: string | null | undefined, descending: boolean): { from: number; op: CursorOp } | null {
  if (!after) return { from: 0, op: '' };
  const seq = SEQ_CURSOR.exec(after);
  if (seq) return { from: Number(seq[1]), op: descending ? '<' : '>' };
  const { table, scope } = plan;
  const params = { appId: plan.params.appId, environment: plan.params.environment, after };
  const row = rm.db.prepare(`SELECT seq FROM ${table} WHERE id = @after AND ${scope.clause}`).get(params) as { seq: number } | undefined;
  if (row) return { from: row.seq, op: descending ? '<' : '>' };
  const next = rm.db
    .prepare(
      `SELECT seq FROM (SELECT seq, app_id, environment FROM ${table} WHERE id ${descending ? '<' : '>'} @after ORDER BY id ${descending ? 'DESC' : 'ASC'} LIMIT ${QUERY_COUNT_CAP}) WHERE ${scope.clause} LIMIT 1`,
    )
    .get(params) as { seq: number } | undefined;
  return next ? { from: next.seq, op: descending ? '<=' : '>=' } : null;
}

/** A page of the rows matching `plan` in `seq` order (newest first when `descending`), after the row `after`. */
export function pagePlanned<R extends { id: string; seq: number }, V>(
  rm: ReadModelDb,
  plan: ListPlan,
  first: number,
  after: string | null | undefined,
  toView: (row: R) => V,
  descending = false,
): Page<V> {
  // Each candidate's size is counted once, for the total and the page alike.
  const sizes = new Map<Candidate, number>();
  const total = countPlanned(rm, plan, sizes);
  const cursor = cursorOf(rm, plan, after, descending);
  if (cursor === null) return { nodes: [], totalCount: total.count, totalCountCapped: total.capped, pageInfo: { endCursor: null, hasNextPage: false } };
  const chosen = choose(rm, plan, true, sizes);
  const statements = listStatements(chosen, descending ? 'DESC' : 'ASC', cursor.op);
  const params = { ...plan.params, from: cursor.from, limit: first + 1 };
  // Conditions left to check are checked within a window of the index (without them every entry
  // matches; an index out of order is small enough to be read whole).
  const end = chosen.residual.length === 0 || !chosen.ordered ? undefined : (prepareIndexed(rm, statements.bound).get(params) as { seq: number; id: string } | undefined);
  const rows = prepareIndexed(rm, statements.page(end !== undefined)).all({ ...params, bound: end?.seq }) as R[];
  const nodes = rows.slice(0, first).map(toView);
  const page = (endCursor: string | null, hasNextPage: boolean): Page<V> => ({ nodes, totalCount: total.count, totalCountCapped: total.capped, pageInfo: { endCursor, hasNextPage } });
  if (rows.length > first) return page(cursorFor(rows[first - 1]), true);
  // A short page: the end of the matches, or of the window searched (the next page goes on from there).
  const last = rows.at(-1);
  return end === undefined ? page(last ? cursorFor(last) : null, false) : page(cursorFor(end), true);
}
