import { Args, ArgsType, Field, InputType, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { IsDate, IsOptional, IsString, MaxLength } from 'class-validator';
import { AppScopedInput, PageArgs, Paginated, paginate } from '../graphql/common.types.js';
import { CurrentPrincipal, assertScope } from '../tokens/principal.js';
import { Requires } from '../tokens/roles.js';
import type { Principal } from '../tokens/tokens.projection.js';
import { TokensReadModel } from '../tokens/tokens.projection.js';
import { AuditReadModel } from './audit.read-model.js';

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

@ObjectType('AuditConnection', { description: 'A page of API actions, newest first.' })
export class AuditConnection extends Paginated(AuditEntryType) {}

@ArgsType()
class AuditArgs extends PageArgs {
  @Field(() => AuditFilterInput, { description: 'App, environment and optional actor, action, text and time range.' })
  filter: AuditFilterInput;
}

@Resolver()
export class AuditResolver {
  constructor(
    private readonly audit: AuditReadModel,
    private readonly tokens: TokensReadModel,
  ) {}

  @Requires('read')
  @Query(() => AuditConnection, { description: "An app's API actions (dispatches, control actions, retries, schedule changes) by actor and time, newest first: the event log read as an audit log." })
  auditLog(@CurrentPrincipal() principal: Principal, @Args() args: AuditArgs): AuditConnection {
    assertScope(principal, args.filter.appId, args.filter.environment);
    const entries = this.audit.list(args.filter).map((e) => ({
      id: String(e.position),
      at: e.at,
      actor: e.actor,
      actorLabel: this.tokens.tokens.get(e.actor)?.label ?? null,
      action: e.action,
      streamId: e.streamId,
      name: e.name,
      data: JSON.stringify(e.data),
    }));
    // Cursors are positions, newest first: `paginate` expects ids that sort ascending, so page by index.
    let start = 0;
    if (args.after) {
      const index = entries.findIndex((e) => e.id === args.after);
      start = index === -1 ? entries.findIndex((e) => BigInt(e.id) < BigInt(args.after!)) : index + 1;
      if (start === -1) start = entries.length;
    }
    const page = paginate(entries.slice(start), args.first ?? 50, null);
    return { ...page, totalCount: entries.length };
  }
}
