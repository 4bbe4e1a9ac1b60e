import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { LifecycleService } from './lifecycle.service.js';

const PING_TIMEOUT_MS = 2_000;

/**
 * Probes (@nestjs/terminus):
 * - `GET /health/live`: the process answers (restart it when this fails);
 * - `GET /health/ready`: the store answers, the read models have caught up with the log, and the
 *   instance is not draining (send it traffic only while this is 200);
 * - `GET /health`: the same as ready.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly projections: ProjectionRunner,
    private readonly lifecycle: LifecycleService,
  ) {}

  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([() => this.indicators.check('process').up({ pid: process.pid, uptimeSeconds: Math.round(process.uptime()) })]);
  }

  @Get()
  @HealthCheck()
  alias() {
    return this.ready();
  }

  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([
      () => {
        const lifecycle = this.indicators.check('lifecycle');
        return this.lifecycle.draining ? lifecycle.down({ draining: true }) : lifecycle.up({ draining: false });
      },
      async () => {
        const store = this.indicators.check('store');
        try {
          await Promise.race([
            this.store.ping(),
            new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS).unref()),
          ]);
          return store.up({ kind: this.store.kind });
        } catch (error) {
          return store.down({ kind: this.store.kind, error: (error as Error).message });
        }
      },
      () => {
        const projections = this.indicators.check('projections');
        const data = { live: this.projections.isLive, checkpoint: this.projections.checkpoint.toString() };
        return this.projections.isLive ? projections.up(data) : projections.down(data);
      },
    ]);
  }
}
