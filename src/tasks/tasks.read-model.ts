import { Injectable } from '@nestjs/common';
import type { IEventHandler } from '@nestjs/cqrs';
import { Json } from '../event-store/event-store.port.js';
import { Projection, StoredEvent } from '../event-store/event-registry.js';
import { TaskDispatchedData } from './domain/task.decider.js';
import { AttemptEventData, TaskError } from './domain/task-attempts.js';

export type TaskStatus = 'pending' | 'running' | 'completed' | 'failed';

export interface TaskView {
  id: string;
  appId: string;
  environment: string;
  name: string;
  status: TaskStatus;
  attempts: number;
  input: Json[];
  output: Json | undefined;
  error: TaskError | null;
  scheduleId: string | null;
  parentId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Standalone tasks (`task-<id>` streams), by id and by app+environment in dispatch order. */
@Injectable()
export class TasksReadModel {
  private readonly byId = new Map<string, TaskView>();
  private readonly byScope = new Map<string, TaskView[]>();

  get(appId: string, environment: string, id: string): TaskView | undefined {
    const view = this.byId.get(id);
    return view && view.appId === appId && view.environment === environment ? view : undefined;
  }

  list(filter: { appId: string; environment: string; name?: string | null; status?: TaskStatus | null }): TaskView[] {
    return (this.byScope.get(`${filter.appId}\u0000${filter.environment}`) ?? []).filter(
      (t) => (filter.name == null || t.name === filter.name) && (filter.status == null || t.status === filter.status),
    );
  }

  dispatched(id: string, d: TaskDispatchedData, at: Date): void {
    if (this.byId.has(id)) return;
    const view: TaskView = {
      id,
      appId: d.appId,
      environment: d.environment,
      name: d.name,
      status: 'pending',
      attempts: 0,
      input: d.args,
      output: undefined,
      error: null,
      scheduleId: d.scheduleId,
      parentId: d.parent?.workflowId ?? null,
      createdAt: at,
      updatedAt: at,
    };
    this.byId.set(id, view);
    const scope = `${d.appId}\u0000${d.environment}`;
    const list = this.byScope.get(scope);
    if (list) list.push(view);
    else this.byScope.set(scope, [view]);
  }

  update(id: string, at: Date, change: (view: TaskView) => void): void {
    const view = this.byId.get(id);
    if (!view) return;
    change(view);
    view.updatedAt = at;
  }
}

@Projection(['TaskDispatched', 'TaskRetried', 'TaskStarted', 'TaskCompleted', 'TaskAttemptFailed', 'TaskFailed'])
export class TasksProjection implements IEventHandler<StoredEvent> {
  constructor(private readonly model: TasksReadModel) {}

  handle(stored: StoredEvent): void {
    const { streamId, recordedAt } = stored.recorded;
    if (!streamId.startsWith('task-')) return;
    const id = streamId.slice('task-'.length);
    switch (stored.type) {
      case 'TaskDispatched':
        return this.model.dispatched(id, stored.data as TaskDispatchedData, recordedAt);
      case 'TaskRetried':
        return this.model.update(id, recordedAt, (v) => {
          v.status = 'pending';
          v.attempts = 0;
        });
      case 'TaskStarted':
        return this.model.update(id, recordedAt, (v) => {
          v.status = 'running';
          v.attempts = (stored.data as AttemptEventData['TaskStarted']).attempt;
        });
      case 'TaskCompleted':
        return this.model.update(id, recordedAt, (v) => {
          v.status = 'completed';
          v.output = (stored.data as AttemptEventData['TaskCompleted']).result;
        });
      case 'TaskAttemptFailed':
        return this.model.update(id, recordedAt, (v) => {
          const data = stored.data as AttemptEventData['TaskAttemptFailed'];
          v.error = data.error;
          if (data.retryAt !== null) v.status = 'pending';
        });
      case 'TaskFailed':
        return this.model.update(id, recordedAt, (v) => {
          v.status = 'failed';
          v.error = (stored.data as AttemptEventData['TaskFailed']).error;
        });
    }
  }
}
