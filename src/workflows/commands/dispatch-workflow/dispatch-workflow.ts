import { Inject, Injectable } from '@nestjs/common';
import { Args, Field, InputType, Mutation, Resolver } from '@nestjs/graphql';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { CommandBus, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { BATON_CONFIG, type BatonConfig } from '../../../config/config.js';
import { CommandContext, DeciderRunner } from '../../../event-store/decider-runner.js';
import { EVENT_STORE, type EventStore, Json } from '../../../event-store/event-store.port.js';
import { AppScopedInput, JsonArrayField, NameField, OptionalTagField } from '../../../graphql/common.types.js';
import { IdempotencyKeyField, IdempotencyKeyHeader, idempotencyKeyOf } from '../../../graphql/idempotency-key.js';
import { BadUserInputError } from '../../../shared/errors.js';
import { dispatchOnce, firstDispatch } from '../../../shared/idempotency.js';
import { contextFor } from '../../../shared/command-context.js';
import { uuidv7 } from '../../../shared/ids.js';
import { parseJsonArray } from '../../../shared/json.js';
import { MAX_NAME_LENGTH, inputLimits } from '../../../shared/limits.js';
import { CurrentPrincipal, assertScope } from '../../../tokens/principal.js';
import type { Principal } from '../../../tokens/tokens.projection.js';
import { workflowDecider } from '../../domain/workflow.decider.js';
import { DispatchWorkflowResult } from '../../workflow.types.js';
import { Requires } from '../../../tokens/roles.js';

/**
 * `v` and any number of digits: the client splits any `_v` and digits off a name, so a
 * date-stamped `Report_v2020012001` arrives as version `v2020012001`. The whole name is bounded.
 */
const VERSION = /^v\d+$/;

@InputType({ description: 'A workflow to run now.' })
export class DispatchWorkflowInput extends AppScopedInput {
  @NameField('Name of the workflow; `Name` runs the highest `Name_vN` a worker serves, `Name_vN` pins a version.')
  name: string;

  @JsonArrayField('Arguments of the workflow, as a string holding a JSON array, e.g. "[\\"ada@example.com\\"]".')
  input: string;

  @OptionalTagField('Optional tag (one per workflow, at most 256 characters), e.g. "email:ada@example.com"; `{ name, tag }` selectors reach the workflow by it.')
  tag?: string | null;

  @VersionField()
  version?: string | null;

  @IdempotencyKeyField('workflow')
  idempotencyKey?: string | null;
}

/**
 * The optional `version` field: what the original service's client sends for a `Name_vN` name
 * (`Signup_v2` arrives as name `Signup`, version `v2`).
 */
export function VersionField(): PropertyDecorator {
  return (target, key) => {
    Field(() => String, {
      nullable: true,
      description:
        'Optional version, `v` and a number, e.g. "v2": runs `Name_v2` exactly as if the name were given as "Name_v2" (this is how the original service\'s client sends a `Name_vN` name). Null or absent: the name alone decides.',
    })(target, key);
    IsOptional()(target, key);
    IsString()(target, key);
    MaxLength(MAX_NAME_LENGTH)(target, key);
    Matches(VERSION, { message: 'must be "v" and a number, e.g. "v2"' })(target, key);
  };
}

/**
 * The workflow name a `name` and optional `version` stand for: `Signup` + `v2` → `Signup_v2`. The
 * original client splits a name at its last `_vN`, so `Order_v2_v3` (version 3 of `Order_v2`)
 * arrives as `Order_v2` + `v3` and is put back together the same way, and so does `Sync_v2_v2`
 * (`Sync_v2` + `v2`): a name with a version is always the name, `_`, and the version.
 */
export function versionedName(name: string, version: string | null | undefined): string {
  if (version == null) return name;
  if (!VERSION.test(version)) throw new BadUserInputError('version', 'must be "v" and a number, e.g. "v2"');
  const versioned = `${name}_${version}`;
  if (versioned.length > MAX_NAME_LENGTH) throw new BadUserInputError('name', `with its version, must be at most ${MAX_NAME_LENGTH} characters`);
  return versioned;
}

export interface WorkflowDispatch {
  appId: string;
  environment: string;
  name: string;
  tag: string | null;
  input: Json[];
  parent?: { workflowId: string; seq: number } | null;
  scheduleId?: string | null;
  /** A deterministic id makes a repeated dispatch (a retried schedule firing, a replayed child) a no-op. */
  workflowId?: string;
}

/**
 * Called in the same tick as a dispatch is queued (before its append): whatever the listener
 * queues on the workflow's stream then goes in the same append (the engine hands the first
 * decision to a parked poll this way).
 */
export type DispatchListener = (dispatch: { appId: string; environment: string; name: string; workflowId: string }) => void;

/** Starts workflows: from the API, from schedules, and as children of other workflows. */
@Injectable()
export class WorkflowDispatcher {
  private listener: DispatchListener | undefined;

  constructor(private readonly runner: DeciderRunner) {}

  /** Sets the one listener told of every dispatch as it is queued (see `DispatchListener`). */
  onDispatch(listener: DispatchListener): void {
    this.listener = listener;
  }

  /** Drops this instance's cached state of a workflow's stream (one retention deleted). */
  forget(workflowId: string): void {
    this.runner.queues.forget(`workflow-${workflowId}`);
  }

  async dispatch(context: CommandContext, dispatch: WorkflowDispatch): Promise<string> {
    return (await this.tryDispatch(context, dispatch)).id;
  }

  /** Dispatches; `created` is false when a workflow with that id already existed (nothing changed). */
  async tryDispatch(context: CommandContext, dispatch: WorkflowDispatch): Promise<{ id: string; created: boolean }> {
    const workflowId = dispatch.workflowId ?? uuidv7();
    const dispatched = this.runner.run(
      `workflow-${workflowId}`,
      workflowDecider,
      { type: 'DispatchWorkflow', ...dispatch, workflowId, tag: dispatch.tag, now: Date.now() },
      context,
      { likelyNew: true },
    );
    this.listener?.({ appId: dispatch.appId, environment: dispatch.environment, name: dispatch.name, workflowId });
    const { events } = await dispatched;
    return { id: workflowId, created: events.length > 0 };
  }
}

export class DispatchWorkflow {
  constructor(
    readonly principal: Principal,
    readonly input: DispatchWorkflowInput,
    /** The Idempotency-Key header, if any. */
    readonly idempotencyHeader: string | null = null,
  ) {}
}


@CommandHandler(DispatchWorkflow)
export class DispatchWorkflowHandler implements ICommandHandler<DispatchWorkflow, DispatchWorkflowResult> {
  constructor(
    private readonly dispatcher: WorkflowDispatcher,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
    @Inject(EVENT_STORE) private readonly store: EventStore,
  ) {}

  async execute({ principal, input, idempotencyHeader }: DispatchWorkflow): Promise<DispatchWorkflowResult> {
    assertScope(principal, input.appId, input.environment);
    const args = parseJsonArray('input', input.input, inputLimits(this.config));
    const name = versionedName(input.name, input.version);
    const key = idempotencyKeyOf(input.idempotencyKey, idempotencyHeader);
    const context = contextFor(principal, input.appId, input.environment);
    const dispatch = (workflowId?: string) =>
      this.dispatcher.tryDispatch(context, { appId: input.appId, environment: input.environment, name, tag: input.tag ?? null, input: args, workflowId });
    if (key === null) return { id: (await dispatch()).id };
    const { id } = await dispatchOnce({
      scope: { kind: 'workflow', appId: input.appId, environment: input.environment, key },
      name,
      now: Date.now(),
      windowMs: this.config.idempotencyWindowMs,
      read: (workflowId) => firstDispatch(this.store, `workflow-${workflowId}`),
      deleted: async (workflowId) => (await this.store.wasDeleted?.(`workflow-${workflowId}`)) ?? false,
      dispatch: async (workflowId) => (await dispatch(workflowId)).created,
      forget: (workflowId) => this.dispatcher.forget(workflowId),
    });
    return { id };
  }
}

@Resolver()
export class DispatchWorkflowResolver {
  constructor(private readonly commands: CommandBus) {}

  @Requires('control')
  @Mutation(() => DispatchWorkflowResult, {
    description: 'Dispatches a workflow (optionally with a tag) and returns its id at once; its first decision is queued for a worker.',
  })
  dispatchWorkflow(
    @CurrentPrincipal() principal: Principal,
    @Args('input', { description: 'The workflow to dispatch: app, environment, name, arguments and an optional tag, version and idempotency key.' }) input: DispatchWorkflowInput,
    @IdempotencyKeyHeader() idempotencyHeader: string | null,
  ): Promise<DispatchWorkflowResult> {
    return this.commands.execute(new DispatchWorkflow(principal, input, idempotencyHeader));
  }
}
