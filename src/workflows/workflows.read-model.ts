import { Injectable } from '@nestjs/common';
import type { IEventHandler } from '@nestjs/cqrs';
import { Json } from '../event-store/event-store.port.js';
import { Projection, StoredEvent } from '../event-store/event-registry.js';
import { TaskError } from '../tasks/domain/task-attempts.js';
import { FINAL_STATUSES, WorkflowEvent, WorkflowStatus, baseName } from './domain/workflow.decider.js';

export interface WorkflowView {
  id: string;
  appId: string;
  environment: string;
  name: string;
  version: string | null;
  tag: string | null;
  status: WorkflowStatus;
  input: Json[];
  output: Json | undefined;
  error: TaskError | null;
  parentId: string | null;
  scheduleId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface WorkflowFilter {
  appId: string;
  environment: string;
  name?: string | null;
  tag?: string | null;
  status?: WorkflowStatus | null;
  parentId?: string | null;
  scheduleId?: string | null;
  createdAfter?: Date | null;
  createdBefore?: Date | null;
}

const key = (...parts: string[]) => parts.join('\u0000');

/**
 * Every workflow of this instance's log, with indexes for selectors: by app+environment (in
 * dispatch order), and the not-yet-final ones by name and by name+tag. Rebuilt from the log at
 * start, so tags keep working across restarts.
 */
@Injectable()
export class WorkflowsReadModel {
  private readonly byId = new Map<string, WorkflowView>();
  private readonly byScope = new Map<string, WorkflowView[]>();
  private readonly activeByName = new Map<string, Set<string>>();
  private readonly activeByTag = new Map<string, Set<string>>();

  get(appId: string, environment: string, id: string): WorkflowView | undefined {
    const view = this.byId.get(id);
    return view && view.appId === appId && view.environment === environment ? view : undefined;
  }

  /** Not-final workflows of that name (and tag), oldest first. */
  active(appId: string, environment: string, name: string, tag?: string | null): WorkflowView[] {
    const ids = tag == null ? this.activeByName.get(key(appId, environment, name)) : this.activeByTag.get(key(appId, environment, name, tag));
    if (!ids) return [];
    return [...ids].map((id) => this.byId.get(id)!).sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  list(filter: WorkflowFilter): WorkflowView[] {
    const all = this.byScope.get(key(filter.appId, filter.environment)) ?? [];
    const after = filter.createdAfter?.getTime();
    const before = filter.createdBefore?.getTime();
    return all.filter(
      (w) =>
        (filter.name == null || w.name === filter.name || baseName(w.name) === filter.name) &&
        (filter.tag == null || w.tag === filter.tag) &&
        (filter.status == null || w.status === filter.status) &&
        (filter.parentId == null || w.parentId === filter.parentId) &&
        (filter.scheduleId == null || w.scheduleId === filter.scheduleId) &&
        (after === undefined || w.createdAt.getTime() >= after) &&
        (before === undefined || w.createdAt.getTime() < before),
    );
  }

  /** How many workflows of the filter (its state aside) are in each state. */
  countByStatus(filter: WorkflowFilter): Map<WorkflowStatus, number> {
    const counts = new Map<WorkflowStatus, number>();
    for (const w of this.list({ ...filter, status: null })) counts.set(w.status, (counts.get(w.status) ?? 0) + 1);
    return counts;
  }

  get size(): number {
    return this.byId.size;
  }

  apply(event: WorkflowEvent, id: string, at: Date): void {
    if (event.type === 'WorkflowDispatched') {
      if (this.byId.has(id)) return;
      const d = event.data;
      const view: WorkflowView = {
        id,
        appId: d.appId,
        environment: d.environment,
        name: d.name,
        version: null,
        tag: d.tag,
        status: 'running',
        input: d.input,
        output: undefined,
        error: null,
        parentId: d.parent?.workflowId ?? null,
        scheduleId: d.scheduleId,
        createdAt: at,
        updatedAt: at,
      };
      this.byId.set(id, view);
      const scope = key(d.appId, d.environment);
      const list = this.byScope.get(scope);
      if (list) list.push(view);
      else this.byScope.set(scope, [view]);
      this.index(view, true);
      return;
    }
    const view = this.byId.get(id);
    if (!view) return;
    switch (event.type) {
      case 'DecisionStarted':
        view.version ??= event.data.version;
        return;
      case 'WorkflowPaused':
        return this.setStatus(view, 'paused', at);
      case 'WorkflowResumed':
        return this.setStatus(view, 'running', at);
      case 'WorkflowTerminated':
        return this.setStatus(view, 'terminated', at);
      case 'WorkflowCompleted':
        view.output = event.data.result;
        return this.setStatus(view, 'completed', at);
      case 'WorkflowFailed':
        view.error = event.data.error;
        return this.setStatus(view, 'failed', at);
      case 'WorkflowRetried':
        if (view.status !== 'failed') return;
        view.status = 'running';
        view.error = null;
        view.updatedAt = at;
        return this.index(view, true);
      default:
        view.updatedAt = at;
    }
  }

  private setStatus(view: WorkflowView, status: WorkflowStatus, at: Date): void {
    if (FINAL_STATUSES.has(view.status)) return;
    view.status = status;
    view.updatedAt = at;
    if (FINAL_STATUSES.has(status)) this.index(view, false);
  }

  private index(view: WorkflowView, add: boolean): void {
    const names = new Set([view.name, baseName(view.name)]);
    for (const name of names) {
      toggle(this.activeByName, key(view.appId, view.environment, name), view.id, add);
      if (view.tag !== null) toggle(this.activeByTag, key(view.appId, view.environment, name, view.tag), view.id, add);
    }
  }
}

function toggle(index: Map<string, Set<string>>, k: string, id: string, add: boolean): void {
  let ids = index.get(k);
  if (add) {
    if (!ids) index.set(k, (ids = new Set()));
    ids.add(id);
  } else if (ids) {
    ids.delete(id);
    if (ids.size === 0) index.delete(k);
  }
}

@Projection(['WorkflowDispatched', 'DecisionStarted', 'WorkflowPaused', 'WorkflowResumed', 'WorkflowTerminated', 'WorkflowCompleted', 'WorkflowFailed', 'WorkflowRetried'])
export class WorkflowsProjection implements IEventHandler<StoredEvent> {
  constructor(private readonly model: WorkflowsReadModel) {}

  handle(stored: StoredEvent): void {
    const id = stored.recorded.streamId.slice('workflow-'.length);
    this.model.apply({ type: stored.type, data: stored.data } as WorkflowEvent, id, stored.recorded.recordedAt);
  }
}
