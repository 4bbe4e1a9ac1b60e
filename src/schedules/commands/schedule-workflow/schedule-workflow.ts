import { Args, Field, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { IsEnum, IsOptional } from 'class-validator';
import { AppScopedInput, JsonArrayField, NameField, OptionalTagField } from '../../../graphql/common.types.js';
import { CurrentPrincipal } from '../../../tokens/principal.js';
import { VersionField, versionedName } from '../../../workflows/commands/dispatch-workflow/dispatch-workflow.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { ScheduleOverlapPolicy, ScheduleResult } from '../../schedule.types.js';
import { ScheduleCreator } from '../create-schedule.js';
import { CatchUpWindowField, CronField, TimezoneField } from '../schedule-fields.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'A workflow to dispatch at every occurrence of a cron expression.' })
export class ScheduleWorkflowInput extends AppScopedInput {
  @CronField()
  cron: string;

  @NameField('Name of the workflow; `Name` runs the highest `Name_vN` a worker serves, `Name_vN` pins a version.')
  name: string;

  @JsonArrayField('Arguments given to every dispatch, as a string holding a JSON array, e.g. "[{\\"format\\":\\"pdf\\"}]".')
  input: string;

  @OptionalTagField('Optional tag given to every workflow the schedule dispatches (at most 256 characters); `{ name, tag }` selectors reach them by it.')
  tag?: string | null;

  @VersionField()
  version?: string | null;

  @TimezoneField()
  timezone?: string | null;

  @Field(() => ScheduleOverlapPolicy, {
    nullable: true,
    description: 'What to do with an occurrence while the workflow dispatched last is not final yet: ALLOW (default), SKIP or BUFFER_ONE.',
  })
  @IsOptional()
  @IsEnum(ScheduleOverlapPolicy)
  overlapPolicy?: ScheduleOverlapPolicy | null;

  @CatchUpWindowField()
  catchUpWindowMs?: number | null;
}

export class ScheduleWorkflow {
  constructor(readonly principal: Principal, readonly input: ScheduleWorkflowInput) {}
}

@CommandHandler(ScheduleWorkflow)
export class ScheduleWorkflowHandler implements ICommandHandler<ScheduleWorkflow, ScheduleResult> {
  constructor(private readonly creator: ScheduleCreator) {}

  execute({ principal, input }: ScheduleWorkflow): Promise<ScheduleResult> {
    return this.creator.create(principal, {
      appId: input.appId,
      environment: input.environment,
      kind: 'workflow',
      name: versionedName(input.name, input.version),
      input: input.input,
      tag: input.tag ?? null,
      cron: input.cron,
      timezone: input.timezone ?? null,
      overlapPolicy: input.overlapPolicy ?? 'allow',
      catchUpWindowMs: input.catchUpWindowMs ?? null,
    });
  }
}

@Resolver()
export class ScheduleWorkflowResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => ScheduleResult, {
    description:
      'Schedules a workflow by a cron expression (optionally with a tag for every instance) and returns the schedule id. Every occurrence dispatches one workflow, with the schedule id recorded on it.',
  })
  scheduleWorkflow(
    @CurrentPrincipal() principal: Principal,
    @Args('input', { description: 'App, environment, cron expression, workflow name and arguments (plus an optional tag, time zone, overlap policy and catch-up window).' })
    input: ScheduleWorkflowInput,
  ): Promise<ScheduleResult> {
    return this.commands.execute(new ScheduleWorkflow(principal, input));
  }
}
