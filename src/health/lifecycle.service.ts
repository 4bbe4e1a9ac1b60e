import { Injectable, Logger } from '@nestjs/common';

/**
 * The instance's shutdown state. Once draining (SIGTERM), `/health/ready` answers 503 so the
 * load balancer stops sending traffic, parked long polls are answered empty and new polls get
 * nothing, while requests already in flight finish.
 */
@Injectable()
export class LifecycleService {
  private readonly logger = new Logger('Lifecycle');
  private readonly drainController = new AbortController();

  get draining(): boolean {
    return this.drainController.signal.aborted;
  }

  /** Aborts when draining starts. */
  get drainSignal(): AbortSignal {
    return this.drainController.signal;
  }

  startDraining(reason: string): void {
    if (this.draining) return;
    this.logger.log(`draining (${reason}): not ready, answering parked polls, taking no new work`);
    this.drainController.abort();
  }
}
