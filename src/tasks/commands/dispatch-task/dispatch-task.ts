import { Inject, Injectable } from '@nestjs/common';
import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { BATON_CONFIG, type BatonConfig } from '../../../config/config.js';
import { CommandContext, DeciderRunner } from '../../../event-store/decider-runner.js';
import { Json } from '../../../event-store/event-store.port.js';
import { AppScopedInput, JsonArrayField, NameField } from '../../../graphql/common.types.js';
import { contextFor } from '../../../shared/command-context.js';
import { uuidv7 } from '../../../shared/ids.js';
import { parseJsonArray } from '../../../shared/json.js';
import { CurrentPrincipal, assertScope } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { taskDecider } from '../../domain/task.decider.js';
import { DispatchTaskResult } from '../../task.types.js';
import { Requires } from '../../../tokens/roles.js';

@InputType({ description: 'A task to run now.' })
export class DispatchTaskInput extends AppScopedInput {
  @NameField('Name of the task, as a worker registered it with defineTask.')
  name: string;

  @JsonArrayField('Arguments of the task, as a string holding a JSON array, e.g. "[1, 2]".')
  input: string;
}

export interface TaskDispatch {
  appId: string;
  environment: string;
  name: string;
  args: Json[];
  scheduleId?: string | null;
  parent?: { workflowId: string; seq: number } | null;
  /** A deterministic id makes a repeated dispatch a no-op. */
  taskId?: string;
}

/** Starts standalone tasks: from the API, from schedules, and from `ctx.dispatch` in workflows. */
@Injectable()
export class TaskDispatcher {
  constructor(private readonly runner: DeciderRunner) {}

  async dispatch(context: CommandContext, dispatch: TaskDispatch): Promise<string> {
    const taskId = dispatch.taskId ?? uuidv7();
    await this.runner.run(`task-${taskId}`, taskDecider, { type: 'DispatchTask', ...dispatch, taskId, now: Date.now() }, context);
    return taskId;
  }
}

export class DispatchTask {
  constructor(readonly principal: Principal, readonly input: DispatchTaskInput) {}
}

@CommandHandler(DispatchTask)
export class DispatchTaskHandler implements ICommandHandler<DispatchTask, DispatchTaskResult> {
  constructor(
    private readonly dispatcher: TaskDispatcher,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
  ) {}

  async execute({ principal, input }: DispatchTask): Promise<DispatchTaskResult> {
    assertScope(principal, input.appId, input.environment);
    const args = parseJsonArray('input', input.input, this.config.maxPayloadBytes);
    const id = await this.dispatcher.dispatch(contextFor(principal, input.appId, input.environment), {
      appId: input.appId,
      environment: input.environment,
      name: input.name,
      args,
    });
    return { id };
  }
}

@Resolver()
export class DispatchTaskResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => DispatchTaskResult, { description: 'Dispatches a task to run now and returns its id at once.' })
  dispatchTask(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'The task to dispatch: app, environment, name, arguments and an optional tag.' }) input: DispatchTaskInput): Promise<DispatchTaskResult> {
    return this.commands.execute(new DispatchTask(principal, input));
  }
}
