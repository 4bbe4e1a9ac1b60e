import { Inject, Injectable } from '@nestjs/common';
import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { BATON_CONFIG, type BatonConfig } from '../../../config/config.js';
import { CommandContext, DeciderRunner } from '../../../event-store/decider-runner.js';
import { Json } from '../../../event-store/event-store.port.js';
import { AppScopedInput, JsonArrayField, NameField, OptionalTagField } from '../../../graphql/common.types.js';
import { contextFor } from '../../../shared/command-context.js';
import { uuidv7 } from '../../../shared/ids.js';
import { parseJsonArray } from '../../../shared/json.js';
import { CurrentPrincipal, assertScope } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { workflowDecider } from '../../domain/workflow.decider.js';
import { DispatchWorkflowResult } from '../../workflow.types.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'A workflow to run now.' })
export class DispatchWorkflowInput extends AppScopedInput {
  @NameField('Name of the workflow; `Name` runs the highest `Name_vN` a worker serves, `Name_vN` pins a version.')
  name: string;

  @JsonArrayField('Arguments of the workflow, as a string holding a JSON array, e.g. "[\\"ada@example.com\\"]".')
  input: string;

  @OptionalTagField('Optional tag (one per workflow, at most 256 characters), e.g. "email:ada@example.com"; `{ name, tag }` selectors reach the workflow by it.')
  tag?: string | null;
}

export interface WorkflowDispatch {
  appId: string;
  environment: string;
  name: string;
  tag: string | null;
  input: Json[];
  parent?: { workflowId: string; seq: number } | null;
  scheduleId?: string | null;
  /** A deterministic id makes a repeated dispatch (a retried schedule firing, a replayed child) a no-op. */
  workflowId?: string;
}

/** Starts workflows: from the API, from schedules, and as children of other workflows. */
@Injectable()
export class WorkflowDispatcher {
  constructor(private readonly runner: DeciderRunner) {}

  async dispatch(context: CommandContext, dispatch: WorkflowDispatch): Promise<string> {
    const workflowId = dispatch.workflowId ?? uuidv7();
    await this.runner.run(
      `workflow-${workflowId}`,
      workflowDecider,
      { type: 'DispatchWorkflow', workflowId, ...dispatch, tag: dispatch.tag, now: Date.now() },
      context,
    );
    return workflowId;
  }
}

export class DispatchWorkflow {
  constructor(readonly principal: Principal, readonly input: DispatchWorkflowInput) {}
}

@CommandHandler(DispatchWorkflow)
export class DispatchWorkflowHandler implements ICommandHandler<DispatchWorkflow, DispatchWorkflowResult> {
  constructor(
    private readonly dispatcher: WorkflowDispatcher,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
  ) {}

  async execute({ principal, input }: DispatchWorkflow): Promise<DispatchWorkflowResult> {
    assertScope(principal, input.appId, input.environment);
    const args = parseJsonArray('input', input.input, this.config.maxPayloadBytes);
    const id = await this.dispatcher.dispatch(contextFor(principal, input.appId, input.environment), {
      appId: input.appId,
      environment: input.environment,
      name: input.name,
      tag: input.tag ?? null,
      input: args,
    });
    return { id };
  }
}

@Resolver()
export class DispatchWorkflowResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => DispatchWorkflowResult, {
    description: 'Dispatches a workflow (optionally with a tag) and returns its id at once; its first decision is queued for a worker.',
  })
  dispatchWorkflow(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'The workflow to dispatch: app, environment, name, arguments and an optional tag.' }) input: DispatchWorkflowInput): Promise<DispatchWorkflowResult> {
    return this.commands.execute(new DispatchWorkflow(principal, input));
  }
}
