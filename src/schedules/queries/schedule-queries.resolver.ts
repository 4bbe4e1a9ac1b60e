import { MAX_NAME_LENGTH } from '../../shared/limits.js';
import { Type } from 'class-transformer';
import { Inject } from '@nestjs/common';
import { Args, ArgsType, Field, Info, InputType, Int, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { readWithinAnswer } from '../../graphql/answer-budget.js';
import { IsEnum, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import { EVENT_STORE, type EventStore } from '../../event-store/event-store.port.js';
import { AppScopedIdArgs, AppScopedInput, HistoryArgs, listCursor, PageArgs } from '../../graphql/common.types.js';
import { HistoryEvent, historyLength, readHistory } from '../../graphql/history.js';
import { BadUserInputError, NotFoundError } from '../../shared/errors.js';
import { localIso, nextOccurrences } from '../domain/cron.js';
import { canonicalId, isUuid } from '../../shared/ids.js';
import { CurrentPrincipal, assertScope } from '../../tokens/principal.js';
import type { Principal } from '../../tokens/tokens.projection.js';
import { SCHEDULE_CRON, ScheduleConnection, ScheduleFiring, ScheduleStatusValue, ScheduleType, toScheduleType } from '../schedule.types.js';
import { ReadFence } from '../../event-store/read-fence.js';
import { SchedulesReadModel, SchedulesTable } from '../schedules.read-model.js';
import { Requires } from '../../tokens/roles.js';

@InputType({ description: 'Which schedules to list.' })
export class ScheduleFilterInput extends AppScopedInput {
  @Field({ nullable: true, description: 'Only schedules of the task or workflow of this name.' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_NAME_LENGTH)
  name?: string;

  @Field(() => ScheduleStatusValue, { nullable: true, description: 'Only schedules in this state (ACTIVE, PAUSED or DELETED).' })
  @IsOptional()
  @IsEnum(ScheduleStatusValue)
  state?: ScheduleStatusValue;
}

@ArgsType()
class SchedulesArgs extends PageArgs {
  @ValidateNested()
  @Type(() => ScheduleFilterInput)
  @Field(() => ScheduleFilterInput, { description: 'App, environment and optional name and state.' })
  filter: ScheduleFilterInput;
}

@Resolver(() => ScheduleType)
export class ScheduleQueriesResolver {
  constructor(
    private readonly model: SchedulesReadModel,
    private readonly table: SchedulesTable,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly fence: ReadFence,
  ) {}

  @Requires('read')
  @Query(() => ScheduleType, { nullable: true, description: 'One schedule by id (null when the app has no such schedule).' })
  async schedule(@CurrentPrincipal() principal: Principal, @Args() args: AppScopedIdArgs, @Info() info: GraphQLResolveInfo): Promise<ScheduleType | null> {
    args = { ...args, id: canonicalId(args.id) };
    assertScope(principal, args.appId, args.environment);
    await this.fence.upToHead();
    return readWithinAnswer(info, () => {
      const view = this.table.get(args.appId, args.environment, args.id);
      return view ? toScheduleType(view, this.model) : null;
    });
  }

  @Requires('read')
  @Query(() => ScheduleConnection, { description: 'Schedules of an app and environment, oldest first, filtered and paginated.' })
  async schedules(@CurrentPrincipal() principal: Principal, @Args() args: SchedulesArgs, @Info() info: GraphQLResolveInfo): Promise<ScheduleConnection> {
    const { filter } = args;
    assertScope(principal, filter.appId, filter.environment);
    await this.fence.upToHead();
    return readWithinAnswer(info, () => {
      const page = this.table.page({ appId: filter.appId, environment: filter.environment, name: filter.name, status: filter.state }, args.first ?? 50, listCursor(args.after));
      return { ...page, nodes: page.nodes.map((v) => toScheduleType(v, this.model)) };
    });
  }

  @ResolveField(() => [ScheduleFiring], {
    description:
      'The next `count` occurrences the schedule will fire at, from `nextFireAt` on, each also as wall-clock time in its time zone (daylight saving rules applied). Empty when paused or deleted; fewer when the expression stops firing (a year field).',
  })
  nextFirings(
    @Parent() schedule: ScheduleType,
    @Args('count', { type: () => Int, defaultValue: 5, description: 'How many occurrences, 1 to 100 (default 5).' }) count: number,
  ): ScheduleFiring[] {
    if (!Number.isInteger(count) || count < 1 || count > 100) throw new BadUserInputError('count', 'must be between 1 and 100');
    const cron = schedule[SCHEDULE_CRON];
    if (!cron || schedule.nextFireAt === null) return [];
    const first = schedule.nextFireAt.getTime();
    return [first, ...nextOccurrences(cron, first, count - 1)].map((at) => ({ at: new Date(at), local: localIso(cron.timezone, at) }));
  }

  @Requires('read')
  @Query(() => [HistoryEvent], {
    description: "Every event of a schedule's history, in order, as stored: creation, each occurrence fired, skipped or buffered, pauses, resumes, triggers, deletion.",
  })
  async scheduleHistory(@CurrentPrincipal() principal: Principal, @Args() args: HistoryArgs, @Info() info: GraphQLResolveInfo): Promise<HistoryEvent[]> {
    args = { ...args, id: canonicalId(args.id) };
    assertScope(principal, args.appId, args.environment);
    await this.fence.upToHead();
    if (!isUuid(args.id) || !this.table.get(args.appId, args.environment, args.id)) throw new NotFoundError('schedule', args.id);
    return readHistory(this.store, `schedule-${args.id}`, args, info);
  }

  @ResolveField(() => Int, {
    description: 'How many events its history holds (the next revision): `scheduleHistory` pages show how much of it they hold. One read of the store per schedule answered.',
  })
  historyLength(@Parent() schedule: ScheduleType): Promise<number> {
    return historyLength(this.store, `schedule-${schedule.id}`);
  }
}
