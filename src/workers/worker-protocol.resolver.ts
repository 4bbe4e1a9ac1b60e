import { Inject } from '@nestjs/common';
import { Args, Context, Info, Mutation, Query, Resolver } from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import type { FastifyRequest } from 'fastify';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { LifecycleService } from '../health/lifecycle.service.js';
import { TooManyPollsError } from '../shared/errors.js';
import { InputLimits, inputLimits } from '../shared/limits.js';
import { PerTokenCounter } from '../shared/per-token-counter.js';
import { CurrentPrincipal, assertScope } from '../tokens/principal.js';
import type { Principal } from '../tokens/tokens.projection.js';
import { EngineService } from './engine.service.js';
import { currentAnswerBudget, readWithinAnswer } from '../graphql/answer-budget.js';
import { Requires } from '../tokens/roles.js';
import { checkHeartbeat, screenReport } from './worker-input-limits.js';
import { DecisionHistoryInput, HeartbeatInput, HeartbeatResult, PollWorkInput, ReportWorkInput, ReportWorkResult, WorkItem } from './worker-protocol.types.js';
import { WorkerRegistry } from './worker-registry.js';

/** The worker protocol, on the same endpoint and tokens as the control API. */
@Resolver()
export class WorkerProtocolResolver {
  private readonly limits: InputLimits;
  /** Long polls waiting right now, per token (MAX_POLLS_PER_TOKEN): one token cannot hold every socket. */
  private readonly polling: PerTokenCounter;

  constructor(
    private readonly engine: EngineService,
    @Inject(BATON_CONFIG) config: BatonConfig,
    private readonly lifecycle: LifecycleService,
    private readonly registry: WorkerRegistry,
  ) {
    this.limits = inputLimits(config);
    this.polling = new PerTokenCounter(config.maxPollsPerToken);
  }

  @Requires('worker')
  @Mutation(() => [WorkItem], {
    description:
      'Long-polls for work: claims up to `maxItems` decisions and task attempts for the names this worker serves, each under a lease. Answers as soon as anything was claimed; with nothing to claim it waits up to `waitMs`, then answers with an empty list.',
  })
  async pollWork(
    @CurrentPrincipal() principal: Principal,
    @Args('input', { description: 'Who polls, for which app and environment, and which workflows and tasks it serves.' }) input: PollWorkInput,
    @Context('req') req: FastifyRequest | undefined,
    @Info() info?: GraphQLResolveInfo,
  ): Promise<WorkItem[]> {
    assertScope(principal, input.appId, input.environment);
    // `x-baton-resent`: the SDK client sends a request again when a kept-alive connection was
    // reset under it; for a poll with an id, the first send may have claimed work elsewhere.
    const resent = req?.headers['x-baton-resent'] !== undefined;
    // An instance that is draining answers parked polls empty and claims nothing new; a poll sent
    // again is still handed what its first send claimed (claiming nothing new). A poll that
    // arrives meanwhile waits (its waitMs, until the app closes, or the worker goes) and is then
    // answered empty: answered at once, the worker polled again at once, on the same connection,
    // hundreds of times a second for the whole SHUTDOWN_DELAY_MS.
    if (this.lifecycle.draining) {
      const again = await this.engine.claimsAgain({ ...input, tokenId: principal.tokenId }, resent);
      if (again.length > 0) {
        currentAnswerBudget()?.charge(again, info);
        return again;
      }
      if (!this.polling.take(principal.tokenId)) throw new TooManyPollsError(this.polling.limit);
      try {
        await this.drained(input.waitMs ?? 20_000, req?.raw.socket);
      } finally {
        this.polling.release(principal.tokenId);
      }
      return [];
    }
    // Aliases of pollWork share one answer (each claims within what is left of it): a mutation of
    // 40 of them, claiming the same tasks again as their leases lapsed, held 40 answers' worth.
    const answer = currentAnswerBudget();
    answer?.ensureRoom();
    if (!this.polling.take(principal.tokenId)) throw new TooManyPollsError(this.polling.limit);
    // A worker that goes away mid-poll (shutdown, crash) must not have work claimed for it.
    const gone = new AbortController();
    const socket = req?.raw.socket;
    const onClose = () => gone.abort();
    socket?.once('close', onClose);
    this.lifecycle.drainSignal.addEventListener('abort', onClose, { once: true });
    const ended = this.registry.polling(input, principal.tokenId);
    try {
      const items = await this.engine.poll({ ...input, tokenId: principal.tokenId }, gone.signal, { resent });
      answer?.charge(items, info);
      return items;
    } finally {
      ended();
      socket?.off('close', onClose);
      this.polling.release(principal.tokenId);
      this.lifecycle.drainSignal.removeEventListener('abort', onClose);
    }
  }

  /** Until `waitMs` has passed, the app closes, or the socket does. */
  private drained(waitMs: number, socket?: { once(event: 'close', listener: () => void): unknown; off(event: 'close', listener: () => void): unknown }): Promise<void> {
    const closing = this.lifecycle.closeSignal;
    if (closing.aborted || waitMs <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        closing.removeEventListener('abort', done);
        socket?.off('close', done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      closing.addEventListener('abort', done, { once: true });
      socket?.once('close', done);
    });
  }

  @Requires('worker')
  @Mutation(() => ReportWorkResult, {
    description: 'Reports the outcomes of claimed work items (decision commands or failures, task results or errors), several per request.',
  })
  async reportWork(
    @CurrentPrincipal() principal: Principal,
    @Args('input', { description: 'The reporting worker and the outcomes of its claimed work items.' }) input: ReportWorkInput,
    @Context('req') req?: FastifyRequest,
    @Info() info?: GraphQLResolveInfo,
  ): Promise<ReportWorkResult> {
    assertScope(principal, input.appId, input.environment);
    this.registry.seen(input);
    const screened = screenReport(input, this.limits);
    // What the report recorded is always answered; its eager claims fit what the answer has left (none once it is full).
    const answer = currentAnswerBudget();
    const claim = answer && answer.remaining === 0 ? null : screened.input.claim;
    // A draining instance claims nothing new for a report beyond its outcomes' own next steps, as
    // it claims nothing new for a poll; a report sent again is still handed its first send's claims.
    const result = await this.engine.report({ ...screened.input, claim, tokenId: principal.tokenId }, { fill: !this.lifecycle.draining, resent: req?.headers['x-baton-resent'] !== undefined });
    const answered = { accepted: result.accepted, rejected: [...screened.rejected, ...result.rejected], items: result.items, decided: result.decided };
    answer?.spend(answered, info);
    return answered;
  }

  @Requires('worker')
  @Query(() => String, {
    description:
      "Worker protocol: a claimed decision's whole run history (JSON array of { revision, type, data }), for a worker that no longer holds the run in its cache. Only while the decision is current.",
  })
  decisionHistory(
    @CurrentPrincipal() principal: Principal,
    @Args('input', { description: 'The worker and the decision it claimed.' }) input: DecisionHistoryInput,
  ): Promise<string> {
    assertScope(principal, input.appId, input.environment);
    // Each alias reads a page of up to half the response limit: within one answer's budget, not each its own.
    return readWithinAnswer(undefined, () => this.engine.decisionHistory({ ...input, tokenId: principal.tokenId }));
  }

  @Requires('worker')
  @Mutation(() => [HeartbeatResult], {
    description: 'Extends the leases of running task attempts; answers, for each, whether the worker should stop it (workflow terminated, lease lost).',
  })
  heartbeat(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'The worker and the running task attempts whose leases to extend.' }) input: HeartbeatInput): Promise<HeartbeatResult[]> {
    assertScope(principal, input.appId, input.environment);
    checkHeartbeat(input, this.limits);
    this.registry.seen(input);
    return this.engine.heartbeat({ ...input, tokenId: principal.tokenId });
  }
}
