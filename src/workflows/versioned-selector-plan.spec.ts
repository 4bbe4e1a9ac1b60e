import { describe, expect, it } from '@jest/globals';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { baseName } from './domain/workflow.decider.js';
import { WorkflowsReadModel } from './workflows.read-model.js';

/**
 * A `{ name }` selector of a versioned name (`Order_v2`, as the original service's client sends a
 * name with its version) picks the running and paused workflows of exactly that name, and those
 * of its own versions (`Order_v2_v3`). Those of its base name's other versions (`Order`,
 * `Order_v1`) are not picked, and must not be read either: a page of the selector reads an index
 * range of what it picks, not of the whole base name.
 */
describe('a versioned name selector reads what it picks', () => {
  function model(running: number): { rm: ReadModelDb; model: WorkflowsReadModel } {
    const rm = new ReadModelDb(':memory:');
    const m = new WorkflowsReadModel(rm);
    m.migrate();
    const insert = rm.db.prepare(
      `INSERT INTO rm_workflows (id, seq, app_id, environment, name, base_name, status, input, created_at, updated_at) VALUES (?, ?, 'a', 'e', ?, ?, 'running', '[]', 0, 0)`,
    );
    rm.db.transaction(() => {
      // Many running workflows of the base name, a few of the version the selector names.
      for (let seq = 1; seq <= running; seq++) {
        const name = seq % 1000 === 0 ? 'Order_v2' : 'Order';
        insert.run(`w${String(seq).padStart(6, '0')}`, seq, name, baseName(name));
      }
    })();
    return { rm, model: m };
  }

  it('through an index range of that exact name (not every running workflow of its base name)', () => {
    const { rm, model: m } = model(5_000);
    expect(m.activePage('a', 'e', 'Order_v2', null, 0, 1_000_000, 256).map((w) => w.seq)).toEqual([1000, 2000, 3000, 4000, 5000]);
    const statement = (m as unknown as { stmt: Record<string, { source: string }> }).stmt.activeByName;
    const detail = (rm.db.prepare(`EXPLAIN QUERY PLAN ${statement.source}`).all({ appId: 'a', environment: 'e', name: 'Order_v2', base: 'Order', after: 0, upTo: 1_000_000, limit: 256 }) as Array<{ detail: string }>)
      .map((p) => p.detail)
      .join(' | ');
    // The rows named Order_v2 come from a range of that name; only its versions' range is by base name (Order_v2).
    expect(detail).toMatch(/\(app_id=\? AND environment=\? AND name=\? AND seq>\? AND seq<\?\)/);
    // The range of base name 'Order' (4,995 running workflows the selector does not pick) is not searched.
    const entriesSearched = (rm.db.prepare(`SELECT count(*) AS n FROM rm_workflows WHERE app_id = 'a' AND environment = 'e' AND base_name = 'Order' AND status IN ('running', 'paused')`).get() as { n: number }).n;
    expect(entriesSearched).toBe(5_000);
    expect(detail).not.toMatch(/AND base_name=\? AND seq>\?[^|]*\|[^|]*AND base_name=\? AND seq>\?/);
  });
});
