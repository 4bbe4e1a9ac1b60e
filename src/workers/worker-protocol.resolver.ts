import { Args, Mutation, Resolver } from '@nestjs/graphql';
import { CurrentPrincipal, assertScope } from '../tokens/principal.js';
import type { Principal } from '../tokens/tokens.projection.js';
import { EngineService } from './engine.service.js';
import { HeartbeatInput, HeartbeatResult, PollWorkInput, ReportWorkInput, ReportWorkResult, WorkItem } from './worker-protocol.types.js';

/** The worker protocol, on the same endpoint and tokens as the control API. */
@Resolver()
export class WorkerProtocolResolver {
  constructor(private readonly engine: EngineService) {}

  @Mutation(() => [WorkItem], {
    description:
      'Long-polls for work: claims up to `maxItems` decisions and task attempts for the names this worker serves, each under a lease. Answers as soon as anything was claimed; with nothing to claim it waits up to `waitMs`, then answers with an empty list.',
  })
  pollWork(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'Who polls, for which app and environment, and which workflows and tasks it serves.' }) input: PollWorkInput): Promise<WorkItem[]> {
    assertScope(principal, input.appId, input.environment);
    return this.engine.poll(input);
  }

  @Mutation(() => ReportWorkResult, {
    description: 'Reports the outcomes of claimed work items (decision commands or failures, task results or errors), several per request.',
  })
  reportWork(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'The reporting worker and the outcomes of its claimed work items.' }) input: ReportWorkInput): Promise<ReportWorkResult> {
    assertScope(principal, input.appId, input.environment);
    return this.engine.report(input);
  }

  @Mutation(() => [HeartbeatResult], {
    description: 'Extends the leases of running task attempts; answers, for each, whether the worker should stop it (workflow terminated, lease lost).',
  })
  heartbeat(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'The worker and the running task attempts whose leases to extend.' }) input: HeartbeatInput): Promise<HeartbeatResult[]> {
    assertScope(principal, input.appId, input.environment);
    return this.engine.heartbeat(input);
  }
}
