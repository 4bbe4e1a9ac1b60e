import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { EffectsReactor } from '../workers/effects.reactor.js';

/**
 * `GET /health`: 200 when the store answers and the read models are live; 503 with a reason
 * when the store does not answer or a projection subscription is down (being restarted).
 */
@Controller('health')
export class HealthController {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly projections: ProjectionRunner,
    private readonly effects: EffectsReactor,
  ) {}

  @Get()
  async health(@Res() reply: FastifyReply): Promise<void> {
    const projections = {
      live: this.projections.isLive,
      ready: this.projections.ready,
      checkpoint: this.projections.checkpoint.toString(),
      ...this.projections.startInfo,
    };
    const effects = { checkpoint: this.effects.checkpoint.toString(), retries: this.effects.retries };
    try {
      await this.store.ping();
    } catch (error) {
      await reply.code(503).send({
        status: 'unavailable',
        reason: `event store unavailable: ${(error as Error).message}`,
        store: { kind: this.store.kind, status: 'unavailable', error: (error as Error).message },
        projections,
        effects,
      });
      return;
    }
    const reason = this.projections.ready ? null : this.projections.notReadyReason;
    await reply.code(reason === null ? 200 : 503).send({
      status: reason === null ? 'ok' : 'unavailable',
      ...(reason === null ? {} : { reason }),
      store: { kind: this.store.kind, status: 'ok' },
      projections,
      effects,
    });
  }
}
