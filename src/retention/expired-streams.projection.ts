import { Inject } from '@nestjs/common';
import type { IEventHandler } from '@nestjs/cqrs';
import { DeciderRunner } from '../event-store/decider-runner.js';
import { Projection, type StoredEvent } from '../event-store/event-registry.js';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port.js';
import { WORKFLOWS_EXPIRED, type WorkflowsExpiredData } from './retention.service.js';

/**
 * Every instance drops what it caches of the workflows retention deleted, whoever deleted them:
 * the per-stream queues' state and the store's stream tails. Kept, a deleted workflow's cached
 * state answered a dispatch into its id (an idempotency key's retry) as "already exists" while
 * the store had no such stream.
 */
@Projection([WORKFLOWS_EXPIRED])
export class ExpiredStreams implements IEventHandler<StoredEvent> {
  constructor(
    private readonly runner: DeciderRunner,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  handle(stored: StoredEvent): void {
    for (const id of (stored.data as WorkflowsExpiredData).workflowIds ?? []) {
      this.runner.queues.forget(`workflow-${id}`);
      this.store.forgetStream?.(`workflow-${id}`);
    }
  }
}
