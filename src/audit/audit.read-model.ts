import { Inject } from '@nestjs/common';
import type { Statement } from 'better-sqlite3';
import { type DurableProjection, ReadModel, StoredEvent } from '../event-store/event-registry.js';
import { READ_MODEL_DB, ReadModelDb, cappedCount, scopedFilter } from '../event-store/read-model-db.js';

/** The events that record an API action (a person or program acting through a token or the CLI). */
export const AUDITED_EVENT_TYPES = [
  'WorkflowDispatched',
  'WorkflowPaused',
  'WorkflowResumed',
  'WorkflowTerminated',
  'WorkflowEventReceived',
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
@ReadModel(AUDITED_EVENT_TYPES)
export class AuditReadModel implements DurableProjection {
  private insert!: Statement;

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
    `);
    this.insert = this.rm.db.prepare(
      `INSERT OR IGNORE INTO rm_audit (position, at, actor, app_id, environment, action, stream_id, name, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  project(stored: StoredEvent): void {
    const { metadata, streamId, position, recordedAt } = stored.recorded;
    const actor = metadata.actor ?? 'unknown';
    if (actor === 'system' || actor.startsWith('worker:')) return;
    const data = stored.data as Record<string, unknown>;
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

  /** Newest first, `first` entries before the position `before` (a cursor). `search` matches the actor, action, stream or name. */
  page(filter: AuditFilter, first: number, before: bigint | null): { entries: AuditEntry[]; totalCount: number; totalCountCapped: boolean; hasNextPage: boolean } {
    const { where, params, add } = scopedFilter(filter.appId, filter.environment);
    add('actor = @actor', 'actor', filter.actor);
    add('action = @action', 'action', filter.action);
    add('at >= @after', 'after', filter.after?.getTime());
    add('at < @before', 'before', filter.before?.getTime());
    if (filter.search != null && filter.search !== '') {
      where.push("(instr(lower(actor), @search) > 0 OR instr(lower(action), @search) > 0 OR instr(lower(stream_id), @search) > 0 OR instr(lower(coalesce(name, '')), @search) > 0)");
      params.search = filter.search.toLowerCase();
    }
    const clause = where.join(' AND ');
    const total = cappedCount(this.rm, 'rm_audit', clause, params);
    const rows = this.rm.db
      .prepare(`SELECT * FROM rm_audit WHERE ${clause}${before === null ? '' : ' AND position < @cursor'} ORDER BY position DESC LIMIT @limit`)
      .all({ ...params, ...(before === null ? {} : { cursor: Number(before) }), limit: first + 1 }) as Row[];
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
    return { entries, totalCount: total.count, totalCountCapped: total.capped, hasNextPage: rows.length > first };
  }
}
