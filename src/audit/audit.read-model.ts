import { Inject } from '@nestjs/common';
import type { Statement } from 'better-sqlite3';
import { type DurableProjection, ReadModel, StoredEvent } from '../event-store/event-registry.js';
import { QUERY_COUNT_CAP, READ_MODEL_DB, ReadModelDb, cappedCount, scopedFilter } from '../event-store/read-model-db.js';

/** The events that record an API action (a person or program acting through a token or the CLI). */
export const AUDITED_EVENT_TYPES = [
  'WorkflowDispatched',
  'WorkflowPaused',
  'WorkflowResumed',
  'WorkflowTerminated',
  'WorkflowEventReceived',
  'WorkflowEventQueued',
  'WorkflowRetried',
  'TaskDispatched',
  'TaskRetried',
  'ScheduleCreated',
  'SchedulePaused',
  'ScheduleResumed',
  'ScheduleTriggered',
  'ScheduleDeleted',
] as const;

export interface AuditEntry {
  position: bigint;
  at: Date;
  actor: string;
  appId: string;
  environment: string;
  action: string;
  streamId: string;
  /** The workflow, task or schedule name, or the event's name for WorkflowEventReceived. */
  name: string | null;
  data: unknown;
}

export interface AuditFilter {
  appId: string;
  environment: string;
  actor?: string | null;
  action?: string | null;
  search?: string | null;
  after?: Date | null;
  before?: Date | null;
}

interface Row {
  position: number;
  at: number;
  actor: string;
  app_id: string;
  environment: string;
  action: string;
  stream_id: string;
  name: string | null;
  data: string;
}

/**
 * The API actions of every app, read from the event metadata (actor, app, environment): the
 * event log read as an audit log, as rows of `rm_audit` (durable and checkpointed with the other
 * read models; paged and filtered in SQL). Actions of the engine (`system`) and of workers are
 * left out.
 */
@ReadModel([...AUDITED_EVENT_TYPES, 'WorkflowsExpired'])
export class AuditReadModel implements DurableProjection {
  private insert!: Statement;
  private forget!: Statement<[string]>;

  constructor(@Inject(READ_MODEL_DB) private readonly rm: ReadModelDb) {}

  migrate(): void {
    this.rm.db.exec(`
      CREATE TABLE IF NOT EXISTS rm_audit (
        position    INTEGER PRIMARY KEY,
        at          INTEGER NOT NULL,
        actor       TEXT NOT NULL,
        app_id      TEXT NOT NULL,
        environment TEXT NOT NULL,
        action      TEXT NOT NULL,
        stream_id   TEXT NOT NULL,
        name        TEXT,
        data        TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS rm_audit_scope ON rm_audit (app_id, environment, position);
      CREATE INDEX IF NOT EXISTS rm_audit_stream ON rm_audit (stream_id);
    `);
    this.forget = this.rm.db.prepare('DELETE FROM rm_audit WHERE stream_id = ?');
    this.insert = this.rm.db.prepare(
      `INSERT OR IGNORE INTO rm_audit (position, at, actor, app_id, environment, action, stream_id, name, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  project(stored: StoredEvent): void {
    if (stored.type === 'WorkflowsExpired') {
      // The audit log is the event log: the actions on a workflow retention deleted go with its
      // events, as a rebuild (which no longer reads them) would leave it.
      for (const id of (stored.data as { workflowIds?: string[] }).workflowIds ?? []) this.forget.run(`workflow-${id}`);
      return;
    }
    const { metadata, streamId, position, recordedAt } = stored.recorded;
    const actor = metadata.actor ?? 'unknown';
    if (actor === 'system' || actor.startsWith('worker:')) return;
    const data = stored.data as Record<string, unknown>;
    // A release of an event kept back: its send was recorded, with its actor, as WorkflowEventQueued.
    if (stored.type === 'WorkflowEventReceived' && data.queuedAt !== undefined) return;
    // Positional parameters: cheaper to bind than named ones (a rebuild inserts one row per API action).
    this.insert.run(
      Number(position),
      (metadata.at ? new Date(metadata.at) : recordedAt).getTime(),
      actor,
      String(metadata.appId ?? data.appId ?? ''),
      String(metadata.environment ?? data.environment ?? ''),
      stored.type,
      streamId,
      typeof data.name === 'string' ? data.name : null,
      JSON.stringify(data),
    );
  }

  /**
   * Newest first, `first` entries before the position `before` (a cursor). `search` matches the
   * actor, action, stream or name.
   *
   * No index serves the filters (actor, action, text, time), so a filtered page searches at most
   * `QUERY_COUNT_CAP` of the scope's entries past its cursor: a rare match in a million actions
   * would otherwise read every row on the event loop, once per dashboard refresh. When the search
   * ends before the page is full and older entries remain, the page is short (even empty),
   * `hasNextPage` is true and `searchedTo` is where the next page goes on from. Its count is of
   * the matches among the scope's newest `QUERY_COUNT_CAP` entries, `totalCountCapped` when
   * older ones were not searched.
   */
  page(
    filter: AuditFilter,
    first: number,
    before: bigint | null,
  ): { entries: AuditEntry[]; totalCount: number; totalCountCapped: boolean; hasNextPage: boolean; searchedTo: bigint | null } {
    const scope = scopedFilter(filter.appId, filter.environment);
    const { where, params, add } = scopedFilter(filter.appId, filter.environment);
    add('actor = @actor', 'actor', filter.actor);
    add('action = @action', 'action', filter.action);
    add('at >= @after', 'after', filter.after?.getTime());
    add('at < @before', 'before', filter.before?.getTime());
    if (filter.search != null && filter.search !== '') {
      where.push("(instr(lower(actor), @search) > 0 OR instr(lower(action), @search) > 0 OR instr(lower(stream_id), @search) > 0 OR instr(lower(coalesce(name, '')), @search) > 0)");
      // Folded as SQLite's lower() folds the columns, ASCII letters only: JavaScript's
      // toLowerCase() also folded others (Ü → ü), which lower() leaves as they are, so a search
      // for a name such as "Überweisung", even typed exactly, found nothing.
      params.search = filter.search.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
    }
    const scopeClause = scope.where.join(' AND ');
    const cursor = before === null ? '' : ' AND position < @cursor';
    const args = { ...params, ...(before === null ? {} : { cursor: Number(before) }), limit: first + 1 };
    let rows: Row[];
    let total: { count: number; capped: boolean };
    let searchedTo: bigint | null = null;
    if (where.length === scope.where.length) {
      total = cappedCount(this.rm, 'rm_audit', scopeClause, params);
      rows = this.rm.db.prepare(`SELECT * FROM rm_audit WHERE ${scopeClause}${cursor} ORDER BY position DESC LIMIT @limit`).all(args) as Row[];
    } else {
      // The scope's newest entries past the cursor, up to the cap (its index, newest first), then the filters on those.
      const window = (from: string) => `SELECT * FROM rm_audit WHERE ${scopeClause}${from} ORDER BY position DESC LIMIT ${QUERY_COUNT_CAP}`;
      const filters = where.slice(scope.where.length).join(' AND ');
      rows = this.rm.db.prepare(`SELECT * FROM (${window(cursor)}) WHERE ${filters} ORDER BY position DESC LIMIT @limit`).all(args) as Row[];
      const { n } = this.rm.db.prepare(`SELECT count(*) AS n FROM (${window('')}) WHERE ${filters}`).get(params) as { n: number };
      total = { count: n, capped: cappedCount(this.rm, 'rm_audit', scopeClause, scope.params).capped };
      if (rows.length <= first) {
        const searched = this.rm.db
          .prepare(`SELECT count(*) AS n, min(position) AS last FROM (SELECT position FROM rm_audit WHERE ${scopeClause}${cursor} ORDER BY position DESC LIMIT ${QUERY_COUNT_CAP})`)
          .get({ ...scope.params, ...(before === null ? {} : { cursor: Number(before) }) }) as { n: number; last: number | null };
        // The whole cap was searched: older entries may match.
        if (searched.n === QUERY_COUNT_CAP && searched.last !== null) searchedTo = BigInt(searched.last);
      }
    }
    const entries = rows.slice(0, first).map((r) => ({
      position: BigInt(r.position),
      at: new Date(r.at),
      actor: r.actor,
      appId: r.app_id,
      environment: r.environment,
      action: r.action,
      streamId: r.stream_id,
      name: r.name,
      data: JSON.parse(r.data) as unknown,
    }));
    return { entries, totalCount: total.count, totalCountCapped: total.capped, hasNextPage: rows.length > first || searchedTo !== null, searchedTo };
  }
}
