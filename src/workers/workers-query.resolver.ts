import { Args, ArgsType, Field, Int, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { AppScopedInput } from '../graphql/common.types.js';
import { CurrentPrincipal, assertScope } from '../tokens/principal.js';
import { Requires } from '../tokens/roles.js';
import type { Principal } from '../tokens/tokens.projection.js';
import { baseName } from '../workflows/domain/workflow.decider.js';
import { EngineState } from './engine-state.js';
import { WorkerRegistry } from './worker-registry.js';
import { WorkKind } from './worker-protocol.types.js';
import { ReadFence } from '../event-store/read-fence.js';

@ObjectType('ConnectedWorker', { description: 'A worker process this instance has seen polling (in the last day).' })
export class ConnectedWorkerType {
  @Field({ description: 'The id the worker polls under (shown as `worker:<id>` in histories).' })
  workerId: string;
  @Field(() => [String], { description: 'Workflow names (with versions) it serves.' })
  workflows: string[];
  @Field(() => [String], { description: 'Task names it serves.' })
  tasks: string[];
  @Field({ description: 'Whether it is connected: a poll of it is parked here, or it was seen within WORKER_GONE_MS.' })
  connected: boolean;
  @Field(() => Int, { description: 'Its polls parked on this instance right now.' })
  pollsInFlight: number;
  @Field({ description: 'When this instance first saw it.' })
  firstSeenAt: Date;
  @Field({ description: 'When it last polled, reported or heartbeated.' })
  lastSeenAt: Date;
}

@ObjectType('WaitingWork', { description: 'Work that a worker could claim now, by name.' })
export class WaitingWorkType {
  @Field(() => WorkKind, { description: 'Decisions of workflows, or task attempts.' })
  kind: WorkKind;
  @Field({ description: 'The workflow base name or the task name.' })
  name: string;
  @Field(() => Int, { description: 'How many items are claimable now.' })
  count: number;
  @Field({ description: 'Whether a connected worker serves this name (false: the work waits for a worker).' })
  served: boolean;
}

@ObjectType('WorkersOverview', { description: 'The workers of an app and environment and the work waiting for them.' })
export class WorkersOverviewType {
  @Field(() => [ConnectedWorkerType], { description: 'Workers seen by this instance, most recently seen first.' })
  workers: ConnectedWorkerType[];
  @Field(() => [WaitingWorkType], { description: 'Claimable work by name; `served: false` marks names no connected worker serves.' })
  waiting: WaitingWorkType[];
}

@ArgsType()
class WorkersArgs extends AppScopedInput {}

@Resolver()
export class WorkersQueryResolver {
  constructor(
    private readonly registry: WorkerRegistry,
    private readonly engine: EngineState,
    private readonly fence: ReadFence,
  ) {}

  @Requires('read')
  @Query(() => WorkersOverviewType, {
    description: 'Connected workers of an app and environment (from the polls this instance sees), the names each serves, and the work waiting, with the names no connected worker serves.',
  })
  async workers(@CurrentPrincipal() principal: Principal, @Args() args: WorkersArgs): Promise<WorkersOverviewType> {
    assertScope(principal, args.appId, args.environment);
    // The waiting work is this instance's engine index: brought up to what any instance acknowledged.
    await this.fence.upToHead();
    const sightings = this.registry.list(args.appId, args.environment);
    const live = sightings.filter((s) => this.registry.connected(s));
    const servedWorkflows = new Set(live.flatMap((s) => s.workflows.map(baseName)));
    const servedTasks = new Set(live.flatMap((s) => s.tasks));
    const { decisions, tasks } = this.engine.waiting(args.appId, args.environment);
    return {
      workers: sightings.map((s) => ({
        workerId: s.workerId,
        workflows: s.workflows,
        tasks: s.tasks,
        connected: this.registry.connected(s),
        pollsInFlight: s.pollsInFlight,
        firstSeenAt: new Date(s.firstSeenAt),
        lastSeenAt: new Date(s.lastSeenAt),
      })),
      waiting: [
        ...[...decisions].map(([name, count]) => ({ kind: WorkKind.DECISION, name, count, served: servedWorkflows.has(name) })),
        ...[...tasks].map(([name, count]) => ({ kind: WorkKind.TASK, name, count, served: servedTasks.has(name) })),
      ].sort((a, b) => Number(a.served) - Number(b.served) || b.count - a.count),
    };
  }
}
