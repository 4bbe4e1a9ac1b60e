import { Inject } from '@nestjs/common';
import { Args, Field, ID, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { IsString, MaxLength } from 'class-validator';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { DeciderRunner } from '../../../event-store/decider-runner.js';
import { ReadFence } from '../../../event-store/read-fence.js';
import { AppScopedInput } from '../../../graphql/common.types.js';
import { CLOCK, type Clock } from '../../../shared/clock.js';
import { contextFor } from '../../../shared/command-context.js';
import { NotFoundError } from '../../../shared/errors.js';
import { canonicalId, isUuid } from '../../../shared/ids.js';
import { CurrentPrincipal, assertScope } from '../../../tokens/principal.js';
import { Requires } from '../../../tokens/roles.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { taskDecider } from '../../domain/task.decider.js';
import { TaskType, toTaskType } from '../../task.types.js';
import { TasksReadModel } from '../../tasks.read-model.js';

@InputType({ description: 'The failed standalone task to run again.' })
export class RetryTaskInput extends AppScopedInput {
  @Field(() => ID, { description: 'Id of the failed task (dispatchTask returned it).' })
  @IsString()
  @MaxLength(64)
  id: string;
}

export class RetryTask {
  constructor(readonly principal: Principal, readonly input: RetryTaskInput) {}
}

@CommandHandler(RetryTask)
export class RetryTaskHandler implements ICommandHandler<RetryTask, TaskType> {
  constructor(
    private readonly runner: DeciderRunner,
    private readonly tasks: TasksReadModel,
    private readonly fence: ReadFence,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ principal, input: given }: RetryTask): Promise<TaskType> {
    const input = { ...given, id: canonicalId(given.id) };
    assertScope(principal, input.appId, input.environment);
    if (!isUuid(input.id)) throw new NotFoundError('task', input.id);
    // A task dispatched through another instance is known once the read models reach the head.
    await this.fence.upToHead();
    if (!this.tasks.get(input.appId, input.environment, input.id)) throw new NotFoundError('task', input.id);
    await this.runner.run(`task-${input.id}`, taskDecider, { type: 'RetryTask', now: this.clock.now() }, contextFor(principal, input.appId, input.environment));
    return toTaskType(this.tasks.get(input.appId, input.environment, input.id)!);
  }
}

@Resolver()
export class RetryTaskResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => TaskType, {
    description:
      'Runs a FAILED standalone task again: a fresh round of attempts under the retry policy its worker declares (`TaskRetried` in its history, with the token as actor). An unknown id is NOT_FOUND; a task that is not FAILED is a CONFLICT.',
  })
  retryTask(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'App, environment and the id of the failed task.' }) input: RetryTaskInput): Promise<TaskType> {
    return this.commands.execute(new RetryTask(principal, input));
  }
}
