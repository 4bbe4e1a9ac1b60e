import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { CurrentPrincipal } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { SelectorActionResult } from '../../workflow.types.js';
import { SelectorActionInput } from '../selector-action.input.js';
import { SelectorActions } from '../selector-actions.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'Pause the workflows picked by `selector`.' })
export class PauseWorkflowsInput extends SelectorActionInput {}

export class PauseWorkflows {
  constructor(readonly principal: Principal, readonly input: PauseWorkflowsInput) {}
}

@CommandHandler(PauseWorkflows)
export class PauseWorkflowsHandler implements ICommandHandler<PauseWorkflows, SelectorActionResult> {
  constructor(private readonly actions: SelectorActions) {}
  execute({ principal, input }: PauseWorkflows): Promise<SelectorActionResult> {
    return this.actions.apply(principal, input, { type: 'PauseWorkflow' });
  }
}

@Resolver()
export class PauseWorkflowsResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => SelectorActionResult, {
    nullable: true,
    description: 'Pauses running workflows picked by the selector. Tasks already dispatched keep running and their results are recorded; nothing new is dispatched until resumeWorkflows. Paused, completed, failed and terminated workflows are left as they are. Null only together with an error (NOT_FOUND for an unknown `{ id }` selector), so that `data` still holds the field: the original service\'s client reads it there.',
  })
  pauseWorkflows(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'Which workflows to pause (app, environment, selector).' }) input: PauseWorkflowsInput): Promise<SelectorActionResult> {
    return this.commands.execute(new PauseWorkflows(principal, input));
  }
}
