import { Args, ArgsType, Field, ID, Info, Int, ObjectType, Query, Resolver, registerEnumType } from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import { readWithinAnswer } from '../graphql/answer-budget.js';
import { IsDate, IsOptional } from 'class-validator';
import { AppScopedInput } from '../graphql/common.types.js';
import { TasksReadModel } from '../tasks/tasks.read-model.js';
import { CurrentPrincipal, assertScope } from '../tokens/principal.js';
import { Requires } from '../tokens/roles.js';
import type { Principal } from '../tokens/tokens.projection.js';
import { type FailureRow, WorkflowsReadModel } from '../workflows/workflows.read-model.js';
import { QUERY_COUNT_CAP } from '../event-store/read-model-db.js';
import { ReadFence } from '../event-store/read-fence.js';

export enum FailureKind {
  WORKFLOW = 'WORKFLOW',
  TASK = 'TASK',
}
registerEnumType(FailureKind, {
  name: 'FailureKind',
  description: 'What failed.',
  valuesMap: { WORKFLOW: { description: 'Workflows in state FAILED.' }, TASK: { description: 'Standalone tasks in state FAILED.' } },
});

@ObjectType('FailureGroup', { description: 'Failed workflows or standalone tasks of one name with one error message.' })
export class FailureGroup {
  @Field(() => FailureKind, { description: 'Workflows or standalone tasks.' })
  kind: FailureKind;
  @Field({ description: 'The workflow base name or the task name.' })
  name: string;
  @Field({ description: 'The error message they failed with.' })
  error: string;
  @Field(() => Int, { description: 'How many are failed with it now.' })
  count: number;
  @Field({ description: 'When the first of them failed.' })
  firstSeenAt: Date;
  @Field({ description: 'When the last of them failed.' })
  lastSeenAt: Date;
  @Field(() => [ID], { description: 'Their ids, most recent first (at most 500).' })
  ids: string[];
  @Field({ description: `True when more than ${QUERY_COUNT_CAP.toLocaleString('en')} workflows or tasks of this kind failed since \`since\`: only the most recent ${QUERY_COUNT_CAP.toLocaleString('en')} were grouped, so \`count\` and \`firstSeenAt\` cover those.` })
  capped: boolean;
}

@ArgsType()
class FailuresArgs extends AppScopedInput {
  @Field(() => Date, { nullable: true, description: 'Only failures at or after this time.' })
  @IsOptional()
  @IsDate()
  since?: Date;
}

/** What is failed now, grouped so that one cause is one line: the dashboard's Failures page. */
@Resolver()
export class FailuresResolver {
  constructor(
    private readonly workflows: WorkflowsReadModel,
    private readonly tasks: TasksReadModel,
    private readonly fence: ReadFence,
  ) {}

  @Requires('read')
  @Query(() => [FailureGroup], { description: 'FAILED workflows and standalone tasks grouped by name and error message, most recent group first. Retrying them (retryWorkflows, retryTask) takes them out.' })
  async failures(@CurrentPrincipal() principal: Principal, @Args() args: FailuresArgs, @Info() info: GraphQLResolveInfo): Promise<FailureGroup[]> {
    assertScope(principal, args.appId, args.environment);
    await this.fence.upToHead();
    const since = args.since?.getTime() ?? 0;
    // Grouped in SQL: the cost follows the number of failures (at most QUERY_COUNT_CAP of each kind), never the number of workflows.
    const group = (kind: FailureKind) => (r: FailureRow): FailureGroup => ({
      kind,
      name: r.name,
      error: r.message,
      count: r.count,
      firstSeenAt: new Date(r.firstSeen),
      lastSeenAt: new Date(r.lastSeen),
      ids: r.ids,
      capped: r.capped,
    });
    return readWithinAnswer(info, () =>
      [
        ...this.workflows.failureGroups(args.appId, args.environment, since).map(group(FailureKind.WORKFLOW)),
        ...this.tasks.failureGroups(args.appId, args.environment, since).map(group(FailureKind.TASK)),
      ].sort((a, b) => b.lastSeenAt.getTime() - a.lastSeenAt.getTime()),
    );
  }
}
