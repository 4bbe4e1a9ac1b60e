import { describe, expect, it } from '@jest/globals';
import { RecordedEvent } from '../event-store/event-store.port.js';
import { StoredEvent } from '../event-store/event-registry.js';
import { QUERY_COUNT_CAP, ReadModelDb, toJson } from '../event-store/read-model-db.js';
import { baseName } from './domain/workflow.decider.js';
import { WorkflowsReadModel } from './workflows.read-model.js';

/**
 * The workflows read model folds a batch's events into in-memory rows and writes each row once.
 * Whatever the batch boundaries, its rows must end exactly as the per-event statements it
 * replaced would leave them (`reference` below: the SQL of the previous version, one statement
 * per event).
 */

type E = [stream: string, type: string, data: unknown];

const dispatched = (id: string, name: string, extra: Record<string, unknown> = {}): E => [
  id,
  'WorkflowDispatched',
  { workflowId: id, appId: 'a', environment: 'e', name, tag: null, input: [id], parent: null, scheduleId: null, dispatchedAt: '', ...extra },
];

const HISTORY: E[] = [
  ['w4', 'DecisionStarted', { version: 'v0' }], // before its dispatch: no row to change
  dispatched('w1', 'Order@2', { tag: 't', parent: { workflowId: 'p', seq: 3 }, scheduleId: 's' }),
  dispatched('w2', 'Pay'),
  ['w1', 'DecisionStarted', { version: 'v1' }],
  ['w1', 'DecisionStarted', { version: 'v2' }], // the first version stays
  ['w1', 'DecisionCompleted', { queries: { stage: 1 } }],
  ['w1', 'DecisionCompleted', {}], // no queries: untouched
  dispatched('w3', 'Ship'),
  ['w1', 'WorkflowPaused', {}],
  ['w2', 'WorkflowFailed', { error: { message: 'no', name: 'E' } }],
  ['w1', 'WorkflowResumed', {}],
  dispatched('w3', 'Other'), // the same id again: ignored
  ['w2', 'WorkflowRetried', {}], // failed → running, error and output cleared
  ['w1', 'WorkflowCompleted', { result: { ok: true } }],
  ['w1', 'WorkflowFailed', { error: { message: 'late' } }], // final: ignored
  ['w1', 'WorkflowRetried', {}], // not failed: ignored
  ['w2', 'WorkflowContinuedAsNew', { input: [9] }], // new input, queries cleared
  ['w3', 'DecisionStarted', { version: 'v3' }],
  ['_', 'WorkflowsExpired', { workflowIds: ['w3'] }], // retention: the row goes
  ['w3', 'DecisionCompleted', { queries: { q: 1 } }], // gone: nothing to change
  dispatched('w3', 'Again'), // dispatched anew after its row went
  dispatched('w4', 'Late'),
  ['w4', 'WorkflowCompleted', {}], // no result: output stays null
  ['w2', 'DecisionCompleted', { queries: { n: 2 } }],
  ['w2', 'WorkflowTerminated', {}],
  ['w2', 'WorkflowCompleted', { result: 1 }], // final: ignored
  dispatched('w5', 'Five'),
  ['_', 'WorkflowsExpired', { workflowIds: ['w5', 'never'] }],
];

function storedEvents(): StoredEvent[] {
  return HISTORY.map(([id, type, data], i) => {
    const recorded: RecordedEvent = {
      id: `e${i}`,
      type,
      streamId: id === '_' ? 'retention' : `workflow-${id}`,
      revision: BigInt(i),
      position: BigInt(100 + i),
      data,
      metadata: {},
      recordedAt: new Date(1_700_000_000_000 + i * 1000),
    };
    return new StoredEvent(recorded);
  });
}

/** The per-event statements of the previous version of `WorkflowsReadModel.project`. */
function reference(rm: ReadModelDb, stored: StoredEvent): void {
  const db = rm.db;
  const { streamId, recordedAt, position } = stored.recorded;
  const id = streamId.slice('workflow-'.length);
  const at = recordedAt.getTime();
  const data = stored.data as any;
  const status = (s: string, output: string | null = null, error: string | null = null) =>
    db
      .prepare(`UPDATE rm_workflows SET status = ?, output = coalesce(?, output), error = coalesce(?, error), updated_at = ? WHERE id = ? AND status NOT IN ('completed', 'failed', 'terminated')`)
      .run(s, output, error, at, id);
  switch (stored.type) {
    case 'WorkflowDispatched':
      db.prepare(
        `INSERT OR IGNORE INTO rm_workflows (id, seq, app_id, environment, name, base_name, version, tag, status, input, output, error, parent_id, parent_seq, schedule_id, created_at, updated_at)
         VALUES (@id, @seq, @app_id, @environment, @name, @base_name, NULL, @tag, 'running', @input, NULL, NULL, @parent_id, @parent_seq, @schedule_id, @at, @at)`,
      ).run({
        id,
        seq: Number(position),
        app_id: data.appId,
        environment: data.environment,
        name: data.name,
        base_name: baseName(data.name),
        tag: data.tag,
        input: JSON.stringify(data.input),
        parent_id: data.parent?.workflowId ?? null,
        parent_seq: data.parent?.seq ?? null,
        schedule_id: data.scheduleId,
        at,
      });
      return;
    case 'DecisionStarted':
      db.prepare('UPDATE rm_workflows SET version = coalesce(version, ?), updated_at = ? WHERE id = ?').run(data.version, at, id);
      return;
    case 'DecisionCompleted':
      if (data.queries) db.prepare('UPDATE rm_workflows SET queries = ?, updated_at = ? WHERE id = ?').run(JSON.stringify(data.queries), at, id);
      return;
    case 'WorkflowContinuedAsNew':
      db.prepare('UPDATE rm_workflows SET input = ?, queries = NULL, run_from = ?, updated_at = ? WHERE id = ?').run(JSON.stringify(data.input), Number(stored.recorded.revision), at, id);
      return;
    case 'WorkflowPaused':
      return void status('paused');
    case 'WorkflowResumed':
      return void status('running');
    case 'WorkflowTerminated':
      return void status('terminated');
    case 'WorkflowCompleted':
      return void status('completed', toJson(data.result));
    case 'WorkflowFailed':
      return void status('failed', null, JSON.stringify(data.error));
    case 'WorkflowRetried':
      db.prepare(`UPDATE rm_workflows SET status = 'running', error = NULL, output = NULL, updated_at = ? WHERE id = ? AND status = 'failed'`).run(at, id);
      return;
    case 'WorkflowsExpired':
      for (const expired of data.workflowIds) db.prepare('DELETE FROM rm_workflows WHERE id = ?').run(expired);
      return;
  }
}

function rows(rm: ReadModelDb): unknown[] {
  return rm.db.prepare('SELECT * FROM rm_workflows ORDER BY id').all();
}

function fold(batchSize: number): { rm: ReadModelDb; model: WorkflowsReadModel } {
  const rm = new ReadModelDb(':memory:');
  const model = new WorkflowsReadModel(rm);
  model.migrate();
  const events = storedEvents();
  for (let i = 0; i < events.length; i += batchSize) {
    rm.db.transaction(() => {
      for (const event of events.slice(i, i + batchSize)) model.project(event);
      model.endBatch();
    })();
  }
  return { rm, model };
}

describe('WorkflowsReadModel batches', () => {
  const expected = (() => {
    const rm = new ReadModelDb(':memory:');
    new WorkflowsReadModel(rm).migrate();
    for (const event of storedEvents()) reference(rm, event);
    return rows(rm);
  })();

  it('the reference history exercises every case (sanity)', () => {
    expect(expected.map((r: any) => [r.id, r.status, r.version])).toEqual([
      ['w1', 'completed', 'v1'],
      ['w2', 'terminated', null],
      ['w3', 'running', null],
      ['w4', 'completed', null],
    ]);
  });

  it.each([1, 2, 3, 5, 7, HISTORY.length])('rows end as the per-event statements leave them, in batches of %i', (size) => {
    const { rm } = fold(size);
    expect(rows(rm)).toEqual(expected);
  });

  it('a failed batch leaves nothing behind: its transaction rolls back and the next batch starts clean', () => {
    const rm = new ReadModelDb(':memory:');
    const model = new WorkflowsReadModel(rm);
    model.migrate();
    const events = storedEvents();
    expect(() =>
      rm.db.transaction(() => {
        for (const event of events) model.project(event);
        throw new Error('boom');
      })(),
    ).toThrow('boom');
    model.abortBatch();
    expect(rows(rm)).toEqual([]);
    rm.db.transaction(() => {
      for (const event of events) model.project(event);
      model.endBatch();
    })();
    expect(rows(rm)).toEqual(expected);
  });

  it('reads between batches see the rows written (nothing is left in memory)', () => {
    const { model } = fold(4);
    expect(model.getById('w1')).toMatchObject({ status: 'completed', version: 'v1', output: { ok: true }, queries: { stage: 1 }, parentId: 'p', parentSeq: 3, tag: 't' });
    expect(model.getById('w5')).toBeUndefined();
  });
});

/** A read model on an empty in-memory database, its tables created. */
function emptyModel(): { rm: ReadModelDb; model: WorkflowsReadModel } {
  const rm = new ReadModelDb(':memory:');
  const model = new WorkflowsReadModel(rm);
  model.migrate();
  return { rm, model };
}

describe('counts stop at QUERY_COUNT_CAP', () => {
  /** `n` rows of one app and environment, all completed, inserted as the fold would leave them. */
  function withRows(n: number): WorkflowsReadModel {
    const { rm, model } = emptyModel();
    const insert = rm.db.prepare(
      `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, created_at, updated_at)
       VALUES (?, ?, 'a', 'e', 'W', 'W', 'completed', '[]', ?, ?)`,
    );
    rm.db.transaction(() => {
      for (let i = 0; i < n; i++) insert.run(`w${String(i).padStart(6, '0')}`, i + 1, 1_700_000_000_000 + i, 1_700_000_000_000 + i);
    })();
    return model;
  }
  const scope = { appId: 'a', environment: 'e' };

  it('counts exactly up to the cap', () => {
    const model = withRows(QUERY_COUNT_CAP);
    const page = model.page(scope, 5);
    expect(page.totalCount).toBe(QUERY_COUNT_CAP);
    expect(page.totalCountCapped).toBe(false);
    expect(page.nodes).toHaveLength(5);
    const counts = model.countByStatus(scope, ['running', 'completed']);
    expect(counts.get('completed')).toEqual({ count: QUERY_COUNT_CAP, capped: false });
    expect(counts.get('running')).toEqual({ count: 0, capped: false });
  });

  it('past the cap, says the count stopped (a lower bound) and still pages through every row', () => {
    const model = withRows(QUERY_COUNT_CAP + 2);
    const page = model.page(scope, 5);
    expect(page.totalCount).toBe(QUERY_COUNT_CAP);
    expect(page.totalCountCapped).toBe(true);
    expect(page.pageInfo.hasNextPage).toBe(true);
    expect(model.countByStatus(scope, ['completed']).get('completed')).toEqual({ count: QUERY_COUNT_CAP, capped: true });
    // The last page is still reached by its cursor: only the count stops.
    const last = model.page(scope, 5, `w${String(QUERY_COUNT_CAP - 4).padStart(6, '0')}`);
    expect(last.nodes.map((w) => w.id)).toEqual([QUERY_COUNT_CAP - 3, QUERY_COUNT_CAP - 2, QUERY_COUNT_CAP - 1, QUERY_COUNT_CAP, QUERY_COUNT_CAP + 1].map((i) => `w${String(i).padStart(6, '0')}`));
    expect(last.pageInfo.hasNextPage).toBe(false);
  });
});

describe('workflow activity per minute (rm_workflow_activity)', () => {
  const totals = (model: WorkflowsReadModel) =>
    model.activity('a', 'e', 0, Number.MAX_SAFE_INTEGER).reduce((t, m) => ({ started: t.started + m.started, completed: t.completed + m.completed, failed: t.failed + m.failed }), { started: 0, completed: 0, failed: 0 });

  it.each([1, 3, 7, HISTORY.length])('counts what happened, whatever the batches (batches of %i)', (size) => {
    const { model } = fold(size);
    // Six rows were created (w3 twice: dispatched again after retention removed it); w1 and w4
    // completed; w2 failed once (its retry and later end do not undo that it failed).
    expect(totals(model)).toEqual({ started: 6, completed: 2, failed: 1 });
    const minutes = model.activity('a', 'e', 0, Number.MAX_SAFE_INTEGER);
    expect(minutes.every((m) => m.minute % 60_000 === 0)).toBe(true);
    expect(model.activity('other', 'e', 0, Number.MAX_SAFE_INTEGER)).toEqual([]);
  });

  it('a failed batch adds nothing', () => {
    const { rm, model } = emptyModel();
    expect(() =>
      rm.db.transaction(() => {
        for (const event of storedEvents()) model.project(event);
        throw new Error('boom');
      })(),
    ).toThrow('boom');
    model.abortBatch();
    rm.db.transaction(() => model.endBatch())();
    expect(totals(model)).toEqual({ started: 0, completed: 0, failed: 0 });
  });

  it('created on a store whose workflows were projected before it, is filled once from their rows', () => {
    const { rm, model } = emptyModel();
    rm.db.exec('DROP TABLE rm_workflow_activity');
    const now = Math.floor(Date.now() / 60_000) * 60_000;
    const insert = rm.db.prepare(
      `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, created_at, updated_at) VALUES (?, ?, 'a', 'e', 'W', 'W', ?, '[]', ?, ?)`,
    );
    insert.run('x1', 1, 'running', now - 120_000, now - 120_000);
    insert.run('x2', 2, 'completed', now - 120_000, now - 60_000);
    insert.run('x3', 3, 'failed', now - 60_000, now);
    insert.run('old', 4, 'completed', now - 10 * 24 * 3_600_000, now - 10 * 24 * 3_600_000); // older than the chart reaches
    model.migrate();
    model.migrate(); // a second start (or a second instance) fills nothing again
    expect(model.activity('a', 'e', now - 180_000, now + 60_000)).toEqual([
      { minute: now - 120_000, started: 2, completed: 0, failed: 0 },
      { minute: now - 60_000, started: 1, completed: 1, failed: 0 },
      { minute: now, started: 0, completed: 0, failed: 1 },
    ]);
    expect(totals(model)).toEqual({ started: 3, completed: 1, failed: 1 });
  });
});

describe('failure groups', () => {
  function withFailures(n: number): WorkflowsReadModel {
    const { rm, model } = emptyModel();
    const insert = rm.db.prepare(
      `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, error, created_at, updated_at) VALUES (?, ?, 'a', 'e', 'W', 'W', 'failed', '[]', ?, ?, ?)`,
    );
    rm.db.transaction(() => {
      // Even rows failed with "even", odd rows with "odd"; one per millisecond, the last newest.
      for (let i = 0; i < n; i++) insert.run(`f${String(i).padStart(6, '0')}`, i + 1, JSON.stringify({ message: i % 2 ? 'odd' : 'even' }), i, 1_000 + i);
    })();
    return model;
  }

  it('groups by name and message, newest group and newest ids first', () => {
    const groups = withFailures(6).failureGroups('a', 'e', 0);
    expect(groups).toEqual([
      { name: 'W', message: 'odd', count: 3, firstSeen: 1_001, lastSeen: 1_005, ids: ['f000005', 'f000003', 'f000001'], capped: false },
      { name: 'W', message: 'even', count: 3, firstSeen: 1_000, lastSeen: 1_004, ids: ['f000004', 'f000002', 'f000000'], capped: false },
    ]);
    expect(withFailures(6).failureGroups('a', 'e', 1_004).map((g) => g.count)).toEqual([1, 1]);
  });

  it(`groups only the ${QUERY_COUNT_CAP} most recent failures, and says so`, () => {
    const groups = withFailures(QUERY_COUNT_CAP + 3).failureGroups('a', 'e', 0);
    expect(groups.map((g) => g.capped)).toEqual([true, true]);
    expect(groups[0].count + groups[1].count).toBe(QUERY_COUNT_CAP);
    expect(Math.min(groups[0].firstSeen, groups[1].firstSeen)).toBe(1_003); // the three oldest were left out
    expect(groups[0].ids).toHaveLength(500);
    expect(groups[0].ids[0]).toBe(`f${String(QUERY_COUNT_CAP + 2).padStart(6, '0')}`);
    expect(withFailures(QUERY_COUNT_CAP).failureGroups('a', 'e', 0).map((g) => g.capped)).toEqual([false, false]);
  });
});

describe('in-flight streams for a restart', () => {
  it('each running or paused workflow from its current run: the revision of its last continue-as-new, else 0; finished ones not', () => {
    const { rm, model } = emptyModel();
    const event = (id: string, revision: number, type: string, data: unknown) =>
      new StoredEvent({ id: `${id}-${revision}`, type, streamId: `workflow-${id}`, revision: BigInt(revision), position: BigInt(revision + 1), data, metadata: {}, recordedAt: new Date(0) });
    const events = [
      event('a', 0, ...dispatched('a', 'A').slice(1) as [string, unknown]),
      event('b', 0, ...dispatched('b', 'B').slice(1) as [string, unknown]),
      event('b', 7, 'WorkflowContinuedAsNew', { input: [1] }),
      event('b', 12, 'WorkflowContinuedAsNew', { input: [2] }),
      event('b', 13, 'WorkflowPaused', {}),
      event('c', 0, ...dispatched('c', 'C').slice(1) as [string, unknown]),
      event('c', 4, 'WorkflowContinuedAsNew', { input: [] }),
      event('c', 9, 'WorkflowCompleted', { result: null }),
    ];
    rm.db.transaction(() => {
      for (const e of events) model.project(e);
      model.endBatch();
    })();
    const visited: Array<[string, number]> = [];
    model.inFlightStreams((streamId, from) => visited.push([streamId, from]));
    expect(visited.sort()).toEqual([
      ['workflow-a', 0],
      ['workflow-b', 12],
    ]);
  });
});

describe('running and paused workflows by name (selectors)', () => {
  function model(): WorkflowsReadModel {
    const { rm, model: m } = emptyModel();
    const insert = rm.db.prepare(
      `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, created_at, updated_at) VALUES (?, ?, ?, 'e', ?, ?, ?, '[]', 0, 0)`,
    );
    const rows: Array<[string, string, string, string]> = [
      ['s1', 'a', 'Signup', 'running'],
      ['s2', 'a', 'Signup_v2', 'paused'],
      ['s3', 'a', 'Signup_v2', 'completed'],
      ['s4', 'other-app', 'Signup', 'running'],
      ['o1', 'a', 'Other', 'running'],
      ['v1', 'a', 'A_v1_v2', 'running'], // base name A_v1
      ['v2', 'a', 'A_v1', 'paused'], // base name A
    ];
    rows.forEach(([id, app, name, status], i) => insert.run(id, i + 1, app, name, baseName(name), status));
    return m;
  }
  const ids = (m: WorkflowsReadModel, name: string, tag: string | null = null) => m.activePage('a', 'e', name, tag, 0, 1_000, 100).map((w) => w.id);

  it('a name picks that name and its versions; a versioned name, that version; finished ones never', () => {
    const m = model();
    expect(ids(m, 'Signup')).toEqual(['s1', 's2']);
    expect(ids(m, 'Signup_v2')).toEqual(['s2']);
    expect(ids(m, 'A_v1')).toEqual(['v1', 'v2']); // named A_v1, or versions of A_v1
    expect(ids(m, 'Nobody')).toEqual([]);
  });

  const plan = (m: WorkflowsReadModel, which: 'activeByName' | 'activeByTag', args: Record<string, unknown>) => {
    // The statement the selector runs (private: the plan is what this test is about).
    const statement = (m as unknown as { stmt: Record<string, { source: string }> }).stmt[which];
    const rm = (m as unknown as { rm: ReadModelDb }).rm;
    const params = { appId: 'a', environment: 'e', after: 0, upTo: 1_000, limit: 10, ...args };
    return (rm.db.prepare(`EXPLAIN QUERY PLAN ${statement.source}`).all(params) as Array<{ detail: string }>).map((p) => p.detail).join(' | ');
  };

  it('reads a page from the index of running and paused workflows in dispatch order, with no sort of what the selector matches', () => {
    const m = model();
    for (const [name, base] of [['Signup', 'Signup'], ['A_v1', 'A']]) {
      const detail = plan(m, 'activeByName', { name, base });
      expect(detail).toContain('USING INDEX rm_workflows_active_name (app_id=? AND environment=? AND base_name=? AND seq>? AND seq<?)');
      // Each range comes in seq order from the index and stops at the page (no sort after the
      // search); only the two ranges' pages (≤ 2 × limit rows, the subqueries' scans) are sorted to merge.
      expect(detail).not.toMatch(/SEARCH rm_workflows[^|]*\| USE TEMP B-TREE/);
      expect(detail.match(/USE TEMP B-TREE/g) ?? []).toHaveLength(2);
      expect(detail).toMatch(/SCAN \(subquery-1\) \| USE TEMP B-TREE FOR ORDER BY/);
    }
    const tagged = plan(m, 'activeByTag', { name: 'Signup', tag: 't' });
    expect(tagged).toContain('USING INDEX rm_workflows_tag (app_id=? AND environment=? AND tag=? AND seq>? AND seq<?)');
    expect(tagged).not.toContain('TEMP B-TREE');
  });

  it('pages in dispatch order after a sequence, up to a log position, ids only; a tag narrows', () => {
    const { rm, model: m } = emptyModel();
    const insert = rm.db.prepare(
      `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, tag, status, input, created_at, updated_at) VALUES (?, ?, 'a', 'e', ?, ?, ?, ?, '[]', 0, 0)`,
    );
    // Interleaved: named A_v1 (base A) and versions of A_v1 (base A_v1), some finished, some tagged.
    for (let seq = 1; seq <= 40; seq++) {
      const name = seq % 2 ? 'A_v1' : 'A_v1_v2';
      insert.run(`w${String(seq).padStart(3, '0')}`, seq, name, baseName(name), seq % 4 === 0 ? 't' : null, seq % 5 === 0 ? 'completed' : seq % 3 ? 'running' : 'paused');
    }
    const expected = Array.from({ length: 40 }, (_, i) => i + 1).filter((seq) => seq % 5 !== 0);
    const walk = (tag: string | null, upTo: number, limit: number) => {
      const seen: number[] = [];
      for (let after = 0; ; ) {
        const page = m.activePage('a', 'e', 'A_v1', tag, after, upTo, limit);
        expect(page.length).toBeLessThanOrEqual(limit);
        seen.push(...page.map((w) => w.seq));
        expect(page.map((w) => w.id)).toEqual(page.map((w) => `w${String(w.seq).padStart(3, '0')}`));
        if (page.length < limit) return seen;
        after = page[page.length - 1].seq;
      }
    };
    expect(walk(null, 1_000, 7)).toEqual(expected);
    expect(walk(null, 1_000, 1)).toEqual(expected);
    expect(walk(null, 23, 4)).toEqual(expected.filter((seq) => seq <= 23));
    expect(walk('t', 1_000, 3)).toEqual(expected.filter((seq) => seq % 4 === 0));
    expect(m.activePage('a', 'e', 'A_v1', null, 0, 1_000, 5)).toEqual([1, 2, 3, 4, 6].map((seq) => ({ id: `w00${seq}`, seq })));
  });
});

describe('a page of workflows parses only what is read of it', () => {
  // A read-only token listing ids over workflows with big inputs made the service parse every
  // input (and JSON.stringify it again for the answer) whether or not the query asked for it:
  // 10 aliases of `workflows(first: 200) { nodes { id } }` over inputs of 240 KB took 9 s.
  it('listing ids parses no input, output or queries; reading one input gives its stored JSON', async () => {
    const { jest } = await import('@jest/globals');
    const { rm, model } = emptyModel();
    const big = JSON.stringify(['x'.repeat(10_000)]);
    const insert = rm.db.prepare(
      `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, output, queries, created_at, updated_at)
       VALUES (?, ?, 'a', 'e', 'W', 'W', 'completed', ?, ?, ?, ?, ?)`,
    );
    for (let i = 0; i < 100; i++) insert.run(`w${String(i).padStart(3, '0')}`, i + 1, big, big, JSON.stringify({ q: 'y'.repeat(10_000) }), 1_700_000_000_000 + i, 1_700_000_000_000 + i);
    const { toWorkflowType } = await import('./workflow.types.js');
    const parse = jest.spyOn(JSON, 'parse');
    const stringify = jest.spyOn(JSON, 'stringify');
    try {
      const nodes = model.page({ appId: 'a', environment: 'e' }, 100).nodes.map(toWorkflowType);
      expect(nodes.map((w) => w.id)).toHaveLength(100);
      const large = (calls: unknown[][]) => calls.filter(([text]) => typeof text === 'string' && text.length > 1000).length;
      expect(large(parse.mock.calls)).toBe(0);
      // Nothing big is written out again. (better-sqlite3 13, on Node 22 and later, stringifies a
      // statement's column names once when it first builds its row objects: small strings, and
      // only when no earlier spec in the process ran a statement of that shape.)
      expect(stringify.mock.results.filter((r) => typeof r.value === 'string' && r.value.length > 1000)).toHaveLength(0);
      expect(nodes[0].input).toBe(big);
      expect(nodes[0].output).toBe(big);
      expect(JSON.parse(nodes[0].queries!)).toEqual({ q: 'y'.repeat(10_000) });
    } finally {
      parse.mockRestore();
      stringify.mockRestore();
    }
  });
});
