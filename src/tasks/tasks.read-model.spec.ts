import { describe, expect, it } from '@jest/globals';
import { StoredEvent } from '../event-store/event-registry.js';
import { ReadModelDb, toJson } from '../event-store/read-model-db.js';
import { TasksReadModel } from './tasks.read-model.js';

/**
 * The tasks read model writes each row once per batch; its rows must end exactly as the
 * per-event statements of the previous version (`reference`) leave them, whatever the batches.
 */

type E = [stream: string, type: string, data: Record<string, unknown>];

const dispatched = (id: string, extra: Record<string, unknown> = {}): E => [
  `task-${id}`,
  'TaskDispatched',
  { taskId: id, appId: 'a', environment: 'e', name: `N${id}`, args: [id], scheduleId: null, parent: null, dispatchedAt: '', ...extra },
];

const HISTORY: E[] = [
  ['task-t3', 'TaskStarted', { attempt: 1 }], // before its dispatch: nothing
  dispatched('t1', { tag: 'x', scheduleId: 's', parent: { workflowId: 'w', seq: 1 } }),
  dispatched('t2'), // no tag (older events): null
  ['task-t1', 'TaskStarted', { attempt: 1 }],
  ['task-t1', 'TaskAttemptFailed', { attemptId: 'a1', error: { message: 'retry' }, retryAt: '2030-01-01T00:00:00Z' }],
  ['task-t1', 'TaskStarted', { attempt: 2 }],
  ['task-t1', 'TaskCompleted', { attemptId: 'a2', result: { ok: 1 } }],
  ['task-t2', 'TaskStarted', { attempt: 1 }],
  ['task-t2', 'TaskAttemptFailed', { attemptId: 'b1', error: { message: 'last' }, retryAt: null }], // stays running
  ['task-t2', 'TaskFailed', { attempts: 1, error: { message: 'final' } }],
  dispatched('t2', { name: 'ignored' }), // the same id again: ignored
  ['task-t2', 'TaskRetried', {}],
  ['workflow-w', 'TaskStarted', { attempt: 1 }], // a workflow's task: not this read model's
  dispatched('t3'),
  ['task-t3', 'TaskCompleted', { attemptId: 'c1' }], // no result: output null
];

const events = (): StoredEvent[] =>
  HISTORY.map(
    ([streamId, type, data], i) =>
      new StoredEvent({ id: `e${i}`, type, streamId, revision: BigInt(i), position: BigInt(10 + i), data, metadata: {}, recordedAt: new Date(1_700_000_000_000 + i) }),
  );

function reference(rm: ReadModelDb, stored: StoredEvent): void {
  const { streamId, recordedAt, position } = stored.recorded;
  if (!streamId.startsWith('task-')) return;
  const id = streamId.slice('task-'.length);
  const at = recordedAt.getTime();
  const d = stored.data as any;
  const run = (sql: string, ...args: unknown[]) => rm.db.prepare(sql).run(...args);
  switch (stored.type) {
    case 'TaskDispatched':
      rm.db
        .prepare(
          `INSERT OR IGNORE INTO rm_tasks (id, seq, app_id, environment, name, tag, status, attempts, input, output, error, schedule_id, parent_id, created_at, updated_at)
           VALUES (@id, @seq, @app_id, @environment, @name, @tag, 'pending', 0, @input, NULL, NULL, @schedule_id, @parent_id, @at, @at)`,
        )
        .run({ id, seq: Number(position), app_id: d.appId, environment: d.environment, name: d.name, tag: d.tag ?? null, input: JSON.stringify(d.args), schedule_id: d.scheduleId, parent_id: d.parent?.workflowId ?? null, at });
      return;
    case 'TaskRetried':
      return void run(`UPDATE rm_tasks SET status = 'pending', attempts = 0, updated_at = ? WHERE id = ?`, at, id);
    case 'TaskStarted':
      return void run(`UPDATE rm_tasks SET status = 'running', attempts = ?, updated_at = ? WHERE id = ?`, d.attempt, at, id);
    case 'TaskCompleted':
      return void run(`UPDATE rm_tasks SET status = 'completed', output = ?, updated_at = ? WHERE id = ?`, toJson(d.result), at, id);
    case 'TaskAttemptFailed':
      return void run(`UPDATE rm_tasks SET error = ?, status = CASE WHEN ? THEN 'pending' ELSE status END, updated_at = ? WHERE id = ?`, JSON.stringify(d.error), d.retryAt !== null ? 1 : 0, at, id);
    case 'TaskFailed':
      return void run(`UPDATE rm_tasks SET status = 'failed', error = ?, updated_at = ? WHERE id = ?`, JSON.stringify(d.error), at, id);
  }
}

const rows = (rm: ReadModelDb) => rm.db.prepare('SELECT * FROM rm_tasks ORDER BY id').all();

describe('TasksReadModel batches', () => {
  const expected = (() => {
    const rm = new ReadModelDb(':memory:');
    new TasksReadModel(rm).migrate();
    for (const event of events()) reference(rm, event);
    return rows(rm);
  })();

  it('the reference history exercises every case (sanity)', () => {
    expect(expected.map((r: any) => [r.id, r.status, r.attempts])).toEqual([
      ['t1', 'completed', 2],
      ['t2', 'pending', 0],
      ['t3', 'completed', 0],
    ]);
  });

  it.each([1, 2, 4, HISTORY.length])('rows end as the per-event statements leave them, in batches of %i', (size) => {
    const rm = new ReadModelDb(':memory:');
    const model = new TasksReadModel(rm);
    model.migrate();
    const all = events();
    for (let i = 0; i < all.length; i += size) {
      rm.db.transaction(() => {
        for (const event of all.slice(i, i + size)) model.project(event);
        model.endBatch();
      })();
    }
    expect(rows(rm)).toEqual(expected);
  });
});
