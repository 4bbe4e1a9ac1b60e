import { Injectable } from '@nestjs/common';
import { CommandContext } from '../event-store/decider-runner.js';
import { TaskDispatcher } from '../tasks/commands/dispatch-task/dispatch-task.js';
import { WorkflowDispatcher } from '../workflows/commands/dispatch-workflow/dispatch-workflow.js';
import { ScheduleSpec } from './domain/schedule.decider.js';

/** Starts what a schedule runs, under the id derived for the occurrence or trigger (a repeat is a no-op). */
@Injectable()
export class ScheduleDispatcher {
  constructor(
    private readonly tasks: TaskDispatcher,
    private readonly workflows: WorkflowDispatcher,
  ) {}

  async dispatch(spec: ScheduleSpec, dispatchId: string, context: CommandContext): Promise<void> {
    if (spec.kind === 'task') {
      await this.tasks.dispatch(context, {
        taskId: dispatchId,
        appId: spec.appId,
        environment: spec.environment,
        name: spec.name,
        args: spec.input,
        scheduleId: spec.scheduleId,
      });
    } else {
      await this.workflows.dispatch(context, {
        workflowId: dispatchId,
        appId: spec.appId,
        environment: spec.environment,
        name: spec.name,
        tag: spec.tag,
        input: spec.input,
        scheduleId: spec.scheduleId,
      });
    }
  }
}
