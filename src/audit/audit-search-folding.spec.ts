import { describe, expect, it } from '@jest/globals';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { AuditReadModel } from './audit.read-model.js';

/**
 * The audit log's `search` is "text found in the actor, the action, the stream or the name
 * (case-insensitive)". Names are any printable text, accents included.
 */
describe('audit log search, names beyond ASCII', () => {
  const scope = { appId: 'a', environment: 'e' };
  const model = (() => {
    const rm = new ReadModelDb(':memory:');
    const m = new AuditReadModel(rm);
    m.migrate();
    const insert = rm.db.prepare(`INSERT INTO rm_audit (position, at, actor, app_id, environment, action, stream_id, name, data) VALUES (?, ?, 'tok', 'a', 'e', 'WorkflowDispatched', ?, ?, '{}')`);
    insert.run(1, 1_700_000_000_000, 'workflow-w1', 'Überweisung');
    insert.run(2, 1_700_000_000_001, 'workflow-w2', 'Order');
    return m;
  })();
  const found = (search: string) => model.page({ ...scope, search }, 10, null).entries.map((e) => e.name);

  it('finds a name by the name itself, as typed', () => {
    expect(found('Überweisung')).toEqual(['Überweisung']);
    expect(found('Über')).toEqual(['Überweisung']);
  });

  it('finds it in other cases of its ASCII letters', () => {
    expect(found('ÜBERWEISUNG')).toEqual(['Überweisung']);
    expect(found('order')).toEqual(['Order']);
  });
});
