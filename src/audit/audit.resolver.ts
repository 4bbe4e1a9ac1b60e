import { Type } from 'class-transformer';
import { Args, ArgsType, Field, Info, InputType, ObjectType, Query, Resolver } from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { readWithinAnswer } from '../graphql/answer-budget.js';
import { IsDate, IsOptional, IsString, MaxLength, ValidateNested } from 'class-validator';
import { AppScopedInput, PageArgs, Paginated } from '../graphql/common.types.js';
import { BadUserInputError } from '../shared/errors.js';
import { CurrentPrincipal, assertScope } from '../tokens/principal.js';
import { Requires } from '../tokens/roles.js';
import type { Principal } from '../tokens/tokens.projection.js';
import { TokensReadModel } from '../tokens/tokens.projection.js';
import { AuditReadModel } from './audit.read-model.js';
import { ReadFence } from '../event-store/read-fence.js';

@InputType({ description: 'Which API actions to list.' })
export class AuditFilterInput extends AppScopedInput {
  @Field({ nullable: true, description: 'Only actions of this actor (a token id, or "cli").' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  actor?: string;

  @Field({ nullable: true, description: 'Only this action (an event type such as WorkflowPaused or ScheduleDeleted).' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  action?: string;

  @Field({ nullable: true, description: 'Text found in the actor, the action, the stream or the name (case-insensitive).' })
  @IsOptional()
  @IsString()
  @MaxLength(256)
  search?: string;

  @Field(() => Date, { nullable: true, description: 'Only actions at or after this time.' })
  @IsOptional()
  @IsDate()
  after?: Date;

  @Field(() => Date, { nullable: true, description: 'Only actions before this time.' })
  @IsOptional()
  @IsDate()
  before?: Date;
}

@ObjectType('AuditEntry', { description: 'One API action: who did what to which workflow, task or schedule, and when.' })
export class AuditEntryType {
  @Field({ description: 'Cursor: the position of the event in the global log.' })
  id: string;
  @Field({ description: 'When the action was taken.' })
  at: Date;
  @Field({ description: 'Who took it: a token id, or "cli".' })
  actor: string;
  @Field(() => String, { nullable: true, description: 'The label of the token, when it has one.' })
  actorLabel: string | null;
  @Field({ description: 'What was done: the event type (WorkflowDispatched, WorkflowPaused, ScheduleDeleted, ...).' })
  action: string;
  @Field({ description: 'The stream acted on, e.g. workflow-<id> or schedule-<id>.' })
  streamId: string;
  @Field(() => String, { nullable: true, description: 'The workflow, task or schedule name, or the event name for WorkflowEventReceived.' })
  name: string | null;
  @Field({ description: 'The event data as JSON.' })
  data: string;
}

@ObjectType('AuditConnection', {
  description:
    'A page of API actions, newest first. With a filter beyond the app and environment, a page searches at most 10,000 actions past its cursor: ' +
    'it may hold fewer than `first` (even none) with `pageInfo.hasNextPage` true; go on from `pageInfo.endCursor`. ' +
    'Its `totalCount` is then of the matches among the newest 10,000 actions, with `totalCountCapped` when there are older ones.',
})
export class AuditConnection extends Paginated(AuditEntryType) {}

@ArgsType()
class AuditArgs extends PageArgs {
  @ValidateNested()
  @Type(() => AuditFilterInput)
  @Field(() => AuditFilterInput, { description: 'App, environment and optional actor, action, text and time range.' })
  filter: AuditFilterInput;
}

@Resolver()
export class AuditResolver {
  constructor(
    private readonly audit: AuditReadModel,
    private readonly tokens: TokensReadModel,
    private readonly fence: ReadFence,
  ) {}

  @Requires('read')
  @Query(() => AuditConnection, { description: "An app's API actions (dispatches, control actions, retries, schedule changes) by actor and time, newest first: the event log read as an audit log." })
  async auditLog(@CurrentPrincipal() principal: Principal, @Args() args: AuditArgs, @Info() info?: GraphQLResolveInfo): Promise<AuditConnection> {
    assertScope(principal, args.filter.appId, args.filter.environment);
    if (args.after != null && !/^\d{1,19}$/.test(args.after)) throw new BadUserInputError('after', 'must be a cursor (endCursor) from an earlier page');
    await this.fence.upToHead();
    return readWithinAnswer(info, () => this.answer(args));
  }

  private answer(args: AuditArgs): AuditConnection {
    const page = this.audit.page(args.filter, args.first ?? 50, args.after == null ? null : BigInt(args.after));
    const nodes = page.entries.map((e) => ({
      id: String(e.position),
      at: e.at,
      actor: e.actor,
      actorLabel: this.tokens.label(e.actor),
      action: e.action,
      streamId: e.streamId,
      name: e.name,
      data: JSON.stringify(e.data),
    }));
    return {
      nodes,
      totalCount: page.totalCount,
      totalCountCapped: page.totalCountCapped,
      pageInfo: {
        // A search that stopped short of a full page goes on from where it stopped.
        endCursor: page.searchedTo !== null ? String(page.searchedTo) : (nodes.at(-1)?.id ?? null),
        hasNextPage: page.hasNextPage,
      },
    };
  }
}
