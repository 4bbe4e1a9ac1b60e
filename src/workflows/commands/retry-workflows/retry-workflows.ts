import { Inject } from '@nestjs/common';
import { Args, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { ReadFence } from '../../../event-store/read-fence.js';
import { DeciderRunner } from '../../../event-store/decider-runner.js';
import { EVENT_STORE, type EventStore } from '../../../event-store/event-store.port.js';
import { CLOCK, type Clock } from '../../../shared/clock.js';
import { contextFor } from '../../../shared/command-context.js';
import { CurrentPrincipal, assertScope } from '../../../tokens/principal.js';
import { Requires } from '../../../tokens/roles.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { failureCause, replayableHistory } from '../../../protocol/workflow-retry.js';
import { WORKFLOW_RESET_TYPES, workflowDecider } from '../../domain/workflow.decider.js';
import { readLatestRun } from '../../../event-store/read-run.js';
import { SelectorActionResult } from '../../workflow.types.js';
import { WorkflowsReadModel } from '../../workflows.read-model.js';
import { SelectorActionInput } from '../selector-action.input.js';
import { PickedWorkflows, SelectorActions, toSelector } from '../selector-actions.js';

@InputType({ description: 'Retry the FAILED workflows picked by `selector`: `{ id }`, or `{ name }` / `{ name, tag }` for every failed workflow of that name (and tag).' })
export class RetryWorkflowsInput extends SelectorActionInput {}

export class RetryWorkflows {
  constructor(readonly principal: Principal, readonly input: RetryWorkflowsInput) {}
}

/** Failed workflows read a page at a time, and retried this many at once (each reads its run). */
const PAGE = 256;
const BATCH = 64;

@CommandHandler(RetryWorkflows)
export class RetryWorkflowsHandler implements ICommandHandler<RetryWorkflows, SelectorActionResult> {
  constructor(
    private readonly actions: SelectorActions,
    private readonly workflows: WorkflowsReadModel,
    private readonly runner: DeciderRunner,
    private readonly fence: ReadFence,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async execute({ principal, input }: RetryWorkflows): Promise<SelectorActionResult> {
    assertScope(principal, input.appId, input.environment);
    const selector = toSelector(input.selector);
    const context = contextFor(principal, input.appId, input.environment);
    const picked = new PickedWorkflows();
    if ('id' in selector) {
      const view = await this.actions.selectId(input.appId, input.environment, selector);
      picked.add([view], [await this.retry(view.id, context)]);
      return picked.result();
    }
    // Every FAILED workflow of that name (and tag), a page of the read model at a time: retried
    // ones leave the list, so each page is read from the one before's cursor.
    await this.fence.upToHead();
    const filter = { appId: input.appId, environment: input.environment, name: selector.name, tag: selector.tag ?? null, status: 'failed' as const };
    for (let after: string | null = null; ; ) {
      const page = this.workflows.page(filter, PAGE, after);
      for (let i = 0; i < page.nodes.length; i += BATCH) {
        const batch = page.nodes.slice(i, i + BATCH);
        picked.add(batch, await Promise.all(batch.map((w) => this.retry(w.id, context))));
      }
      if (!page.pageInfo.hasNextPage) return picked.result();
      after = page.pageInfo.endCursor;
    }
  }

  /** The tasks to reset come from the history: the ones whose failure the failing decision saw. */
  private async retry(workflowId: string, context: ReturnType<typeof contextFor>): Promise<boolean> {
    const streamId = `workflow-${workflowId}`;
    // The run that failed is the latest (a run continues as new only while it runs).
    const recorded = await readLatestRun(this.store, streamId, WORKFLOW_RESET_TYPES);
    if (recorded.length === 0) {
      // Listed as FAILED, but retention (on any instance) deleted its stream since, and records
      // WorkflowsExpired after: nothing to retry. Its cached state, if any, is stale.
      this.runner.queues.forget(streamId);
      return false;
    }
    const history = replayableHistory(recorded.map((e) => ({ revision: Number(e.revision), type: e.type, data: e.data as any })));
    const resetTasks = failureCause(history)?.resetTasks ?? [];
    try {
      const result = await this.runner.run(streamId, workflowDecider, { type: 'RetryWorkflow', resetTasks, now: this.clock.now() }, context);
      return result.events.length > 0;
    } catch (error) {
      // Deleted between the read above and the append (which then meets no stream at all).
      if ((await this.store.readStream(streamId, { maxCount: 1 })).length > 0) throw error;
      this.runner.queues.forget(streamId);
      return false;
    }
  }
}

@Resolver()
export class RetryWorkflowsResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => SelectorActionResult, {
    description:
      'Retries FAILED workflows: each resumes from its last successful decision, not from the start (`WorkflowRetried` in its history, with the token as actor). The tasks whose failure failed it run again; results already recorded are kept. An `{ id }` selector matches the workflow in any state and changes it only when it is FAILED; `{ name }` and `{ name, tag }` pick only the FAILED workflows of that name (and tag).',
  })
  retryWorkflows(@CurrentPrincipal() principal: Principal, @Args('input', { description: 'Which workflows to retry (app, environment, selector).' }) input: RetryWorkflowsInput): Promise<SelectorActionResult> {
    return this.commands.execute(new RetryWorkflows(principal, input));
  }
}
