import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { CurrentPrincipal } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { ScheduleType } from '../../schedule.types.js';
import { ScheduleActions } from '../schedule-actions.js';
import { ScheduleRefInput } from '../schedule-fields.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'The schedule to pause.' })
export class PauseScheduleInput extends ScheduleRefInput {}

export class PauseSchedule {
  constructor(readonly principal: Principal, readonly input: PauseScheduleInput) {}
}

@CommandHandler(PauseSchedule)
export class PauseScheduleHandler implements ICommandHandler<PauseSchedule, ScheduleType> {
  constructor(private readonly actions: ScheduleActions) {}

  execute({ principal, input }: PauseSchedule): Promise<ScheduleType> {
    return this.actions.apply(principal, input, 'PauseSchedule');
  }
}

@Resolver()
export class PauseScheduleResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => ScheduleType, { description: 'Pauses a schedule: nothing fires until it is resumed (pausing a paused schedule changes nothing). An unknown id is NOT_FOUND; a deleted schedule is a CONFLICT.' })
  pauseSchedule(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'App, environment and schedule id.' }) input: PauseScheduleInput): Promise<ScheduleType> {
    return this.commands.execute(new PauseSchedule(principal, input));
  }
}
