import { Global, Module } from '@nestjs/common';
import { SchedulesModule } from '../schedules/schedules.module.js';
import { WorkersModule } from '../workers/workers.module.js';
import { BytesInFlight } from './bytes-in-flight.js';
import { GraphqlMetricsPlugin } from './graphql-metrics.plugin.js';
import { MetricsController } from './metrics.controller.js';
import { MetricsProjection } from './metrics.projection.js';
import { MetricsSampler } from './metrics-sampler.js';
import { MetricsService } from './metrics.service.js';

/** Prometheus metrics: the injectable MetricsService, `/metrics`, and what feeds them. */
@Global()
@Module({
  imports: [WorkersModule, SchedulesModule],
  controllers: [MetricsController],
  providers: [MetricsService, MetricsProjection, GraphqlMetricsPlugin, MetricsSampler, BytesInFlight],
  exports: [MetricsService, BytesInFlight],
})
export class MetricsModule {}
