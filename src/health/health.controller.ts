import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';

/** `GET /health`: 200 when the store answers, 503 when it does not. */
@Controller('health')
export class HealthController {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly projections: ProjectionRunner,
  ) {}

  @Get()
  async health(@Res() reply: FastifyReply): Promise<void> {
    const checkpoint = this.projections.checkpoint;
    try {
      await this.store.ping();
      await reply.code(200).send({
        status: 'ok',
        store: { kind: this.store.kind, status: 'ok' },
        projections: { live: this.projections.isLive, checkpoint: checkpoint.toString() },
      });
    } catch (error) {
      await reply.code(503).send({
        status: 'unavailable',
        store: { kind: this.store.kind, status: 'unavailable', error: (error as Error).message },
        projections: { live: this.projections.isLive, checkpoint: checkpoint.toString() },
      });
    }
  }
}
