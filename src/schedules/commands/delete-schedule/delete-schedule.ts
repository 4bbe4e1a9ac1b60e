import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { CurrentPrincipal } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { ScheduleType } from '../../schedule.types.js';
import { ScheduleActions } from '../schedule-actions.js';
import { ScheduleRefInput } from '../schedule-fields.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'The schedule to delete.' })
export class DeleteScheduleInput extends ScheduleRefInput {}

export class DeleteSchedule {
  constructor(readonly principal: Principal, readonly input: DeleteScheduleInput) {}
}

@CommandHandler(DeleteSchedule)
export class DeleteScheduleHandler implements ICommandHandler<DeleteSchedule, ScheduleType> {
  constructor(private readonly actions: ScheduleActions) {}

  execute({ principal, input }: DeleteSchedule): Promise<ScheduleType> {
    return this.actions.apply(principal, input, 'DeleteSchedule');
  }
}

@Resolver()
export class DeleteScheduleResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => ScheduleType, { description: 'Deletes a schedule: it never fires again (deleting twice changes nothing). It stays listed with state DELETED, with its history. An unknown id is NOT_FOUND.' })
  deleteSchedule(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'App, environment and schedule id.' }) input: DeleteScheduleInput): Promise<ScheduleType> {
    return this.commands.execute(new DeleteSchedule(principal, input));
  }
}
