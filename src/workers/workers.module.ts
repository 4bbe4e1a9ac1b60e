import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { SchedulesModule } from '../schedules/schedules.module.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { EffectsReactor } from './effects.reactor.js';
import { EngineProjection, EngineState } from './engine-state.js';
import { EngineTicker } from './engine-ticker.js';
import { EngineService } from './engine.service.js';
import { WorkerProtocolResolver } from './worker-protocol.resolver.js';
import { WorkerRegistry } from './worker-registry.js';
import { WorkersQueryResolver } from './workers-query.resolver.js';

/** The execution engine: what workers can claim, leases and timers, and the worker protocol. */
@Module({
  imports: [CqrsModule, WorkflowsModule, TasksModule, SchedulesModule],
  providers: [EngineState, EngineProjection, EngineService, EngineTicker, EffectsReactor, WorkerProtocolResolver, WorkerRegistry, WorkersQueryResolver],
  exports: [EngineState, EffectsReactor],
})
export class WorkersModule {}
