import { Inject } from '@nestjs/common';
import { Args, ArgsType, Field, ID, InputType, Int, Query, Resolver } from '@nestjs/graphql';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { EVENT_STORE, type EventStore } from '../../event-store/event-store.port.js';
import { AppScopedInput } from '../../graphql/common.types.js';
import { paginate } from '../../graphql/common.types.js';
import { NotFoundError } from '../../shared/errors.js';
import { CurrentPrincipal, assertScope } from '../../tokens/principal.js';
import type { Principal } from '../../tokens/tokens.projection.js';
import { HistoryEvent, WorkflowConnection, WorkflowState, WorkflowType, toWorkflowType } from '../workflow.types.js';
import { WorkflowsReadModel } from '../workflows.read-model.js';

@ArgsType()
class WorkflowArgs extends AppScopedInput {
  @Field(() => ID, { description: 'Workflow id.' })
  @IsString()
  @MaxLength(64)
  id: string;
}

@ArgsType()
class WorkflowHistoryArgs extends WorkflowArgs {
  @Field(() => Int, { nullable: true, description: 'First revision to return (default 0).' })
  @IsOptional()
  @IsInt()
  @Min(0)
  fromRevision?: number;

  @Field(() => Int, { nullable: true, description: 'Most events to return (default 1000, at most 10000).' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000)
  first?: number;
}

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
class WorkflowsArgs {
  @Field(() => WorkflowFilterInput, { description: 'App, environment and optional name, tag and state.' })
  filter: WorkflowFilterInput;

  @Field(() => Int, { nullable: true, description: 'Page size (default 50, at most 500).' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(500)
  first?: number;

  @Field(() => String, { nullable: true, description: 'Cursor: return workflows after this one (`pageInfo.endCursor`).' })
  @IsOptional()
  @IsString()
  after?: string;
}

@Resolver(() => WorkflowType)
export class WorkflowQueriesResolver {
  constructor(
    private readonly readModel: WorkflowsReadModel,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  @Query(() => WorkflowType, { nullable: true, description: 'One workflow by id (null when the app has no such workflow).' })
  workflow(@CurrentPrincipal() principal: Principal, @Args() args: WorkflowArgs): WorkflowType | null {
    assertScope(principal, args.appId, args.environment);
    const view = this.readModel.get(args.appId, args.environment, args.id);
    return view ? toWorkflowType(view) : null;
  }

  @Query(() => WorkflowConnection, { description: 'Workflows of an app and environment, oldest first, filtered and paginated.' })
  workflows(@CurrentPrincipal() principal: Principal, @Args() args: WorkflowsArgs): WorkflowConnection {
    const { filter } = args;
    assertScope(principal, filter.appId, filter.environment);
    const page = paginate(this.readModel.list({ ...filter, status: filter.state }), args.first ?? 50, args.after);
    return { ...page, nodes: page.nodes.map(toWorkflowType) };
  }

  @Query(() => [HistoryEvent], { description: 'Every event of a workflow\'s history, in order, as stored.' })
  async workflowHistory(@CurrentPrincipal() principal: Principal, @Args() args: WorkflowHistoryArgs): Promise<HistoryEvent[]> {
    assertScope(principal, args.appId, args.environment);
    if (!this.readModel.get(args.appId, args.environment, args.id)) throw new NotFoundError('workflow', args.id);
    const events = await this.store.readStream(`workflow-${args.id}`, {
      fromRevision: BigInt(args.fromRevision ?? 0),
      maxCount: args.first ?? 1000,
    });
    return events.map((e) => ({
      revision: Number(e.revision),
      type: e.type,
      recordedAt: e.recordedAt,
      data: JSON.stringify(e.data),
      metadata: JSON.stringify(e.metadata),
    }));
  }
}
