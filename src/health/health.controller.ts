import { Controller, Get, Inject } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { EffectsReactor } from '../workers/effects.reactor.js';
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
    private readonly modules: ModuleRef,
  ) {}

  /** The effects reactor lives in the engine's module, which depends on this one: looked up, not injected. */
  private get effects(): EffectsReactor {
    return this.modules.get(EffectsReactor, { strict: false });
  }

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
        // Live once caught up at start; not ready while a dead subscription is being restarted.
        const projections = this.indicators.check('projections');
        const ready = this.projections.isLive && this.projections.ready;
        const data = {
          live: this.projections.isLive,
          ready,
          checkpoint: this.projections.checkpoint.toString(),
          ...this.projections.startInfo,
          ...(ready ? {} : { reason: this.projections.notReadyReason ?? 'catching up with the log' }),
        };
        return ready ? projections.up(data) : projections.down(data);
      },
      () => this.indicators.check('effects').up({ checkpoint: this.effects.checkpoint.toString(), retries: this.effects.retries, held: this.effects.held, backingOff: this.effects.backingOff, appsOverBound: this.effects.appsOverBound }),
    ]);
  }
}
