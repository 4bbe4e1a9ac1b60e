import { Inject, Injectable } from '@nestjs/common';
import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { BATON_CONFIG, type BatonConfig } from '../../../config/config.js';
import { CommandContext, DeciderRunner } from '../../../event-store/decider-runner.js';
import { EVENT_STORE, type EventStore, Json } from '../../../event-store/event-store.port.js';
import { AppScopedInput, JsonArrayField, NameField, OptionalTagField } from '../../../graphql/common.types.js';
import { IdempotencyKeyField, IdempotencyKeyHeader, idempotencyKeyOf } from '../../../graphql/idempotency-key.js';
import { dispatchOnce, firstDispatch } from '../../../shared/idempotency.js';
import { contextFor } from '../../../shared/command-context.js';
import { uuidv7 } from '../../../shared/ids.js';
import { parseJsonArray } from '../../../shared/json.js';
import { inputLimits } from '../../../shared/limits.js';
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

  @OptionalTagField('Optional tag (at most 256 characters), e.g. "invoice:42": recorded on the task, shown as `Task.tag`, and a filter of the `tasks` query.')
  tag?: string | null;

  @IdempotencyKeyField('task')
  idempotencyKey?: string | null;
}

export interface TaskDispatch {
  appId: string;
  environment: string;
  name: string;
  args: Json[];
  tag?: string | null;
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
    return (await this.tryDispatch(context, dispatch)).id;
  }

  /** Dispatches; `created` is false when a task with that id already existed (nothing changed). */
  async tryDispatch(context: CommandContext, dispatch: TaskDispatch): Promise<{ id: string; created: boolean }> {
    const taskId = dispatch.taskId ?? uuidv7();
    const { events } = await this.runner.run(`task-${taskId}`, taskDecider, { type: 'DispatchTask', ...dispatch, taskId, now: Date.now() }, context, { likelyNew: true });
    return { id: taskId, created: events.length > 0 };
  }
}

export class DispatchTask {
  constructor(
    readonly principal: Principal,
    readonly input: DispatchTaskInput,
    /** The Idempotency-Key header, if any. */
    readonly idempotencyHeader: string | null = null,
  ) {}
}

@CommandHandler(DispatchTask)
export class DispatchTaskHandler implements ICommandHandler<DispatchTask, DispatchTaskResult> {
  constructor(
    private readonly dispatcher: TaskDispatcher,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  async execute({ principal, input, idempotencyHeader }: DispatchTask): Promise<DispatchTaskResult> {
    assertScope(principal, input.appId, input.environment);
    const args = parseJsonArray('input', input.input, inputLimits(this.config));
    const key = idempotencyKeyOf(input.idempotencyKey, idempotencyHeader);
    const context = contextFor(principal, input.appId, input.environment);
    const dispatch = (taskId?: string) =>
      this.dispatcher.tryDispatch(context, { appId: input.appId, environment: input.environment, name: input.name, args, tag: input.tag ?? null, taskId });
    if (key === null) return { id: (await dispatch()).id };
    const { id } = await dispatchOnce({
      scope: { kind: 'task', appId: input.appId, environment: input.environment, key },
      name: input.name,
      now: Date.now(),
      windowMs: this.config.idempotencyWindowMs,
      read: (taskId) => firstDispatch(this.store, `task-${taskId}`),
      deleted: async (taskId) => (await this.store.wasDeleted?.(`task-${taskId}`)) ?? false,
      dispatch: async (taskId) => (await dispatch(taskId)).created,
    });
    return { id };
  }
}

@Resolver()
export class DispatchTaskResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => DispatchTaskResult, { description: 'Dispatches a task to run now and returns its id at once.' })
  dispatchTask(
    @CurrentPrincipal() principal: Principal,
    @Args('input', { description: 'The task to dispatch: app, environment, name, arguments and an optional tag and idempotency key.' }) input: DispatchTaskInput,
    @IdempotencyKeyHeader() idempotencyHeader: string | null,
  ): Promise<DispatchTaskResult> {
    return this.commands.execute(new DispatchTask(principal, input, idempotencyHeader));
  }
}
