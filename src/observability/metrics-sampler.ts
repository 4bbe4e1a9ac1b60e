import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { MetricsService } from './metrics.service.js';

export const METRICS_SAMPLER_JOB = 'metrics.projection-lag';

/**
 * The service's own periodic jobs go through @nestjs/schedule's SchedulerRegistry (so they can
 * be listed, stopped and driven by name): here, sampling the projection lag every METRICS_SAMPLE_MS.
 */
@Injectable()
export class MetricsSampler implements OnApplicationBootstrap {
  private readonly logger = new Logger('MetricsSampler');
  private running = false;

  constructor(
    private readonly registry: SchedulerRegistry,
    private readonly metrics: MetricsService,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
  ) {}

  onApplicationBootstrap(): void {
    const interval = setInterval(() => void this.sample(), this.config.metricsSampleMs);
    interval.unref();
    this.registry.addInterval(METRICS_SAMPLER_JOB, interval);
  }

  async sample(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.metrics.sampleProjectionLag();
    } catch (error) {
      this.logger.warn(`could not sample the projection lag: ${(error as Error).message}`);
    } finally {
      this.running = false;
    }
  }
}
