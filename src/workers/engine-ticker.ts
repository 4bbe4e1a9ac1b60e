import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { DeciderRunner } from '../event-store/decider-runner.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { CLOCK, type Clock } from '../shared/clock.js';
import { uuidv7 } from '../shared/ids.js';
import { taskDecider } from '../tasks/domain/task.decider.js';
import { workflowDecider } from '../workflows/domain/workflow.decider.js';
import type { AttemptState } from '../tasks/domain/task-attempts.js';
import { type DueRef, EngineState, parseDueRef } from './engine-state.js';

/**
 * The engine's clock: one timer armed for the earliest due time. When it rings, due timers
 * fire and lapsed leases expire (each an append with an expected revision, so with several
 * instances each happens once), and retries that became claimable wake their pollers.
 */
@Injectable()
export class EngineTicker implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('EngineTicker');
  private armedAt: number | undefined;
  private cancel: (() => void) | undefined;
  private stopped = false;
  /**
   * Until when a lease that lapsed is left to its worker (one lease after this instance went
   * live): while the service was down, no worker could heartbeat, and a lease that ran out then
   * says nothing about its worker. Expired at once on restart, every task in flight across an
   * outage longer than LEASE_MS was counted failed and ran again while its worker was still
   * running it (found in review). A worker that is alive heartbeats (or reports) within the
   * grace; a dead one's lease expires when it ends. Start-to-close timeouts are not deferred.
   */
  private graceUntil = 0;
  /** Items whose lapsed lease waits for `graceUntil`. */
  private readonly deferred = new Set<string>();

  constructor(
    private readonly engine: EngineState,
    private readonly runner: DeciderRunner,
    private readonly projections: ProjectionRunner,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.projections.onLive(() => {
      this.graceUntil = this.clock.now() + this.config.leaseMs;
      this.engine.onDue((at) => this.arm(at));
      this.arm(this.engine.nextDue());
    });
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    this.cancel?.();
  }

  private arm(at: number | undefined): void {
    if (at === undefined || this.stopped) return;
    if (this.armedAt !== undefined && this.armedAt <= at) return;
    this.cancel?.();
    this.armedAt = at;
    this.cancel = this.clock.at(at, () => void this.ring());
  }

  private async ring(): Promise<void> {
    this.armedAt = undefined;
    this.cancel = undefined;
    const now = this.clock.now();
    await Promise.all(this.engine.takeDue(now).map((ref) => this.act(ref, now)));
    this.arm(this.engine.nextDue());
  }

  private async act(key: string, now: number): Promise<void> {
    try {
      const ref = parseDueRef(key);
      if (now < this.graceUntil && this.onlyLeaseLapsed(ref, now)) {
        // One timer for all of them (after a restart with many in flight, most are).
        this.deferred.add(key);
        if (this.deferred.size === 1) {
          this.clock.at(this.graceUntil, () => {
            const keys = [...this.deferred];
            this.deferred.clear();
            for (const k of keys) this.engine.reindexRef(k);
          });
        }
        return;
      }
      if (ref.kind === 'task') {
        const state = this.engine.tasks.get(ref.taskId);
        if (state && taskDecider.decide({ type: 'Tick', now }, state).length > 0) {
          await this.runner.run(`task-${ref.taskId}`, taskDecider, { type: 'Tick', now }, this.context(state.appId, state.environment));
        }
      } else {
        const state = this.engine.workflows.get(ref.workflowId);
        const target = ref.kind === 'decision' ? { kind: 'decision' as const } : { kind: ref.kind === 'timer' ? ('timer' as const) : ('task' as const), seq: ref.seq };
        const tick = { type: 'Tick' as const, now, target };
        if (state && workflowDecider.decide(tick, state).length > 0) {
          await this.runner.run(`workflow-${ref.workflowId}`, workflowDecider, tick, this.context(state.appId, state.environment));
        }
      }
      this.engine.reindexRef(key);
    } catch (error) {
      this.logger.warn(`could not act on ${key}, retrying in 1 s: ${(error as Error).message}`);
      this.clock.at(now + 1000, () => this.engine.reindexRef(key));
    }
  }

  /** Whether what is due on `ref` is a lease that lapsed (not a timer, a retry or a start-to-close timeout). */
  private onlyLeaseLapsed(ref: DueRef, now: number): boolean {
    const lapsed = (attempt: AttemptState | undefined) =>
      attempt?.status === 'started' && attempt.leaseExpiresAt <= now && (attempt.deadlineAt === null || attempt.deadlineAt > now);
    if (ref.kind === 'task') return lapsed(this.engine.tasks.get(ref.taskId)?.attempt);
    const state = this.engine.workflows.get(ref.workflowId);
    if (ref.kind === 'decision') return state?.decision != null && state.decision.leaseExpiresAt <= now;
    if (ref.kind === 'workflowTask') return lapsed(state?.tasks.get(ref.seq)?.attempt);
    return false;
  }

  private context(appId: string, environment: string) {
    return { actor: 'system', appId, environment, correlationId: uuidv7() };
  }
}
