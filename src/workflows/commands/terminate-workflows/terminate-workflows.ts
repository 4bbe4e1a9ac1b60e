import { Args, Field, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { CurrentPrincipal } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { SelectorActionResult } from '../../workflow.types.js';
import { SelectorActionInput } from '../selector-action.input.js';
import { SelectorActions } from '../selector-actions.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'Terminate the workflows picked by `selector`.' })
export class TerminateWorkflowsInput extends SelectorActionInput {
  @Field(() => String, { nullable: true, description: 'Why, recorded in the history (optional).' })
  @IsOptional()
  @IsString()
  @MaxLength(1024)
  reason?: string | null;
}

export class TerminateWorkflows {
  constructor(readonly principal: Principal, readonly input: TerminateWorkflowsInput) {}
}

@CommandHandler(TerminateWorkflows)
export class TerminateWorkflowsHandler implements ICommandHandler<TerminateWorkflows, SelectorActionResult> {
  constructor(private readonly actions: SelectorActions) {}
  execute({ principal, input }: TerminateWorkflows): Promise<SelectorActionResult> {
    return this.actions.apply(principal, input, { type: 'TerminateWorkflow', reason: input.reason ?? null });
  }
}

@Resolver()
export class TerminateWorkflowsResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => SelectorActionResult, {
    nullable: true,
    description:
      'Terminates running and paused workflows picked by the selector; final. Their running tasks are told to stop at their next heartbeat; late results are recorded and ignored. The child workflows they await (`ctx.workflow`) and that still run are terminated with them, down the tree; those they dispatched (`ctx.dispatch`) go on. Completed, failed and terminated workflows are left as they are. Null only together with an error (NOT_FOUND for an unknown `{ id }` selector), so that `data` still holds the field: the original service\'s client reads it there.',
  })
  terminateWorkflows(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'Which workflows to terminate (app, environment, selector) and, optionally, why.' }) input: TerminateWorkflowsInput): Promise<SelectorActionResult> {
    return this.commands.execute(new TerminateWorkflows(principal, input));
  }
}
