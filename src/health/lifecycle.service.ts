import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';

/**
 * The instance's shutdown state. Once draining (SIGTERM), `/health/ready` answers 503 so the
 * load balancer stops sending traffic, parked long polls are answered empty and new polls get
 * nothing, while requests already in flight finish.
 */
@Injectable()
export class LifecycleService implements OnModuleDestroy {
  private readonly logger = new Logger('Lifecycle');
  private readonly drainController = new AbortController();
  private readonly closeController = new AbortController();

  get draining(): boolean {
    return this.drainController.signal.aborted;
  }

  /** Aborts when draining starts. */
  get drainSignal(): AbortSignal {
    return this.drainController.signal;
  }

  /**
   * Aborts when the app starts closing (after SHUTDOWN_DELAY_MS, before `app.close()`, whose
   * GraphQL server waits for the operations in flight): what waits for it is answered then.
   */
  get closeSignal(): AbortSignal {
    return this.closeController.signal;
  }

  startDraining(reason: string): void {
    if (this.draining) return;
    this.logger.log(`draining (${reason}): not ready, answering parked polls, taking no new work`);
    this.drainController.abort();
  }

  startClosing(): void {
    this.closeController.abort();
  }

  onModuleDestroy(): void {
    this.startClosing();
  }
}
