import { existsSync } from 'node:fs';
import { readModelPath } from '../config/config.js';
import Database from '../event-store/sqlite/better-sqlite3.js';
import { sqliteFile } from './store-commands.js';

/**
 * `baton tokens revoke` on the embedded store: marks the token revoked in the read models that
 * the store's instances share (`rm_tokens`, in the store's file unless READ_MODEL_PATH says
 * otherwise), so that the next request with it is refused by every instance the moment the
 * command returns. Appending `ApiTokenRevoked` alone left it accepted until each instance's
 * projection had applied the event: a request sent at once could still pass (seen on a loaded
 * machine). The projection later writes the event's own time over this one. A file with no
 * `rm_tokens` yet (no instance ever ran on it) is left alone; next to EventStoreDB every instance
 * has its own read models and learns of the revocation from the log.
 */
export function revokeInReadModels(url: string, tokenId: string, env: Record<string, string | undefined> = process.env): boolean {
  if (sqliteFile(url) === null) return false;
  const file = readModelPath(url, env);
  if (!existsSync(file)) return false;
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    const table = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rm_tokens'`).get();
    if (!table) return false;
    return db.prepare('UPDATE rm_tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL').run(new Date().toISOString(), tokenId).changes > 0;
  } finally {
    db.close();
  }
}
