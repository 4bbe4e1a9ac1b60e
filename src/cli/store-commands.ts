import Database from '../event-store/sqlite/better-sqlite3.js';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { dirname, resolve } from 'node:path';
import { startProgress } from './progress.js';
import { storePathProblems } from '../config/config.js';

/** The file of a `sqlite:` store URL, or null for EventStoreDB. */
export function sqliteFile(url: string): string | null {
  if (!url.startsWith('sqlite:')) return null;
  return url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '') || './data/baton.db';
}

/** A mistyped path must not silently become a new, empty store. */
export function assertStoreExists(url: string, create: boolean): void {
  const file = sqliteFile(url);
  if (file === null || file === ':memory:') return;
  if (existsSync(file)) {
    if (!statSync(file).isFile()) throw new CliError(`${resolve(file)} is a directory, not an event store (EVENT_STORE_URL=${url}); give the path of its file`);
    assertIsEventStore(file, url);
    return;
  }
  if (!create) throw new CliError(`no event store at ${resolve(file)} (EVENT_STORE_URL=${url}); check the path, or pass --create to start a new, empty store there`);
  const problems = storePathProblems({ eventStoreUrl: url, readModelPath: file });
  if (problems.length > 0) throw new CliError(problems.join('; '));
}

/**
 * An existing file is opened as the store only if it is one, or an empty database (a store
 * created and not yet written): the store's tables are not to be written into another database
 * (an instance's read-model file, READ_MODEL_PATH), nor a token issued where no instance reads it.
 */
function assertIsEventStore(file: string, url: string): void {
  if (statSync(file).size === 0) return;
  let tables: string[];
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      tables = db.prepare<[], { name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table'`).all().map((t) => t.name);
    } finally {
      db.close();
    }
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_NOTADB') throw new CliError(`${resolve(file)} is not a SQLite database, not an event store (EVENT_STORE_URL=${url})`);
    // Anything else (busy, a read-only directory) is for opening the store to say.
    return;
  }
  if (tables.length > 0 && !tables.includes('events')) {
    throw new CliError(`${resolve(file)} is a SQLite database but not an event store: it has no events table (a read-model file, READ_MODEL_PATH?) (EVENT_STORE_URL=${url})`);
  }
}

/**
 * Commands that must run alone on a store (`baton rebuild`) refuse while any other process has
 * the file open. Every connection to a WAL database holds a shared lock for as long as it is
 * open, so one that asks for SQLite's exclusive locking mode is refused (SQLITE_BUSY) until every
 * other connection, a running instance's included, has closed.
 */
export function assertNotInUse(file: string, what: string): void {
  if (file === ':memory:' || !existsSync(file)) return;
  if (inUse(file)) throw new CliError(`${resolve(file)} is in use by another process (a running Baton instance?); ${what}: stop every instance on it first`);
}

/** Whether another connection has the SQLite database `file` open (see `assertNotInUse`). */
function inUse(file: string): boolean {
  const db = new Database(file, { fileMustExist: true, timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE; COMMIT');
    return false;
  } catch (error) {
    if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
    return true;
  } finally {
    db.close();
  }
}

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
  }
}

/** Whether `path` is the store's file (or its -wal, -shm or -journal file), by name or by inode. */
function isStoreFile(store: string, path: string): boolean {
  const files = ['', '-wal', '-shm', '-journal'].map((suffix) => `${resolve(store)}${suffix}`);
  if (files.includes(path)) return true;
  if (!existsSync(path)) return false;
  const target = statSync(path);
  return files.some((f) => {
    if (!existsSync(f)) return false;
    const s = statSync(f);
    return s.dev === target.dev && s.ino === target.ino;
  });
}

/** `inUse`, false for what is not a database at all (an ordinary file, a directory). */
function inUseOrNotADatabase(file: string): boolean {
  try {
    return inUse(file);
  } catch {
    return false;
  }
}

/** Removes the -wal, -shm and -journal files SQLite keeps beside `file`. */
function removeSidecars(file: string): void {
  for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${file}${suffix}`, { force: true });
}

/** The most pages better-sqlite3 transfers in one backup step: all of them. */
const ALL_PAGES = 0x7fffffff;

/**
 * `baton backup <file>`: a consistent copy of the embedded store through SQLite's online backup
 * API (better-sqlite3 `db.backup()`), safe while Baton instances are running and writing.
 */
export async function backupCommand(url: string, target: string, options: { force?: boolean }): Promise<number> {
  const file = sqliteFile(url);
  if (file === null) {
    throw new CliError('baton backup copies the embedded SQLite store; back EventStoreDB/KurrentDB up with its own tools (see docs/OPERATIONS.md)');
  }
  assertStoreExists(url, false);
  const destination = resolve(target);
  if (isStoreFile(file, destination)) throw new CliError(`${destination} is the store itself (or its -wal/-shm file); write the backup elsewhere`);
  if (existsSync(destination) && !options.force) throw new CliError(`${target} exists; pass --force to overwrite it`);
  // Replaced under a process that has it open (another store, an instance's read models), a
  // database would lose what that process writes next, and its -wal with it.
  if (existsSync(destination) && inUseOrNotADatabase(destination)) {
    throw new CliError(`${destination} is a database in use by another process; write the backup elsewhere, or stop what has it open`);
  }
  mkdirSync(dirname(destination), { recursive: true });
  // Written next to the target and renamed over it once checked: a backup that fails leaves the
  // copy it was to replace as it was.
  const partial = `${destination}.partial-${process.pid}`;
  rmSync(partial, { force: true });
  // Stopped by a signal (Ctrl-C, a cron job's timeout, a pod stopped), the partial copy goes too:
  // else each interrupted run left one as large as the store. (The copy is one synchronous step:
  // the signal is handled once it ends.) Set first: the partial file is then never without them.
  const interrupted = (signal: NodeJS.Signals) => {
    rmSync(partial, { force: true });
    removeSidecars(partial);
    process.stderr.write(`error: backup interrupted (${signal}), ${existsSync(destination) ? `${destination} left as it was` : 'nothing written'}\n`);
    process.exit(128 + (osConstants.signals[signal] ?? 0));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  try {
    // Owner-only from its first byte, as the store it copies (every app's data, the tokens' hashes):
    // SQLite keeps the mode of a file it opens, and gives its journal the same.
    closeSync(openSync(partial, 'wx', 0o600));
    chmodSync(partial, 0o600);
    const source = new Database(file, { fileMustExist: true });
    source.pragma('busy_timeout = 10000');
    const started = Date.now();
    const progress = startProgress('backup', 1);
    try {
      // Every page in one step, under one read snapshot. In steps of a few pages, with the event
      // loop turning between them, SQLite starts the copy over whenever another process writes to
      // the store in between: beside a busy instance, a 100 MB store's backup never finished. In WAL
      // mode the instance's writers are not held up by the read.
      await source.backup(partial, {
        progress: ({ totalPages, remainingPages }) => {
          progress.update(totalPages - remainingPages, totalPages);
          return ALL_PAGES;
        },
      });
    } finally {
      progress.stop();
      source.close();
    }
    // Read-write, so that closing it removes the -wal and -shm files the check opened (a
    // read-only connection leaves them, and they would outlive the partial file's name).
    const copy = new Database(partial, { fileMustExist: true });
    let summary: string;
    try {
      const integrity = copy.pragma('integrity_check', { simple: true });
      if (integrity !== 'ok') throw new CliError(`the backup failed its integrity check: ${String(integrity)}`, 1);
      const { events, head } = copy.prepare('SELECT count(*) AS events, max(position) AS head FROM events').get() as { events: number; head: number | null };
      summary = `${events} events up to position ${head ?? 0}`;
    } finally {
      copy.close();
    }
    // A -wal left beside the copy being replaced would be read as part of the new one.
    removeSidecars(destination);
    renameSync(partial, destination);
    process.stdout.write(`backup of ${resolve(file)} written to ${destination}: ${summary}, ${statSync(destination).size} bytes, in ${Date.now() - started} ms\n`);
  } catch (error) {
    rmSync(partial, { force: true });
    removeSidecars(partial);
    if (error instanceof CliError) throw error;
    throw new CliError(`backup of ${resolve(file)} failed, ${existsSync(destination) ? `${destination} left as it was` : 'nothing written'}: ${(error as Error).message}`, 1);
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
  return 0;
}
