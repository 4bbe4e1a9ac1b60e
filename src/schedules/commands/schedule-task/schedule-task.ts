import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { AppScopedInput, JsonArrayField, NameField } from '../../../graphql/common.types.js';
import { CurrentPrincipal } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { ScheduleResult } from '../../schedule.types.js';
import { ScheduleCreator } from '../create-schedule.js';
import { CatchUpWindowField, CronField, TimezoneField } from '../schedule-fields.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'A task to dispatch at every occurrence of a cron expression.' })
export class ScheduleTaskInput extends AppScopedInput {
  @CronField()
  cron: string;

  @NameField('Name of the task, as a worker registered it with defineTask.')
  name: string;

  @JsonArrayField('Arguments given to every dispatch, as a string holding a JSON array, e.g. "[\\"weekly\\"]".')
  input: string;

  @TimezoneField()
  timezone?: string | null;

  @CatchUpWindowField()
  catchUpWindowMs?: number | null;
}

export class ScheduleTask {
  constructor(readonly principal: Principal, readonly input: ScheduleTaskInput) {}
}

@CommandHandler(ScheduleTask)
export class ScheduleTaskHandler implements ICommandHandler<ScheduleTask, ScheduleResult> {
  constructor(private readonly creator: ScheduleCreator) {}

  execute({ principal, input }: ScheduleTask): Promise<ScheduleResult> {
    return this.creator.create(principal, {
      appId: input.appId,
      environment: input.environment,
      kind: 'task',
      name: input.name,
      input: input.input,
      tag: null,
      cron: input.cron,
      timezone: input.timezone ?? null,
      overlapPolicy: 'allow',
      catchUpWindowMs: input.catchUpWindowMs ?? null,
    });
  }
}

@Resolver()
export class ScheduleTaskResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => ScheduleResult, {
    description: 'Schedules a task by a cron expression and returns the schedule id. Every occurrence dispatches the task once, with the schedule id recorded on it.',
  })
  scheduleTask(
    @CurrentPrincipal() principal: Principal,
    @Args('input', { description: 'App, environment, cron expression, task name and arguments (plus an optional time zone and catch-up window).' })
    input: ScheduleTaskInput,
  ): Promise<ScheduleResult> {
    return this.commands.execute(new ScheduleTask(principal, input));
  }
}
