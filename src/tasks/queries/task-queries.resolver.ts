import { MAX_NAME_LENGTH } from '../../shared/limits.js';
import { Type } from 'class-transformer';
import { Args, ArgsType, Field, Info, InputType, Query, Resolver } from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { readWithinAnswer } from '../../graphql/answer-budget.js';
import { IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import { ReadFence } from '../../event-store/read-fence.js';
import { AppScopedIdArgs, AppScopedInput, listCursor, PageArgs } from '../../graphql/common.types.js';
import { CurrentPrincipal, assertScope } from '../../tokens/principal.js';
import type { Principal } from '../../tokens/tokens.projection.js';
import { TaskConnection, TaskState, TaskType, toTaskType } from '../task.types.js';
import { TasksReadModel } from '../tasks.read-model.js';
import { Requires } from '../../tokens/roles.js';
import { canonicalId } from '../../shared/ids.js';

@InputType({ description: 'Which tasks to list.' })
export class TaskFilterInput extends AppScopedInput {
  @Field({ nullable: true, description: 'Only tasks of this name.' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_NAME_LENGTH)
  name?: string;

  @Field(() => String, { nullable: true, description: 'Only tasks dispatched with this tag.' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_NAME_LENGTH)
  tag?: string;

  @Field(() => TaskState, { nullable: true, description: 'Only tasks in this state.' })
  @IsOptional()
  state?: TaskState;
}

@ArgsType()
class TasksArgs extends PageArgs {
  @ValidateNested()
  @Type(() => TaskFilterInput)
  @Field(() => TaskFilterInput, { description: 'App, environment and optional name, tag and state.' })
  filter: TaskFilterInput;
}

@Resolver(() => TaskType)
export class TaskQueriesResolver {
  constructor(
    private readonly readModel: TasksReadModel,
    private readonly fence: ReadFence,
  ) {}

  @Requires('read')
  @Query(() => TaskType, { nullable: true, description: 'One standalone task by id (null when the app has no such task).' })
  async task(@CurrentPrincipal() principal: Principal, @Args() args: AppScopedIdArgs, @Info() info: GraphQLResolveInfo): Promise<TaskType | null> {
    args = { ...args, id: canonicalId(args.id) };
    assertScope(principal, args.appId, args.environment);
    await this.fence.upToHead();
    return readWithinAnswer(info, () => {
      const view = this.readModel.get(args.appId, args.environment, args.id);
      return view ? toTaskType(view) : null;
    });
  }

  @Requires('read')
  @Query(() => TaskConnection, { description: 'Standalone tasks of an app and environment, oldest first.' })
  async tasks(@CurrentPrincipal() principal: Principal, @Args() args: TasksArgs, @Info() info: GraphQLResolveInfo): Promise<TaskConnection> {
    assertScope(principal, args.filter.appId, args.filter.environment);
    await this.fence.upToHead();
    return readWithinAnswer(info, () => {
      const page = this.readModel.page({ ...args.filter, status: args.filter.state }, args.first ?? 50, listCursor(args.after));
      return { ...page, nodes: page.nodes.map(toTaskType) };
    });
  }
}
