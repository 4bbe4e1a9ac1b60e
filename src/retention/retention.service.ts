import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleInit } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Counter } from 'prom-client';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { EventRegistry } from '../event-store/event-registry.js';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { LifecycleService } from '../health/lifecycle.service.js';
import { MetricsService } from '../observability/metrics.service.js';
import { CLOCK, type Clock } from '../shared/clock.js';
import { isDerivedId, uuidv7 } from '../shared/ids.js';
import { type WorkflowView, WorkflowsReadModel } from '../workflows/workflows.read-model.js';

export const RETENTION_JOB = 'retention.sweep';
/** Recorded after a sweep so every instance drops the deleted workflows from its read models. */
export const WORKFLOWS_EXPIRED = 'WorkflowsExpired';
const BATCH = 500;
/** The events that end a workflow; only `WorkflowRetried` (of a failed one) starts it again. */
const ENDINGS = new Set(['WorkflowCompleted', 'WorkflowFailed', 'WorkflowTerminated']);
/** Events read at a time from a stream's end to find its last ending or retry. */
const TAIL_PAGE = 64;

export interface WorkflowsExpiredData {
  workflowIds: string[];
  cutoff: string;
}

/**
 * Retention (RETENTION_DAYS, off by default): a job in the SchedulerRegistry deletes finished
 * workflows whose last change is older than that — their streams' rows on SQLite, tombstones on
 * EventStoreDB — and records one `WorkflowsExpired` event, which every instance's read models
 * follow. A workflow with a child still running is kept until the child ends.
 */
@Injectable()
export class RetentionService implements OnModuleInit, OnApplicationBootstrap {
  private readonly logger = new Logger('Retention');
  private running: Promise<number> | undefined;
  private readonly deleted: Counter;

  constructor(
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly registry: EventRegistry,
    private readonly scheduler: SchedulerRegistry,
    private readonly workflows: WorkflowsReadModel,
    private readonly projections: ProjectionRunner,
    private readonly lifecycle: LifecycleService,
    metrics: MetricsService,
  ) {
    this.deleted = new Counter({
      name: 'baton_retention_workflows_deleted_total',
      help: 'Finished workflows deleted by retention on this instance.',
      registers: [metrics.registry],
    });
  }

  onModuleInit(): void {
    this.registry.register([WORKFLOWS_EXPIRED]);
  }

  onApplicationBootstrap(): void {
    if (this.config.retentionDays <= 0) return;
    if (!this.store.deleteStream) {
      this.logger.warn(`RETENTION_DAYS is set but the ${this.store.kind} store cannot delete streams; nothing will be deleted`);
      return;
    }
    const interval = setInterval(() => void this.sweep().catch((e: Error) => this.logger.error(`retention sweep failed: ${e.message}`)), this.config.retentionSweepMs);
    interval.unref();
    this.scheduler.addInterval(RETENTION_JOB, interval);
    this.logger.log(`deleting finished workflows older than ${this.config.retentionDays} days, checking every ${this.config.retentionSweepMs} ms`);
  }

  /** One pass; answers how many workflows it deleted. Never runs twice at once on one instance. */
  sweep(): Promise<number> {
    this.running ??= this.sweepOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweepOnce(): Promise<number> {
    if (!this.store.deleteStream || this.config.retentionDays <= 0 || !this.projections.isLive || this.lifecycle.draining) return 0;
    const cutoff = new Date(this.clock.now() - this.config.retentionDays * 86_400_000);
    let total = 0;
    let counted = 0;
    let after: WorkflowView | undefined;
    for (;;) {
      // A derived id (an idempotency key's) must still be found by a retry within the key's window.
      const derivedSince = new Date(this.clock.now() - this.config.idempotencyWindowMs);
      // From the last row of the batch before: the rows kept are looked at once a sweep.
      const expired = this.workflows.finishedBefore(cutoff, BATCH, derivedSince, after);
      if (expired.length === 0 || this.lifecycle.draining) break;
      after = expired[expired.length - 1];
      const deleted: string[] = [];
      // Deleted here, not found deleted already (by another instance's sweep): counted and logged.
      let byThisSweep = 0;
      for (const view of expired) {
        const outcome = await this.deleteIfStillFinished(view);
        if (outcome === 'kept') continue;
        deleted.push(view.id);
        if (outcome === 'deleted') byThisSweep++;
      }
      if (deleted.length > 0) {
        const data: WorkflowsExpiredData = { workflowIds: deleted, cutoff: cutoff.toISOString() };
        // A sweep is an action of the service's own: a fresh id, which is also its cause (EVENTS.md).
        const correlationId = uuidv7();
        const { position } = await this.store.append(`retention-${uuidv7()}`, [
          { id: uuidv7(), type: WORKFLOWS_EXPIRED, data, metadata: { actor: 'system', appId: '*', environment: '*', correlationId, causationId: correlationId, at: new Date(this.clock.now()).toISOString() } },
        ]);
        await this.projections.waitFor(position);
        total += deleted.length;
        counted += byThisSweep;
        this.deleted.inc(byThisSweep);
      }
      if (expired.length < BATCH) break;
    }
    if (counted > 0) this.logger.log(`deleted ${counted} finished workflows last changed before ${cutoff.toISOString()}`);
    return total;
  }

  /**
   * Deletes a workflow's stream unless it was retried since the read model listed it as finished
   * (`retryWorkflows` on any instance, even while this sweep runs): its last events are read, a
   * `WorkflowRetried` after its last ending spares it, and the deletion expects the last revision
   * read, so a retry appended in between spares it too. Deleting first and asking after lost
   * retries that were acknowledged: they went with the stream.
   */
  private async deleteIfStillFinished(view: WorkflowView): Promise<'deleted' | 'gone' | 'kept'> {
    const workflowId = view.id;
    const streamId = `workflow-${workflowId}`;
    // From the end, a page at a time, back to the last ending or retry: a few events (late
    // results may follow an ending), not the whole history.
    let last: bigint | undefined;
    let fromRevision: bigint | undefined;
    for (;;) {
      const page = await this.store.readStream(streamId, { direction: 'backwards', maxCount: TAIL_PAGE, ...(fromRevision === undefined ? {} : { fromRevision }) });
      if (page.length === 0 && last === undefined) return 'gone'; // deleted already (another instance's sweep): drop the row too
      last ??= page[0].revision;
      const decisive = page.find((e) => e.type === 'WorkflowRetried' || ENDINGS.has(e.type));
      if (decisive?.type === 'WorkflowRetried') return 'kept';
      if (decisive) break;
      if (page.length < TAIL_PAGE || page[page.length - 1].revision === 0n) return 'kept'; // never ended: not ours to delete
      fromRevision = page[page.length - 1].revision - 1n;
    }
    // An idempotency key's generation (a derived id, UUID v8, with no parent) is remembered as
    // deleted, so an idempotent dispatch walks past it rather than taking it for a free generation.
    // A child (its id derived too) is remembered while its parent's stream is stored: a replay of
    // the parent's ChildWorkflowStarted (the effects reactor from an older checkpoint) must not
    // create it again (effects.reactor.ts). Its row goes when the parent is deleted (or is never
    // written when the parent went first): kept for good, the table grew with every child ever deleted.
    const remember = isDerivedId(workflowId);
    const owner = view.parentId === null ? undefined : `workflow-${view.parentId}`;
    const removed = await this.store.deleteStream!(streamId, { expectedRevision: last, remember, ...(owner === undefined ? {} : { owner }) });
    // 0: a retry (or another instance's deletion) came in between; undefined: the store does not say.
    return removed === 0 ? 'kept' : 'deleted';
  }
}
