import { Args, Context, Mutation, Resolver } from '@nestjs/graphql';
import type { FastifyRequest } from 'fastify';
import { CurrentPrincipal, assertScope } from '../tokens/principal.js';
import type { Principal } from '../tokens/tokens.projection.js';
import { EngineService } from './engine.service.js';
import { WorkerRegistry } from './worker-registry.js';
import { HeartbeatInput, HeartbeatResult, PollWorkInput, ReportWorkInput, ReportWorkResult, WorkItem } from './worker-protocol.types.js';
import { Requires } from '../tokens/roles.js';

/** The worker protocol, on the same endpoint and tokens as the control API. */
@Resolver()
export class WorkerProtocolResolver {
  constructor(
    private readonly engine: EngineService,
    private readonly registry: WorkerRegistry,
  ) {}

  @Requires('worker')
  @Mutation(() => [WorkItem], {
    description:
      'Long-polls for work: claims up to `maxItems` decisions and task attempts for the names this worker serves, each under a lease. Answers as soon as anything was claimed; with nothing to claim it waits up to `waitMs`, then answers with an empty list.',
  })
  async pollWork(
    @CurrentPrincipal() principal: Principal,
    @Args('input', { description: 'Who polls, for which app and environment, and which workflows and tasks it serves.' }) input: PollWorkInput,
    @Context('req') req: FastifyRequest | undefined,
  ): Promise<WorkItem[]> {
    assertScope(principal, input.appId, input.environment);
    // A worker that goes away mid-poll (shutdown, crash) must not have work claimed for it.
    const gone = new AbortController();
    const socket = req?.raw.socket;
    const onClose = () => gone.abort();
    socket?.once('close', onClose);
    const ended = this.registry.polling(input);
    try {
      return await this.engine.poll(input, gone.signal);
    } finally {
      ended();
      socket?.off('close', onClose);
    }
  }

  @Requires('worker')
  @Mutation(() => ReportWorkResult, {
    description: 'Reports the outcomes of claimed work items (decision commands or failures, task results or errors), several per request.',
  })
  reportWork(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'The reporting worker and the outcomes of its claimed work items.' }) input: ReportWorkInput): Promise<ReportWorkResult> {
    assertScope(principal, input.appId, input.environment);
    this.registry.seen(input);
    return this.engine.report(input);
  }

  @Requires('worker')
  @Mutation(() => [HeartbeatResult], {
    description: 'Extends the leases of running task attempts; answers, for each, whether the worker should stop it (workflow terminated, lease lost).',
  })
  heartbeat(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'The worker and the running task attempts whose leases to extend.' }) input: HeartbeatInput): Promise<HeartbeatResult[]> {
    assertScope(principal, input.appId, input.environment);
    this.registry.seen(input);
    return this.engine.heartbeat(input);
  }
}
