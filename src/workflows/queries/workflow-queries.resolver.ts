import { MAX_ID_LENGTH, MAX_NAME_LENGTH } from '../../shared/limits.js';
import { Type } from 'class-transformer';
import { Inject } from '@nestjs/common';
import { Args, ArgsType, Field, ID, Info, InputType, Int, ObjectType, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { IsBoolean, IsDate, IsInt, IsOptional, IsString, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { EVENT_STORE, type EventStore } from '../../event-store/event-store.port.js';
import { ReadFence } from '../../event-store/read-fence.js';
import { AppScopedIdArgs, AppScopedInput, HistoryArgs, listCursor, PageArgs } from '../../graphql/common.types.js';
import { QUERY_COUNT_CAP } from '../../event-store/read-model-db.js';
import { readWithinAnswer } from '../../graphql/answer-budget.js';
import { HistoryEvent, historyLength, readHistory } from '../../graphql/history.js';
import { NotFoundError, TooManyAwaitsError, UnauthenticatedError } from '../../shared/errors.js';
import { PerTokenCounter } from '../../shared/per-token-counter.js';
import { BATON_CONFIG, type BatonConfig } from '../../config/config.js';
import { CurrentPrincipal, assertScope } from '../../tokens/principal.js';
import { type Principal, TokensReadModel } from '../../tokens/tokens.projection.js';
import { WorkflowConnection, WorkflowState, WorkflowType, toWorkflowType } from '../workflow.types.js';
import { WorkflowsReadModel } from '../workflows.read-model.js';
import { FINAL_STATUSES } from '../domain/workflow.decider.js';
import { Requires } from '../../tokens/roles.js';
import { WorkflowEndings } from './workflow-endings.js';
import { LifecycleService } from '../../health/lifecycle.service.js';
import { canonicalId, isUuid } from '../../shared/ids.js';
import { CHILD_CREATION_WAIT_MS, PendingChildren, scopeOf } from '../pending-children.js';

/** How often a waiting `awaitWorkflow` looks at its workflow again even when nothing woke it. */
const AWAIT_RECHECK_MS = 5_000;

@InputType({ description: 'Which workflows to list.' })
export class WorkflowFilterInput extends AppScopedInput {
  @Field({ nullable: true, description: 'Only workflows of this name (a base name also matches its `Name_vN` versions).' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_NAME_LENGTH)
  name?: string;

  @Field({ nullable: true, description: 'Only workflows with this tag.' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_NAME_LENGTH)
  tag?: string;

  @Field(() => WorkflowState, { nullable: true, description: 'Only workflows in this state.' })
  @IsOptional()
  state?: WorkflowState;

  @Field(() => ID, { nullable: true, description: 'Only the children of this workflow.' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_ID_LENGTH)
  parentId?: string;

  @Field(() => ID, { nullable: true, description: 'Only workflows this schedule dispatched.' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_ID_LENGTH)
  scheduleId?: string;

  @Field(() => Date, { nullable: true, description: 'Only workflows dispatched at or after this time.' })
  @IsOptional()
  @IsDate()
  createdAfter?: Date;

  @Field(() => Date, { nullable: true, description: 'Only workflows dispatched before this time.' })
  @IsOptional()
  @IsDate()
  createdBefore?: Date;
}

@ArgsType()
class WorkflowsArgs extends PageArgs {
  @ValidateNested()
  @Type(() => WorkflowFilterInput)
  @Field(() => WorkflowFilterInput, { description: 'App, environment and optional name, tag, state, parent, schedule and time range.' })
  filter: WorkflowFilterInput;

  @Field({ nullable: true, description: 'Newest first instead of oldest first (default false).' })
  @IsOptional()
  @IsBoolean()
  newestFirst?: boolean;
}

@ArgsType()
class WorkflowCountsArgs {
  @ValidateNested()
  @Type(() => WorkflowFilterInput)
  @Field(() => WorkflowFilterInput, { description: 'The workflows to count (their `state` filter is ignored: every state is counted).' })
  filter: WorkflowFilterInput;
}

@ArgsType()
class WorkflowActivityArgs extends AppScopedInput {
  @Field(() => Int, { nullable: true, description: 'How many minutes back, up to now (default 60, at most 1440).' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1440)
  minutes?: number;
}

@ObjectType('WorkflowStateCount', { description: 'How many workflows are in one state.' })
export class WorkflowStateCount {
  @Field(() => WorkflowState, { description: 'The state.' })
  state: WorkflowState;
  @Field(() => Int, { description: `How many workflows of the filter are in it, counted up to ${QUERY_COUNT_CAP.toLocaleString('en')} (see \`capped\`).` })
  count: number;
  @Field({ description: `True when more than ${QUERY_COUNT_CAP.toLocaleString('en')} are: \`count\` is then ${QUERY_COUNT_CAP.toLocaleString('en')}, a lower bound.` })
  capped: boolean;
}

@ObjectType('WorkflowActivityBucket', { description: 'Workflows started, completed and failed in one minute.' })
export class WorkflowActivityBucket {
  @Field({ description: 'Start of the minute.' })
  at: Date;
  @Field(() => Int, { description: 'Workflows dispatched in that minute.' })
  started: number;
  @Field(() => Int, { description: 'Workflows that completed in that minute.' })
  completed: number;
  @Field(() => Int, { description: 'Workflows that failed in that minute (one retried since still counts: the minute keeps what happened in it).' })
  failed: number;
}

@ArgsType()
class AwaitWorkflowArgs extends AppScopedIdArgs {
  @Field(() => Int, { nullable: true, description: 'Longest wait, in milliseconds (default 20000, at most 60000).' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(60_000)
  waitMs?: number;
}

/** A filter's workflow and schedule ids as the API reads every id: a UUID in either case. */
const withCanonicalIds = <F extends { parentId?: string | null; scheduleId?: string | null }>(filter: F): F => ({
  ...filter,
  parentId: filter.parentId == null ? filter.parentId : canonicalId(filter.parentId),
  scheduleId: filter.scheduleId == null ? filter.scheduleId : canonicalId(filter.scheduleId),
});

@Resolver(() => WorkflowType)
export class WorkflowQueriesResolver {
  /** awaitWorkflow polls waiting right now, per token (MAX_AWAITS_PER_TOKEN), each alias one. */
  private readonly awaiting: PerTokenCounter;

  constructor(
    private readonly readModel: WorkflowsReadModel,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly fence: ReadFence,
    private readonly endings: WorkflowEndings,
    @Inject(BATON_CONFIG) config: BatonConfig,
    private readonly lifecycle: LifecycleService,
    private readonly tokens: TokensReadModel,
    private readonly children: PendingChildren,
  ) {
    this.awaiting = new PerTokenCounter(config.maxAwaitsPerToken);
  }

  @Requires('read')
  @Query(() => WorkflowType, {
    nullable: true,
    description:
      'One workflow by id (null when the app has no such workflow; a child workflow its parent already recorded, that the service is still creating, is waited for, up to 10 s).',
  })
  async workflow(@CurrentPrincipal() principal: Principal, @Args() args: AppScopedIdArgs, @Info() info: GraphQLResolveInfo): Promise<WorkflowType | null> {
    args = { ...args, id: canonicalId(args.id) };
    assertScope(principal, args.appId, args.environment);
    const at = await this.fence.upToHead();
    const read = () =>
      readWithinAnswer(info, () => {
        const view = this.readModel.get(args.appId, args.environment, args.id);
        return view ? toWorkflowType(view) : null;
      });
    const found = await read();
    return found || !(await this.childCreated(principal, args, at)) ? found : read();
  }

  /**
   * After a miss at position `at`: when `id` is a child its parent recorded (its id is in the
   * parent's history, and `ctx.dispatch` answered it to the code, which may have handed it on)
   * that this instance's effects reactor has still to create, waits for its creation, up to
   * CHILD_CREATION_WAIT_MS, as an `{ id }` action does (SelectorActions.selectId), then brings the
   * read models up to the head again. True when it waited (read the workflow again). A found
   * workflow never comes here: the wait costs only misses.
   */
  private async childCreated(principal: Principal, args: { appId: string; environment: string; id: string }, at: bigint): Promise<boolean> {
    const { appId, environment, id } = args;
    if (!isUuid(id) || !(await this.children.waitFor(id, at, CHILD_CREATION_WAIT_MS, scopeOf(appId, environment)))) return false;
    // A token revoked while this lookup waited is answered as a new request of it would be, as a
    // parked awaitWorkflow is (found in review: the child was answered to the revoked token).
    if (!this.tokens.isActive(principal.tokenId)) throw new UnauthenticatedError('unknown or revoked API token');
    await this.fence.upToHead();
    return true;
  }

  @Requires('read')
  @Query(() => WorkflowType, {
    nullable: true,
    description:
      'Waits (long poll) until the workflow is COMPLETED, FAILED or TERMINATED, or `waitMs` passes, then answers it as it is (null when the app has no such workflow; a child workflow its parent already recorded, that the service is still creating, is waited for first, up to 10 s). `client.dispatchWorkflow(...).result()` calls it in a loop.',
  })
  async awaitWorkflow(@CurrentPrincipal() principal: Principal, @Args() args: AwaitWorkflowArgs, @Info() info: GraphQLResolveInfo): Promise<WorkflowType | null> {
    args = { ...args, id: canonicalId(args.id) };
    assertScope(principal, args.appId, args.environment);
    const deadline = Date.now() + (args.waitMs ?? 20_000);
    // An await that arrives while the instance drains waits until it closes (answered at once, the
    // client asked again at once, on the same connection, for the whole SHUTDOWN_DELAY_MS).
    const lateForDrain = this.lifecycle.draining;
    // A slot is taken only by a poll that waits: one answered at once (ended, unknown, waitMs 0) needs none.
    let holding = false;
    try {
      for (let first = true; ; first = false) {
        const watch = this.endings.watch(args.id);
        try {
          const at = await this.fence.upToHead();
          let view = this.readModel.get(args.appId, args.environment, args.id);
          // Unknown at first: a child its parent recorded and the effects reactor has still to create?
          if (!view && first && (await this.childCreated(principal, args, at))) view = this.readModel.get(args.appId, args.environment, args.id);
          const remaining = deadline - Date.now();
          // A draining instance (SIGTERM) answers at once, as when the wait ends: the client asks
          // again, elsewhere, instead of holding the shutdown up to its 60 s.
          if (!view || FINAL_STATUSES.has(view.status) || remaining <= 0 || (this.lifecycle.draining && !lateForDrain) || this.lifecycle.closeSignal.aborted) {
            // A token revoked while this wait was parked is answered as a new request of it would be.
            if (holding && !this.tokens.isActive(principal.tokenId)) throw new UnauthenticatedError('unknown or revoked API token');
            return readWithinAnswer(info, () => {
              const latest = this.readModel.get(args.appId, args.environment, args.id);
              return latest ? toWorkflowType(latest) : null;
            });
          }
          if (!holding) holding = this.takeAwaitSlot(principal.tokenId);
          // Woken when this workflow ends (whichever instance recorded it), and looked at again every
          // AWAIT_RECHECK_MS all the same, at the latest when the wait ends.
          const drain = lateForDrain ? this.lifecycle.closeSignal : this.lifecycle.drainSignal;
          await new Promise<void>((resolve) => {
            const wake = () => {
              clearTimeout(timer);
              drain.removeEventListener('abort', wake);
              resolve();
            };
            const timer = setTimeout(wake, Math.min(remaining, AWAIT_RECHECK_MS));
            drain.addEventListener('abort', wake, { once: true });
            void watch.ended.then(wake);
          });
        } finally {
          watch.cancel();
        }
      }
    } finally {
      if (holding) this.awaiting.release(principal.tokenId);
    }
  }

  /**
   * One token's waiting awaitWorkflow polls are bounded, as its pollWork polls are: each holds a
   * watch, a timer and its request's socket until its workflow ends or its wait runs out, and a
   * read-only token could otherwise keep any number of them (200 requests of 249 aliases held
   * 49,800 on one instance).
   */
  private takeAwaitSlot(tokenId: string): true {
    if (!this.awaiting.take(tokenId)) throw new TooManyAwaitsError(this.awaiting.limit);
    return true;
  }

  @Requires('read')
  @Query(() => WorkflowConnection, { description: 'Workflows of an app and environment, oldest first, filtered and paginated.' })
  async workflows(@CurrentPrincipal() principal: Principal, @Args() args: WorkflowsArgs, @Info() info: GraphQLResolveInfo): Promise<WorkflowConnection> {
    const filter = withCanonicalIds(args.filter);
    assertScope(principal, filter.appId, filter.environment);
    await this.fence.upToHead();
    return readWithinAnswer(info, () => {
      const page = this.readModel.page({ ...filter, status: filter.state }, args.first ?? 50, listCursor(args.after), args.newestFirst ?? false);
      return { ...page, nodes: page.nodes.map(toWorkflowType) };
    });
  }

  @Requires('read')
  @Query(() => [WorkflowStateCount], { description: 'How many workflows of the filter are in each state (every state listed, zeros included).' })
  async workflowCounts(@CurrentPrincipal() principal: Principal, @Args() args: WorkflowCountsArgs): Promise<WorkflowStateCount[]> {
    assertScope(principal, args.filter.appId, args.filter.environment);
    await this.fence.upToHead();
    const states = Object.values(WorkflowState);
    const counts = this.readModel.countByStatus({ ...withCanonicalIds(args.filter), status: null }, states);
    return states.map((state) => ({ state, count: counts.get(state)?.count ?? 0, capped: counts.get(state)?.capped ?? false }));
  }

  @Requires('read')
  @Query(() => [WorkflowActivityBucket], { description: 'Workflows started, completed and failed per minute over the last `minutes`, oldest minute first.' })
  async workflowActivity(@CurrentPrincipal() principal: Principal, @Args() args: WorkflowActivityArgs): Promise<WorkflowActivityBucket[]> {
    assertScope(principal, args.appId, args.environment);
    await this.fence.upToHead();
    const minutes = args.minutes ?? 60;
    const end = Math.floor(Date.now() / 60_000) * 60_000 + 60_000;
    const start = end - minutes * 60_000;
    const buckets = Array.from({ length: minutes }, (_, i) => ({ at: new Date(start + i * 60_000), started: 0, completed: 0, failed: 0 }));
    for (const row of this.readModel.activity(args.appId, args.environment, start, end)) {
      const b = buckets[Math.floor((row.minute - start) / 60_000)];
      if (b) Object.assign(b, { started: row.started, completed: row.completed, failed: row.failed });
    }
    return buckets;
  }

  @Requires('read')
  @Query(() => [HistoryEvent], {
    description: "A workflow's history, in order, as stored: at most `first` events from `fromRevision`; `Workflow.historyLength` counts them all.",
  })
  async workflowHistory(@CurrentPrincipal() principal: Principal, @Args() args: HistoryArgs, @Info() info: GraphQLResolveInfo): Promise<HistoryEvent[]> {
    args = { ...args, id: canonicalId(args.id) };
    assertScope(principal, args.appId, args.environment);
    const at = await this.fence.upToHead();
    const known = () => this.readModel.get(args.appId, args.environment, args.id) !== undefined;
    if (!known() && !((await this.childCreated(principal, args, at)) && known())) throw new NotFoundError('workflow', args.id);
    return readHistory(this.store, `workflow-${args.id}`, args, info);
  }

  @ResolveField(() => Int, {
    description: 'How many events its history holds (the next revision): `workflowHistory` pages show how much of it they hold. One read of the store per workflow answered.',
  })
  historyLength(@Parent() workflow: WorkflowType): Promise<number> {
    return historyLength(this.store, `workflow-${workflow.id}`);
  }
}
