import { Injectable } from '@nestjs/common';
import type { IEventHandler } from '@nestjs/cqrs';
import { Projection, StoredEvent } from '../event-store/event-registry.js';

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

/**
 * The API actions of every app, read from the event metadata (actor, app, environment): the
 * event log read as an audit log. Actions of the engine (`system`) and of workers are left out.
 */
@Injectable()
export class AuditReadModel {
  private readonly entries: AuditEntry[] = [];

  add(entry: AuditEntry): void {
    this.entries.push(entry);
  }

  /** Newest first. `search` matches the actor, action, stream or name, case-insensitively. */
  list(filter: AuditFilter): AuditEntry[] {
    const needle = filter.search?.toLowerCase() ?? null;
    const found: AuditEntry[] = [];
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (e.appId !== filter.appId || e.environment !== filter.environment) continue;
      if (filter.actor != null && e.actor !== filter.actor) continue;
      if (filter.action != null && e.action !== filter.action) continue;
      if (filter.after != null && e.at < filter.after) continue;
      if (filter.before != null && e.at >= filter.before) continue;
      if (needle !== null && ![e.actor, e.action, e.streamId, e.name ?? ''].some((s) => s.toLowerCase().includes(needle))) continue;
      found.push(e);
    }
    return found;
  }
}

@Projection(AUDITED_EVENT_TYPES)
export class AuditProjection implements IEventHandler<StoredEvent> {
  constructor(private readonly model: AuditReadModel) {}

  handle(stored: StoredEvent): void {
    const { metadata, streamId, position, recordedAt } = stored.recorded;
    const actor = metadata.actor ?? 'unknown';
    if (actor === 'system' || actor.startsWith('worker:')) return;
    const data = stored.data as Record<string, unknown>;
    this.model.add({
      position,
      at: metadata.at ? new Date(metadata.at) : recordedAt,
      actor,
      appId: String(metadata.appId ?? data.appId ?? ''),
      environment: String(metadata.environment ?? data.environment ?? ''),
      action: stored.type,
      streamId,
      name: typeof data.name === 'string' ? data.name : null,
      data,
    });
  }
}
