import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { EventRegistry } from '../event-store/event-registry.js';
import { DispatchTaskHandler, DispatchTaskResolver, TaskDispatcher } from './commands/dispatch-task/dispatch-task.js';
import { RetryTaskHandler, RetryTaskResolver } from './commands/retry-task/retry-task.js';
import { ATTEMPT_EVENT_TYPES } from './domain/task-attempts.js';
import { TASK_EVENT_TYPES } from './domain/task.decider.js';
import { TaskQueriesResolver } from './queries/task-queries.resolver.js';
import { TasksReadModel } from './tasks.read-model.js';

@Module({
  imports: [CqrsModule],
  providers: [TasksReadModel, TaskDispatcher, DispatchTaskHandler, DispatchTaskResolver, RetryTaskHandler, RetryTaskResolver, TaskQueriesResolver],
  exports: [TasksReadModel, TaskDispatcher],
})
export class TasksModule {
  constructor(registry: EventRegistry) {
    registry.register([...TASK_EVENT_TYPES, ...ATTEMPT_EVENT_TYPES]);
  }
}
