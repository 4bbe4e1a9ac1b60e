import type BetterSqlite3 from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

const require = createRequire(import.meta.url);
const major = Number(process.versions.node.split('.')[0]);

/**
 * better-sqlite3, the build that works on this Node: 13.x (Node-API, prebuilt for every platform)
 * on Node 22 and later — 12.x subclasses the raw `node::ObjectWrap`, whose destructor aborts the
 * process on Node 24 (`Assertion failed: (env) != nullptr` when a Statement is collected); 12.x
 * (the npm alias `better-sqlite3-node20`) on Node 20, where 13.x does not run. Same API.
 */
const Database: typeof BetterSqlite3 = require(major >= 22 ? 'better-sqlite3' : 'better-sqlite3-node20');

export default Database;
export type SqliteDatabase = BetterSqlite3.Database;

const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * Makes a database file owner-only before SQLite opens it: its directory is created `0700`, the
 * file `0600` from its first byte (SQLite gives the -wal and -shm files the mode of the database
 * file). Call `restrictToOwner` after opening, to tighten a file an older version left `0644`.
 */
export function createOwnerOnly(file: string): void {
  if (file === ':memory:') return;
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
}

/** Tightens a database made by an older version (0644) to owner-only, with its -wal and -shm files. */
export function restrictToOwner(file: string): void {
  if (file === ':memory:') return;
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      chmodSync(path, 0o600);
    } catch {
      // absent (no WAL yet) or not ours to change (a read-only mount): nothing to tighten
    }
  }
}

/**
 * Opens a database file in WAL mode with a 10 s busy timeout, the way the store and the
 * read-model database both do (the switch to WAL through `openingStatements`).
 */
export function openWalDatabase(file: string, synchronous: 'FULL' | 'NORMAL'): BetterSqlite3.Database {
  const db = new Database(file);
  db.pragma('busy_timeout = 10000');
  openingStatements(() => db.pragma('journal_mode = WAL'));
  db.pragma(`synchronous = ${synchronous}`);
  return db;
}

/**
 * Runs the statements that open a database file (switching it to WAL, creating tables), again
 * while SQLite answers SQLITE_BUSY without waiting. When two processes open one file at once
 * (two instances starting together), each may hold a read lock and ask to write; SQLite then
 * refuses one of them at once instead of calling its busy handler, which could deadlock, and the
 * instance used to fail to start with "database is locked". Retries after 5, 10, 20… ms (at most
 * 200) for up to `timeoutMs`, blocking: it runs while the process starts.
 */
export function openingStatements<T>(run: () => T, timeoutMs = 10_000): T {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 5; ; pause = Math.min(pause * 2, 200)) {
    try {
      return run();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string' || !code.startsWith('SQLITE_BUSY') || Date.now() + pause > deadline) throw error;
      Atomics.wait(PAUSE, 0, 0, pause);
    }
  }
}
