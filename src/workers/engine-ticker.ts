import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DeciderRunner } from '../event-store/decider-runner.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { CLOCK, type Clock } from '../shared/clock.js';
import { uuidv7 } from '../shared/ids.js';
import { taskDecider } from '../tasks/domain/task.decider.js';
import { workflowDecider } from '../workflows/domain/workflow.decider.js';
import { EngineState, parseDueRef } from './engine-state.js';

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

  constructor(
    private readonly engine: EngineState,
    private readonly runner: DeciderRunner,
    private readonly projections: ProjectionRunner,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  onApplicationBootstrap(): void {
    this.projections.onLive(() => {
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

  private context(appId: string, environment: string) {
    return { actor: 'system', appId, environment, correlationId: uuidv7() };
  }
}
