import { Injectable, Logger } from '@nestjs/common';
import { ReadFence } from '../../event-store/read-fence.js';
import { CommandContext, DeciderRunner } from '../../event-store/decider-runner.js';
import { contextFor } from '../../shared/command-context.js';
import { assertScope } from '../../tokens/principal.js';
import type { Principal } from '../../tokens/tokens.projection.js';
import { SelectorActionInput } from './selector-action.input.js';
import { BadUserInputError, NotFoundError } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import { WorkflowCommand, baseName, workflowDecider } from '../domain/workflow.decider.js';
import { Selector } from '../domain/workflow-commands.js';
import { SelectorActionResult, SelectorActionStatus, WorkflowSelectorInput } from '../workflow.types.js';
import { WorkflowView, WorkflowsReadModel } from '../workflows.read-model.js';

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

const BATCH = 256;

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
  ) {}

  /**
   * What the selector picks once this instance's read models include the store's head, so a
   * workflow acknowledged by any instance before this call is found.
   */
  async select(appId: string, environment: string, selector: ApiSelector): Promise<WorkflowView[]> {
    const at = await this.fence.upToHead();
    if ('id' in selector) {
      // A UUID is read in either case (RFC 9562): ids are handed out in lower case, and one kept
      // in a column that gives it back in upper case still picks its workflow.
      const view = isUuid(selector.id) ? this.workflows.get(appId, environment, selector.id.toLowerCase()) : undefined;
      // With a name, the id must be a workflow of that name (or of that name's versions).
      const named = !('name' in selector) || (view !== undefined && (view.name === selector.name || baseName(view.name) === selector.name));
      if (!view || !named) {
        this.logger.log(`selector { id: ${selector.id} } in ${appId}/${environment}: no such workflow at position ${at}`);
        throw new NotFoundError('workflow', selector.id);
      }
      return [view];
    }
    const matched = this.workflows.active(appId, environment, selector.name, selector.tag);
    if (matched.length === 0) {
      this.logger.log(`selector ${JSON.stringify(selector)} in ${appId}/${environment} matched no running or paused workflow at position ${at}`);
    }
    return matched;
  }

  async apply(principal: Principal, input: SelectorActionInput, command: WorkflowCommand): Promise<SelectorActionResult> {
    assertScope(principal, input.appId, input.environment);
    return this.applyTo(contextFor(principal, input.appId, input.environment), toSelector(input.selector), command);
  }

  /** Applies `command` to what `selector` picks in the context's app and environment. */
  async applyTo(
    context: CommandContext,
    selector: ApiSelector,
    command: WorkflowCommand,
    options: { eventId?: (workflowId: string) => string } = {},
  ): Promise<SelectorActionResult> {
    const matched = await this.select(context.appId, context.environment, selector);
    let changed = 0;
    for (let i = 0; i < matched.length; i += BATCH) {
      const results = await Promise.all(
        matched.slice(i, i + BATCH).map((w) =>
          this.runner.run(`workflow-${w.id}`, workflowDecider, command, context, {
            eventId: options.eventId ? () => options.eventId!(w.id) : undefined,
          }),
        ),
      );
      changed += results.filter((r) => r.events.length > 0).length;
    }
    return {
      status: matched.length > 0 ? SelectorActionStatus.OK : SelectorActionStatus.NO_MATCH,
      matched: matched.length,
      changed,
      workflowIds: matched.map((w) => w.id),
    };
  }
}
