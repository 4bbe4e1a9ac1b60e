import type BetterSqlite3 from 'better-sqlite3';
import { createRequire } from 'node:module';

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
