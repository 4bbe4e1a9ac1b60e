import type { IEventHandler } from '@nestjs/cqrs';
import { Gauge } from 'prom-client';
import { Projection, type StoredEvent } from '../../event-store/event-registry.js';
import { MetricsService } from '../../observability/metrics.service.js';

/** The events after which a workflow has no result to wait for: it ended, or retention deleted it. */
const ENDING_EVENT_TYPES = ['WorkflowCompleted', 'WorkflowFailed', 'WorkflowTerminated', 'WorkflowsExpired'] as const;

/**
 * Wakes the `awaitWorkflow` long polls of a workflow when it ends. Every instance's subscription
 * hands it the events whoever appended them, after the batch they came in was folded into the
 * read models, so a woken poll reads the final state. A waiting poll costs nothing while other
 * workflows change: they used to wake at every batch of the log and read the store's head and
 * their row again (200 of them took a third of a dispatch-bound instance's throughput).
 */
@Projection(ENDING_EVENT_TYPES)
export class WorkflowEndings implements IEventHandler<StoredEvent> {
  private readonly waiting = new Map<string, Set<() => void>>();
  private watches = 0;

  constructor(metrics: MetricsService) {
    const endings = this;
    new Gauge({
      name: 'baton_await_workflow_waiting',
      help: 'awaitWorkflow long polls (a client waiting for a result, as the SDK\'s result() does) waiting on this instance.',
      registers: [metrics.registry],
      collect() {
        this.set(endings.watched);
      },
    });
  }

  /**
   * `ended` resolves when `workflowId` ends; `cancel` forgets the watch. Watch before reading the
   * workflow's state, so that an ending in between is not missed.
   */
  watch(workflowId: string): { ended: Promise<void>; cancel: () => void } {
    let wake!: () => void;
    const ended = new Promise<void>((resolve) => (wake = resolve));
    let watchers = this.waiting.get(workflowId);
    if (!watchers) this.waiting.set(workflowId, (watchers = new Set()));
    watchers.add(wake);
    this.watches++;
    let open = true;
    const cancel = () => {
      if (!open) return;
      open = false;
      this.watches--;
      const current = this.waiting.get(workflowId);
      if (!current?.delete(wake) || current.size > 0) return;
      this.waiting.delete(workflowId);
    };
    return { ended, cancel };
  }

  /** Watches open now (`baton_await_workflow_waiting`): woken ones count until cancelled. */
  get watched(): number {
    return this.watches;
  }

  handle(stored: StoredEvent): void {
    if (this.waiting.size === 0) return;
    const ids = stored.type === 'WorkflowsExpired' ? ((stored.data as { workflowIds?: string[] }).workflowIds ?? []) : [stored.recorded.streamId.slice('workflow-'.length)];
    for (const id of ids) {
      const watchers = this.waiting.get(id);
      if (!watchers) continue;
      this.waiting.delete(id);
      for (const wake of watchers) wake();
    }
  }
}
