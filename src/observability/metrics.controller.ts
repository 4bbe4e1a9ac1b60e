import { Controller, Get, Headers, Inject, Res, UnauthorizedException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { MetricsService } from './metrics.service.js';

/**
 * `GET /metrics` in Prometheus' text format. Open by default (keep the port off the internet, as
 * with any Prometheus target); with METRICS_TOKEN set, scrapers must send `Authorization: Bearer <METRICS_TOKEN>`.
 */
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
  ) {}

  @Get()
  async scrape(@Headers('authorization') authorization: string | undefined, @Res() reply: FastifyReply): Promise<void> {
    const expected = this.config.metricsToken;
    if (expected) {
      const given = Buffer.from(/^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1] ?? '');
      const want = Buffer.from(expected);
      if (given.length !== want.length || !timingSafeEqual(given, want)) {
        reply.header('WWW-Authenticate', 'Bearer realm="metrics"');
        throw new UnauthorizedException('/metrics needs Authorization: Bearer <METRICS_TOKEN>');
      }
    }
    await reply.header('content-type', this.metrics.contentType).send(await this.metrics.scrape());
  }
}
