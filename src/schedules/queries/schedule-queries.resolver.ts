import { Inject } from '@nestjs/common';
import { Args, ArgsType, Field, InputType, Int, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { IsEnum, IsOptional, IsString } from 'class-validator';
import { compileCron, nextOccurrence } from '../domain/cron.js';
import { EVENT_STORE, type EventStore } from '../../event-store/event-store.port.js';
import { AppScopedIdArgs, AppScopedInput, HistoryArgs, PageArgs, paginate } from '../../graphql/common.types.js';
import { HistoryEvent, readHistory } from '../../graphql/history.js';
import { NotFoundError } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import { CurrentPrincipal, assertScope } from '../../tokens/principal.js';
import type { Principal } from '../../tokens/tokens.projection.js';
import { ScheduleConnection, ScheduleStatusValue, ScheduleType, toScheduleType } from '../schedule.types.js';
import { SchedulesReadModel } from '../schedules.read-model.js';
import { Requires } from '../../tokens/roles.js';

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
class SchedulesArgs extends PageArgs {
  @Field(() => ScheduleFilterInput, { description: 'App, environment and optional name and state.' })
  filter: ScheduleFilterInput;
}

@Resolver(() => ScheduleType)
export class ScheduleQueriesResolver {
  constructor(
    private readonly model: SchedulesReadModel,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  @Requires('read')
  @Query(() => ScheduleType, { nullable: true, description: 'One schedule by id (null when the app has no such schedule).' })
  schedule(@CurrentPrincipal() principal: Principal, @Args() args: AppScopedIdArgs): ScheduleType | null {
    assertScope(principal, args.appId, args.environment);
    const view = this.model.get(args.appId, args.environment, args.id);
    return view ? toScheduleType(view, this.model) : null;
  }

  @Requires('read')
  @Query(() => ScheduleConnection, { description: 'Schedules of an app and environment, oldest first, filtered and paginated.' })
  schedules(@CurrentPrincipal() principal: Principal, @Args() args: SchedulesArgs): ScheduleConnection {
    const { filter } = args;
    assertScope(principal, filter.appId, filter.environment);
    const views = this.model.list({ appId: filter.appId, environment: filter.environment, name: filter.name, status: filter.state });
    const page = paginate(views, args.first ?? 50, args.after);
    return { ...page, nodes: page.nodes.map((v) => toScheduleType(v, this.model)) };
  }

  @ResolveField(() => [Date], { description: 'The next occurrences of the cron expression in its time zone, from now (empty when the schedule is not ACTIVE).' })
  upcomingFirings(
    @Parent() schedule: ScheduleType,
    @Args('count', { type: () => Int, nullable: true, description: 'How many (default 5, at most 50).' }) count?: number,
  ): Date[] {
    if (schedule.state !== ScheduleStatusValue.ACTIVE) return [];
    const compiled = compileCron(schedule.cron, schedule.timezone);
    const firings: Date[] = [];
    let after = Date.now();
    for (let i = 0; i < Math.min(Math.max(count ?? 5, 1), 50); i++) {
      const next = nextOccurrence(compiled, after);
      if (next === null) break;
      firings.push(new Date(next));
      after = next;
    }
    return firings;
  }

  @Requires('read')
  @Query(() => [HistoryEvent], {
    description: "Every event of a schedule's history, in order, as stored: creation, each occurrence fired, skipped or buffered, pauses, resumes, triggers, deletion.",
  })
  async scheduleHistory(@CurrentPrincipal() principal: Principal, @Args() args: HistoryArgs): Promise<HistoryEvent[]> {
    assertScope(principal, args.appId, args.environment);
    if (!isUuid(args.id) || !this.model.get(args.appId, args.environment, args.id)) throw new NotFoundError('schedule', args.id);
    return readHistory(this.store, `schedule-${args.id}`, args);
  }
}
