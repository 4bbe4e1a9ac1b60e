import { Module } from '@nestjs/common';
import { TasksModule } from '../tasks/tasks.module.js';
import { WorkflowsModule } from '../workflows/workflows.module.js';
import { FailuresResolver } from './failures.resolver.js';

/** What is failed now, grouped by cause (the dashboard's Failures page). */
@Module({ imports: [WorkflowsModule, TasksModule], providers: [FailuresResolver] })
export class FailuresModule {}
