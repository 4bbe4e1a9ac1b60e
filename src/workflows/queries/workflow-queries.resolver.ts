import { Inject } from '@nestjs/common';
import { Args, ArgsType, Field, InputType, Query, Resolver } from '@nestjs/graphql';
import { IsOptional, IsString } from 'class-validator';
import { EVENT_STORE, type EventStore } from '../../event-store/event-store.port.js';
import { AppScopedIdArgs, AppScopedInput, HistoryArgs, PageArgs, paginate } from '../../graphql/common.types.js';
import { HistoryEvent, readHistory } from '../../graphql/history.js';
import { NotFoundError } from '../../shared/errors.js';
import { CurrentPrincipal, assertScope } from '../../tokens/principal.js';
import type { Principal } from '../../tokens/tokens.projection.js';
import { WorkflowConnection, WorkflowState, WorkflowType, toWorkflowType } from '../workflow.types.js';
import { WorkflowsReadModel } from '../workflows.read-model.js';
import { Requires } from '../../tokens/roles.js';

@InputType({ description: 'Which workflows to list.' })
export class WorkflowFilterInput extends AppScopedInput {
  @Field({ nullable: true, description: 'Only workflows of this name (a base name also matches its `Name_vN` versions).' })
  @IsOptional()
  @IsString()
  name?: string;

  @Field({ nullable: true, description: 'Only workflows with this tag.' })
  @IsOptional()
  @IsString()
  tag?: string;

  @Field(() => WorkflowState, { nullable: true, description: 'Only workflows in this state.' })
  @IsOptional()
  state?: WorkflowState;
}

@ArgsType()
class WorkflowsArgs extends PageArgs {
  @Field(() => WorkflowFilterInput, { description: 'App, environment and optional name, tag and state.' })
  filter: WorkflowFilterInput;
}

@Resolver(() => WorkflowType)
export class WorkflowQueriesResolver {
  constructor(
    private readonly readModel: WorkflowsReadModel,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  @Requires('read')
  @Query(() => WorkflowType, { nullable: true, description: 'One workflow by id (null when the app has no such workflow).' })
  workflow(@CurrentPrincipal() principal: Principal, @Args() args: AppScopedIdArgs): WorkflowType | null {
    assertScope(principal, args.appId, args.environment);
    const view = this.readModel.get(args.appId, args.environment, args.id);
    return view ? toWorkflowType(view) : null;
  }

  @Requires('read')
  @Query(() => WorkflowConnection, { description: 'Workflows of an app and environment, oldest first, filtered and paginated.' })
  workflows(@CurrentPrincipal() principal: Principal, @Args() args: WorkflowsArgs): WorkflowConnection {
    const { filter } = args;
    assertScope(principal, filter.appId, filter.environment);
    const page = paginate(this.readModel.list({ ...filter, status: filter.state }), args.first ?? 50, args.after);
    return { ...page, nodes: page.nodes.map(toWorkflowType) };
  }

  @Requires('read')
  @Query(() => [HistoryEvent], { description: 'Every event of a workflow\'s history, in order, as stored.' })
  async workflowHistory(@CurrentPrincipal() principal: Principal, @Args() args: HistoryArgs): Promise<HistoryEvent[]> {
    assertScope(principal, args.appId, args.environment);
    if (!this.readModel.get(args.appId, args.environment, args.id)) throw new NotFoundError('workflow', args.id);
    return readHistory(this.store, `workflow-${args.id}`, args);
  }
}
