import { Inject, Injectable, Logger } from '@nestjs/common';
import { BATON_CONFIG, type BatonConfig } from '../../config/config.js';
import { ReadFence } from '../../event-store/read-fence.js';
import { CommandContext, DeciderRunner } from '../../event-store/decider-runner.js';
import { contextFor } from '../../shared/command-context.js';
import { assertScope } from '../../tokens/principal.js';
import { type Principal, TokensReadModel } from '../../tokens/tokens.projection.js';
import { SelectorActionInput } from './selector-action.input.js';
import { BadUserInputError, NotFoundError, TooManyQueuedEventsError, UnauthenticatedError } from '../../shared/errors.js';
import { derivedUuid, isUuid } from '../../shared/ids.js';
import { WorkflowCommand, baseName, workflowDecider } from '../domain/workflow.decider.js';
import { Selector } from '../domain/workflow-commands.js';
import { SelectorActionResult, SelectorActionStatus, WorkflowSelectorInput } from '../workflow.types.js';
import { WorkflowView, WorkflowsReadModel } from '../workflows.read-model.js';
import { CHILD_CREATION_WAIT_MS, PendingChildren, scopeOf } from '../pending-children.js';

/**
 * A selector as the API takes it: one of the three documented forms, or `{ id, name }`, which the
 * original service's client sends for `select.workflow(name).withId(id)`: the id, on the
 * condition that the workflow has that name.
 */
export type ApiSelector = Selector | { id: string; name: string };

/** Checks a selector has one of its forms. */
export function toSelector(input: WorkflowSelectorInput | null | undefined): ApiSelector {
  const id = input?.id ?? null;
  const name = input?.name ?? null;
  const tag = input?.tag ?? null;
  if (id !== null && tag === null) return name === null ? { id } : { id, name };
  if (id === null && name !== null) return tag === null ? { name } : { name, tag };
  const reason =
    id !== null
      ? 'an id selector takes no tag'
      : tag !== null
        ? 'a tag alone is not a selector; give the workflow name with it'
        : 'give { id }, { name } or { name, tag }';
  throw new BadUserInputError('selector', reason);
}

/** Workflows a `{ name }` or `{ name, tag }` action reads and changes at a time. */
const PAGE = 256;

/**
 * `workflowIds` lists at most this many of the matched workflows (the first, in dispatch order);
 * `matched` counts them all, so a client tells a short list by `workflowIds.length < matched`.
 */
export const LISTED_IDS_CAP = 10_000;

/**
 * Resolves a selector against the read model and applies one command to every workflow it
 * picks, each through the workflow's own decider (which decides whether anything changes).
 */
@Injectable()
export class SelectorActions {
  private readonly logger = new Logger('Selectors');

  constructor(
    private readonly workflows: WorkflowsReadModel,
    private readonly runner: DeciderRunner,
    private readonly fence: ReadFence,
    private readonly children: PendingChildren,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
    private readonly tokens: TokensReadModel,
  ) {}

  /**
   * The workflow an `{ id }` selector picks, once this instance's read models include the store's
   * head, so a workflow acknowledged by any instance before this call is found. With
   * `waitForChild` (the API's actions), a child whose parent recorded it (its id is in the
   * parent's history) and that the effects reactor has still to create is waited for, up to
   * CHILD_CREATION_WAIT_MS, rather than answered NOT_FOUND. Not in the reactor's own effects: a
   * later child's creation waits behind them (an app's effects are ordered).
   */
  async selectId(appId: string, environment: string, selector: { id: string; name?: string }, options: { waitForChild?: boolean; tokenId?: string } = {}): Promise<WorkflowView> {
    let at = await this.fence.upToHead();
    // A UUID is read in either case (RFC 9562): ids are handed out in lower case, and one kept
    // in a column that gives it back in upper case still picks its workflow.
    const id = isUuid(selector.id) ? selector.id.toLowerCase() : undefined;
    let view = id === undefined ? undefined : this.workflows.get(appId, environment, id);
    // A child its parent recorded (its id is in the parent's history) that the effects reactor
    // has not created yet: wait for it, then read again up to the head.
    if (id !== undefined && !view && options.waitForChild === true && (await this.children.waitFor(id, at, CHILD_CREATION_WAIT_MS, scopeOf(appId, environment)))) {
      // A token revoked while the action waited acts no more, as a new request of it would not
      // (found in review: the event was recorded after the revocation).
      if (options.tokenId !== undefined && !this.tokens.isActive(options.tokenId)) throw new UnauthenticatedError('unknown or revoked API token');
      at = await this.fence.upToHead();
      view = this.workflows.get(appId, environment, id);
    }
    // With a name, the id must be a workflow of that name (or of that name's versions).
    const named = selector.name === undefined || (view !== undefined && (view.name === selector.name || baseName(view.name) === selector.name));
    if (!view || !named) {
      this.logger.log(`selector { id: ${selector.id} } in ${appId}/${environment}: no such workflow at position ${at}`);
      throw new NotFoundError('workflow', selector.id);
    }
    return view;
  }

  async apply(principal: Principal, input: SelectorActionInput, command: WorkflowCommand): Promise<SelectorActionResult> {
    assertScope(principal, input.appId, input.environment);
    return this.applyTo(contextFor(principal, input.appId, input.environment), toSelector(input.selector), command, { waitForChild: true, tokenId: principal.tokenId });
  }

  /**
   * Applies `command` to what `selector` picks in the context's app and environment. `{ name }`
   * and `{ name, tag }` pick the running and paused workflows dispatched before the action (up
   * to the store's head when it starts), read and changed a page at a time: the action holds
   * one page, whatever the selector matches.
   */
  async applyTo(
    context: CommandContext,
    selector: ApiSelector,
    command: WorkflowCommand,
    options: { eventId?: (workflowId: string) => string; waitForChild?: boolean; tokenId?: string } = {},
  ): Promise<SelectorActionResult> {
    const { appId, environment } = context;
    // An event, from the API or a workflow's `select().send`, meets this instance's backlog bound.
    if (command.type === 'DeliverEvent' && command.maxQueued === undefined) command = { ...command, maxQueued: this.config.maxQueuedEvents };
    // An effect of a workflow's `select()` is carried out by every instance's reactor, and again
    // until its outcome is recorded: a target already changed by this cause was changed by it.
    const causeId = 'causeId' in command ? command.causeId : undefined;
    const run = async (id: string) => {
      const result = await this.runner.run(`workflow-${id}`, workflowDecider, command, context, {
        // The first event keeps the effect's id; any after it in the same append (a resume's
        // releases of events kept back) get ids derived from it, as deterministic (a repeat on
        // another instance appends the same ids) and distinct (one id for all fails the append).
        eventId: options.eventId ? (_event, i) => (i === 0 ? options.eventId!(id) : derivedUuid(options.eventId!(id), String(i))) : undefined,
      });
      return result.events.length > 0 || (causeId !== undefined && result.state.status !== 'none' && result.state.causes?.has(causeId) === true);
    };
    if ('id' in selector) {
      const view = await this.selectId(appId, environment, selector, { waitForChild: options.waitForChild, tokenId: options.tokenId });
      return { status: SelectorActionStatus.OK, matched: 1, changed: (await run(view.id)) ? 1 : 0, workflowIds: [view.id] };
    }
    const at = await this.fence.upToHead();
    const picked = new PickedWorkflows();
    // A workflow whose backlog is full refuses an event (MAX_QUEUED_EVENTS): the others still get
    // it, and the answer is then that error with the counts, not a rejection halfway through a page.
    const refused: string[] = [];
    let limit = 0;
    const runOrRefuse = (id: string) =>
      run(id).catch((error: unknown) => {
        if (!(error instanceof TooManyQueuedEventsError)) throw error;
        refused.push(id);
        limit = error.limit;
        return false;
      });
    for (let after = 0; ; ) {
      const page = this.workflows.activePage(appId, environment, selector.name, selector.tag, after, Number(at), PAGE);
      picked.add(page, await Promise.all(page.map((w) => runOrRefuse(w.id))));
      if (page.length < PAGE) break;
      after = page[page.length - 1].seq;
    }
    if (picked.matched === 0) {
      this.logger.log(`selector ${JSON.stringify(selector)} in ${appId}/${environment} matched no running or paused workflow at position ${at}`);
    }
    if (refused.length > 0) throw new TooManyQueuedEventsError(refused[0], limit, { matched: picked.matched, changed: picked.changed, refused: refused.length });
    return picked.result();
  }
}

/** What an action did, page after page: the counts, and the first `LISTED_IDS_CAP` ids. */
export class PickedWorkflows {
  matched = 0;
  changed = 0;
  private readonly ids: string[] = [];

  add(page: ReadonlyArray<{ id: string }>, changed: readonly boolean[]): void {
    this.matched += page.length;
    this.changed += changed.filter(Boolean).length;
    for (const { id } of page) if (this.ids.length < LISTED_IDS_CAP) this.ids.push(id);
  }

  result(): SelectorActionResult {
    return {
      status: this.matched > 0 ? SelectorActionStatus.OK : SelectorActionStatus.NO_MATCH,
      matched: this.matched,
      changed: this.changed,
      workflowIds: this.ids,
    };
  }
}
