import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { CurrentPrincipal } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { SelectorActionResult } from '../../workflow.types.js';
import { SelectorActionInput } from '../selector-action.input.js';
import { SelectorActions } from '../selector-actions.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'Resume the workflows picked by `selector`.' })
export class ResumeWorkflowsInput extends SelectorActionInput {}

export class ResumeWorkflows {
  constructor(readonly principal: Principal, readonly input: ResumeWorkflowsInput) {}
}

@CommandHandler(ResumeWorkflows)
export class ResumeWorkflowsHandler implements ICommandHandler<ResumeWorkflows, SelectorActionResult> {
  constructor(private readonly actions: SelectorActions) {}
  execute({ principal, input }: ResumeWorkflows): Promise<SelectorActionResult> {
    return this.actions.apply(principal, input, { type: 'ResumeWorkflow' });
  }
}

@Resolver()
export class ResumeWorkflowsResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => SelectorActionResult, {
    nullable: true,
    description: 'Resumes paused workflows picked by the selector; everything recorded while paused (task results, timers, events) is then acted on, in order. Running and final workflows are left as they are. Null only together with an error (NOT_FOUND for an unknown `{ id }` selector), so that `data` still holds the field: the original service\'s client reads it there.',
  })
  resumeWorkflows(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'Which workflows to resume (app, environment, selector).' }) input: ResumeWorkflowsInput): Promise<SelectorActionResult> {
    return this.commands.execute(new ResumeWorkflows(principal, input));
  }
}
