import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { EventRegistry } from '../event-store/event-registry.js';
import { TasksModule } from '../tasks/tasks.module.js';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { ScheduleCreator } from './commands/create-schedule.js';
import { DeleteScheduleHandler, DeleteScheduleResolver } from './commands/delete-schedule/delete-schedule.js';
import { PauseScheduleHandler, PauseScheduleResolver } from './commands/pause-schedule/pause-schedule.js';
import { ResumeScheduleHandler, ResumeScheduleResolver } from './commands/resume-schedule/resume-schedule.js';
import { ScheduleActions } from './commands/schedule-actions.js';
import { ScheduleTaskHandler, ScheduleTaskResolver } from './commands/schedule-task/schedule-task.js';
import { ScheduleWorkflowHandler, ScheduleWorkflowResolver } from './commands/schedule-workflow/schedule-workflow.js';
import { TriggerScheduleHandler, TriggerScheduleResolver } from './commands/trigger-schedule/trigger-schedule.js';
import { SCHEDULE_EVENT_TYPES } from './domain/schedule.decider.js';
import { ScheduleQueriesResolver } from './queries/schedule-queries.resolver.js';
import { ScheduleDispatcher } from './schedule-dispatcher.js';
import { SchedulerService } from './scheduler.service.js';
import { SchedulesProjection, SchedulesReadModel, SchedulesTable } from './schedules.read-model.js';

/** Cron schedules of tasks and workflows: the API, the read model and the firing service. */
@Module({
  imports: [CqrsModule, WorkflowsModule, TasksModule],
  providers: [
    SchedulesReadModel,
    SchedulesProjection,
    SchedulesTable,
    ScheduleDispatcher,
    SchedulerService,
    ScheduleCreator,
    ScheduleActions,
    ScheduleTaskHandler,
    ScheduleTaskResolver,
    ScheduleWorkflowHandler,
    ScheduleWorkflowResolver,
    PauseScheduleHandler,
    PauseScheduleResolver,
    ResumeScheduleHandler,
    ResumeScheduleResolver,
    DeleteScheduleHandler,
    DeleteScheduleResolver,
    TriggerScheduleHandler,
    TriggerScheduleResolver,
    ScheduleQueriesResolver,
  ],
  exports: [SchedulesReadModel, ScheduleCreator],
})
export class SchedulesModule {
  constructor(registry: EventRegistry) {
    registry.register(SCHEDULE_EVENT_TYPES);
  }
}
