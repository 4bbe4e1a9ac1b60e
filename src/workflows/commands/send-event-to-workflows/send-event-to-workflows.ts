import { Inject } from '@nestjs/common';
import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { BATON_CONFIG, type BatonConfig } from '../../../config/config.js';
import { JsonArrayField, NameField } from '../../../graphql/common.types.js';
import { parseJsonArray } from '../../../shared/json.js';
import { inputLimits } from '../../../shared/limits.js';
import { CurrentPrincipal } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { SelectorActionResult } from '../../workflow.types.js';
import { SelectorActionInput } from '../selector-action.input.js';
import { SelectorActions } from '../selector-actions.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'An event (name and data) for the workflows picked by `selector`.' })
export class SendEventToWorkflowsInput extends SelectorActionInput {
  @NameField('Name of the event (not of the workflow; the workflow is picked by `selector`).')
  name: string;

  @JsonArrayField('Data of the event, as a string holding a JSON array, e.g. "[{\\"plan\\":\\"pro\\"}]".')
  data: string;
}

export class SendEventToWorkflows {
  constructor(readonly principal: Principal, readonly input: SendEventToWorkflowsInput) {}
}

@CommandHandler(SendEventToWorkflows)
export class SendEventToWorkflowsHandler implements ICommandHandler<SendEventToWorkflows, SelectorActionResult> {
  constructor(
    private readonly actions: SelectorActions,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
  ) {}

  execute({ principal, input }: SendEventToWorkflows): Promise<SelectorActionResult> {
    const data = parseJsonArray('data', input.data, inputLimits(this.config));
    return this.actions.apply(principal, input, { type: 'DeliverEvent', name: input.name, data });
  }
}

@Resolver()
export class SendEventToWorkflowsResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => SelectorActionResult, {
    nullable: true,
    description:
      'Sends an event to the workflows picked by the selector. Running and paused workflows record it (a paused one acts on it after resume, in order); terminated, completed and failed ones do not receive it. Null only together with an error (NOT_FOUND for an unknown `{ id }` selector), so that `data` still holds the field: the original service\'s client reads it there.',
  })
  sendEventToWorkflows(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'The event (name and data) and the workflows it goes to (app, environment, selector).' }) input: SendEventToWorkflowsInput): Promise<SelectorActionResult> {
    return this.commands.execute(new SendEventToWorkflows(principal, input));
  }
}
