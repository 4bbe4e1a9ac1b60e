import Database from '../../src/event-store/sqlite/better-sqlite3.js';

/**
 * Every read-model row of an embedded store (the effects reactor's own checkpoint aside), table by
 * table, in key order: what a live service built, to compare with what `baton rebuild` builds.
 */
export function readModelRows(storeUrl: string): Record<string, unknown[]> {
  const db = new Database(storeUrl.slice('sqlite:'.length), { readonly: true });
  try {
    const tables = db.prepare<[], { name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rm\\_%' ESCAPE '\\' ORDER BY name`).all();
    return Object.fromEntries(
      tables.map(({ name }) => [name, db.prepare(`SELECT * FROM ${name} ${name === 'rm_checkpoints' ? "WHERE name != 'effects'" : ''} ORDER BY 1`).all()]),
    );
  } finally {
    db.close();
  }
}
