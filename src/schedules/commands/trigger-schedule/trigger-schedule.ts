import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { CurrentPrincipal } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { TriggerScheduleResult } from '../../schedule.types.js';
import { ScheduleActions } from '../schedule-actions.js';
import { ScheduleRefInput } from '../schedule-fields.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'The schedule to fire now.' })
export class TriggerScheduleInput extends ScheduleRefInput {}

export class TriggerSchedule {
  constructor(readonly principal: Principal, readonly input: TriggerScheduleInput) {}
}

@CommandHandler(TriggerSchedule)
export class TriggerScheduleHandler implements ICommandHandler<TriggerSchedule, TriggerScheduleResult> {
  constructor(private readonly actions: ScheduleActions) {}

  execute({ principal, input }: TriggerSchedule): Promise<TriggerScheduleResult> {
    return this.actions.trigger(principal, input);
  }
}

@Resolver()
export class TriggerScheduleResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => TriggerScheduleResult, {
    description:
      'Fires a schedule now, outside its cron expression: dispatches its task or workflow once (whatever the overlap policy, and also while paused) and returns the dispatched id. The cron occurrences are not affected. An unknown id is NOT_FOUND; a deleted schedule is a CONFLICT.',
  })
  triggerSchedule(
    @CurrentPrincipal() principal: Principal,
    @Args('input', { description: 'App, environment and schedule id.' }) input: TriggerScheduleInput,
  ): Promise<TriggerScheduleResult> {
    return this.commands.execute(new TriggerSchedule(principal, input));
  }
}
