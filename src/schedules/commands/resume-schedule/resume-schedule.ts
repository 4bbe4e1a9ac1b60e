import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { CurrentPrincipal } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { ScheduleType } from '../../schedule.types.js';
import { ScheduleActions } from '../schedule-actions.js';
import { ScheduleRefInput } from '../schedule-fields.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'The schedule to resume.' })
export class ResumeScheduleInput extends ScheduleRefInput {}

export class ResumeSchedule {
  constructor(readonly principal: Principal, readonly input: ResumeScheduleInput) {}
}

@CommandHandler(ResumeSchedule)
export class ResumeScheduleHandler implements ICommandHandler<ResumeSchedule, ScheduleType> {
  constructor(private readonly actions: ScheduleActions) {}

  execute({ principal, input }: ResumeSchedule): Promise<ScheduleType> {
    return this.actions.apply(principal, input, 'ResumeSchedule');
  }
}

@Resolver()
export class ResumeScheduleResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => ScheduleType, { description: 'Resumes a paused schedule from now on: occurrences that fell while it was paused are not fired. An unknown id is NOT_FOUND; a deleted schedule is a CONFLICT.' })
  resumeSchedule(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'App, environment and schedule id.' }) input: ResumeScheduleInput): Promise<ScheduleType> {
    return this.commands.execute(new ResumeSchedule(principal, input));
  }
}
