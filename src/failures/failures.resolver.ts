import { Args, ArgsType, Field, ID, Int, ObjectType, Query, Resolver, registerEnumType } from '@nestjs/graphql';
import { IsDate, IsOptional } from 'class-validator';
import { AppScopedInput } from '../graphql/common.types.js';
import { TasksReadModel } from '../tasks/tasks.read-model.js';
import { CurrentPrincipal, assertScope } from '../tokens/principal.js';
import { Requires } from '../tokens/roles.js';
import type { Principal } from '../tokens/tokens.projection.js';
import { baseName } from '../workflows/domain/workflow.decider.js';
import { WorkflowsReadModel } from '../workflows/workflows.read-model.js';

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
  ) {}

  @Requires('read')
  @Query(() => [FailureGroup], { description: 'FAILED workflows and standalone tasks grouped by name and error message, most recent group first. Retrying them (retryWorkflows, retryTask) takes them out.' })
  failures(@CurrentPrincipal() principal: Principal, @Args() args: FailuresArgs): FailureGroup[] {
    assertScope(principal, args.appId, args.environment);
    const since = args.since?.getTime() ?? 0;
    const groups = new Map<string, FailureGroup>();
    const add = (kind: FailureKind, name: string, error: string, id: string, at: Date) => {
      if (at.getTime() < since) return;
      const key = `${kind}\u0000${name}\u0000${error}`;
      const group = groups.get(key) ?? { kind, name, error, count: 0, firstSeenAt: at, lastSeenAt: at, ids: [] };
      group.count++;
      if (at < group.firstSeenAt) group.firstSeenAt = at;
      if (at > group.lastSeenAt) group.lastSeenAt = at;
      group.ids.push(id);
      groups.set(key, group);
    };
    const scope = { appId: args.appId, environment: args.environment };
    for (const w of this.workflows.list({ ...scope, status: 'failed' })) add(FailureKind.WORKFLOW, baseName(w.name), w.error?.message ?? '', w.id, w.updatedAt);
    for (const t of this.tasks.list({ ...scope, status: 'failed' })) add(FailureKind.TASK, t.name, t.error?.message ?? '', t.id, t.updatedAt);
    return [...groups.values()]
      .map((g) => ({ ...g, ids: g.ids.reverse().slice(0, 500) }))
      .sort((a, b) => b.lastSeenAt.getTime() - a.lastSeenAt.getTime());
  }
}
