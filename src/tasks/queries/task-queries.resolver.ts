import { Args, ArgsType, Field, InputType, Query, Resolver } from '@nestjs/graphql';
import { IsOptional, IsString } from 'class-validator';
import { AppScopedIdArgs, AppScopedInput, PageArgs, paginate } from '../../graphql/common.types.js';
import { CurrentPrincipal, assertScope } from '../../tokens/principal.js';
import type { Principal } from '../../tokens/tokens.projection.js';
import { TaskConnection, TaskState, TaskType, toTaskType } from '../task.types.js';
import { TasksReadModel } from '../tasks.read-model.js';
import { Requires } from '../../tokens/roles.js';

@InputType({ description: 'Which tasks to list.' })
export class TaskFilterInput extends AppScopedInput {
  @Field({ nullable: true, description: 'Only tasks of this name.' })
  @IsOptional()
  @IsString()
  name?: string;

  @Field(() => TaskState, { nullable: true, description: 'Only tasks in this state.' })
  @IsOptional()
  state?: TaskState;
}

@ArgsType()
class TasksArgs extends PageArgs {
  @Field(() => TaskFilterInput, { description: 'App, environment and optional name and state.' })
  filter: TaskFilterInput;
}

@Resolver(() => TaskType)
export class TaskQueriesResolver {
  constructor(private readonly readModel: TasksReadModel) {}

  @Requires('read')
  @Query(() => TaskType, { nullable: true, description: 'One standalone task by id (null when the app has no such task).' })
  task(@CurrentPrincipal() principal: Principal, @Args() args: AppScopedIdArgs): TaskType | null {
    assertScope(principal, args.appId, args.environment);
    const view = this.readModel.get(args.appId, args.environment, args.id);
    return view ? toTaskType(view) : null;
  }

  @Requires('read')
  @Query(() => TaskConnection, { description: 'Standalone tasks of an app and environment, oldest first.' })
  tasks(@CurrentPrincipal() principal: Principal, @Args() args: TasksArgs): TaskConnection {
    assertScope(principal, args.filter.appId, args.filter.environment);
    const page = paginate(this.readModel.list({ ...args.filter, status: args.filter.state }), args.first ?? 50, args.after);
    return { ...page, nodes: page.nodes.map(toTaskType) };
  }
}
