import { Inject } from '@nestjs/common';
import { Args, ArgsType, Field, ID, InputType, Int, Query, Resolver } from '@nestjs/graphql';
import { IsEnum, IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { EVENT_STORE, type EventStore } from '../../event-store/event-store.port.js';
import { AppScopedInput, paginate } from '../../graphql/common.types.js';
import { NotFoundError } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import { CurrentPrincipal, assertScope } from '../../tokens/principal.js';
import type { Principal } from '../../tokens/tokens.projection.js';
import { ScheduleConnection, ScheduleHistoryEvent, ScheduleStatusValue, ScheduleType, toScheduleType } from '../schedule.types.js';
import { SchedulesReadModel } from '../schedules.read-model.js';

@ArgsType()
class ScheduleArgs extends AppScopedInput {
  @Field(() => ID, { description: 'Schedule id.' })
  @IsString()
  @MaxLength(64)
  id: string;
}

@ArgsType()
class ScheduleHistoryArgs extends ScheduleArgs {
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

@InputType({ description: 'Which schedules to list.' })
export class ScheduleFilterInput extends AppScopedInput {
  @Field({ nullable: true, description: 'Only schedules of the task or workflow of this name.' })
  @IsOptional()
  @IsString()
  name?: string;

  @Field(() => ScheduleStatusValue, { nullable: true, description: 'Only schedules in this state (ACTIVE, PAUSED or DELETED).' })
  @IsOptional()
  @IsEnum(ScheduleStatusValue)
  state?: ScheduleStatusValue;
}

@ArgsType()
class SchedulesArgs {
  @Field(() => ScheduleFilterInput, { description: 'App, environment and optional name and state.' })
  filter: ScheduleFilterInput;

  @Field(() => Int, { nullable: true, description: 'Page size (default 50, at most 500).' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(500)
  first?: number;

  @Field(() => String, { nullable: true, description: 'Cursor: return schedules after this one (`pageInfo.endCursor`).' })
  @IsOptional()
  @IsString()
  after?: string;
}

@Resolver(() => ScheduleType)
export class ScheduleQueriesResolver {
  constructor(
    private readonly model: SchedulesReadModel,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  @Query(() => ScheduleType, { nullable: true, description: 'One schedule by id (null when the app has no such schedule).' })
  schedule(@CurrentPrincipal() principal: Principal, @Args() args: ScheduleArgs): ScheduleType | null {
    assertScope(principal, args.appId, args.environment);
    const view = this.model.get(args.appId, args.environment, args.id);
    return view ? toScheduleType(view, this.model) : null;
  }

  @Query(() => ScheduleConnection, { description: 'Schedules of an app and environment, oldest first, filtered and paginated.' })
  schedules(@CurrentPrincipal() principal: Principal, @Args() args: SchedulesArgs): ScheduleConnection {
    const { filter } = args;
    assertScope(principal, filter.appId, filter.environment);
    const views = this.model.list({ appId: filter.appId, environment: filter.environment, name: filter.name, status: filter.state });
    const page = paginate(views, args.first ?? 50, args.after);
    return { ...page, nodes: page.nodes.map((v) => toScheduleType(v, this.model)) };
  }

  @Query(() => [ScheduleHistoryEvent], {
    description: "Every event of a schedule's history, in order, as stored: creation, each occurrence fired, skipped or buffered, pauses, resumes, triggers, deletion.",
  })
  async scheduleHistory(@CurrentPrincipal() principal: Principal, @Args() args: ScheduleHistoryArgs): Promise<ScheduleHistoryEvent[]> {
    assertScope(principal, args.appId, args.environment);
    if (!isUuid(args.id) || !this.model.get(args.appId, args.environment, args.id)) throw new NotFoundError('schedule', args.id);
    const events = await this.store.readStream(`schedule-${args.id}`, { fromRevision: BigInt(args.fromRevision ?? 0), maxCount: args.first ?? 1000 });
    return events.map((e) => ({
      revision: Number(e.revision),
      type: e.type,
      recordedAt: e.recordedAt,
      data: JSON.stringify(e.data),
      metadata: JSON.stringify(e.metadata),
    }));
  }
}
