import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { CommandContext, DeciderRunner } from '../event-store/decider-runner.js';
import { EVENT_STORE, type EventStore, RecordedEvent, Subscription } from '../event-store/event-store.port.js';
import { EventRegistry } from '../event-store/event-registry.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { READ_MODEL_DB, ReadModelDb } from '../event-store/read-model-db.js';
import { ScheduleCreator } from '../schedules/commands/create-schedule.js';
import { BatonError } from '../shared/errors.js';
import { derivedUuid, uuidv7 } from '../shared/ids.js';
import { TaskDispatcher } from '../tasks/commands/dispatch-task/dispatch-task.js';
import { WorkflowDispatcher } from '../workflows/commands/dispatch-workflow/dispatch-workflow.js';
import { SelectorActions } from '../workflows/commands/selector-actions.js';
import { WorkflowCommand, WorkflowEventData, workflowDecider } from '../workflows/domain/workflow.decider.js';
import { WorkflowsReadModel } from '../workflows/workflows.read-model.js';

export const EFFECTS_CHECKPOINT = 'effects';
const REACTS_TO = new Set(['ChildWorkflowStarted', 'TaskDispatchRequested', 'ControlRequested', 'ScheduleRequested', 'WorkflowCompleted', 'WorkflowFailed', 'WorkflowTerminated']);
const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 10_000;
const SAVE_EVERY_MS = 200;
/** Effects carried out at once (each holds one event and one append in progress). */
const MAX_IN_FLIGHT = 256;

/**
 * What a workflow's recorded decisions cause outside its own stream: starting children and
 * standalone tasks, acting on selected workflows, and telling a parent that its child ended.
 *
 * A checkpointed reactor: its own subscription to the log, from the checkpoint kept in the
 * read-model database (`rm_checkpoints.effects`), in order. Effects that create a stream (a
 * child, a standalone task, a schedule) or resolve a parent's child are independent of each
 * other and run side by side, up to MAX_IN_FLIGHT at once, so their appends share the group
 * commit: a decision that dispatches thousands of tasks no longer costs one commit (and one
 * read-model wait) per task, one after the other, while every other app's effects wait behind
 * it. A `ControlRequested` acts on workflows found through the read models, which must include
 * what the effects before it created (a child it then signals): it waits for every effect before
 * it, and nothing after it starts until it is done. An effect that fails for a transient reason
 * (the store did not answer, anything not a domain error) is retried with backoff; the
 * checkpoint moves only past events whose effects were carried out (just before the oldest
 * effect still running). Every effect is a command whose target decider
 * recognises its cause as already applied (a child or task with a deterministic id exists; a
 * parent's child is already resolved; a delivered event's `causeId`; a recorded
 * `ControlApplied`), so replaying from an older checkpoint, or running the reactor on several
 * instances at once, yields one event on any store.
 */
@Injectable()
export class EffectsReactor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Effects');
  private subscription: Subscription | undefined;
  private stopped = false;
  private position = -1n;
  /** The last event handed to the reactor (its effect started, done, or none needed). */
  private handled = -1n;
  /** Effects being carried out, by their event's position, oldest first. */
  private readonly inFlight = new Map<bigint, Promise<void>>();
  private savedAt = 0;
  private saveTimer: NodeJS.Timeout | undefined;
  private readonly wakeRetries = new Set<() => void>();
  /** Effects retried after a failure since start (for /health and tests). */
  retries = 0;

  constructor(
    private readonly runner: DeciderRunner,
    private readonly workflows: WorkflowDispatcher,
    private readonly tasks: TaskDispatcher,
    private readonly selectors: SelectorActions,
    private readonly projections: ProjectionRunner,
    private readonly readModel: WorkflowsReadModel,
    private readonly registry: EventRegistry,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_DB) private readonly rm: ReadModelDb,
    private readonly schedules: ScheduleCreator,
  ) {}

  onApplicationBootstrap(): void {
    this.projections.onLive(() => this.start());
  }

  get checkpoint(): bigint {
    return this.position;
  }

  private start(): void {
    if (this.stopped || this.subscription) return;
    this.position = this.rm.checkpoint(EFFECTS_CHECKPOINT);
    this.subscription = this.store.subscribe((event) => this.handle(event), {
      after: this.position < 0n ? undefined : this.position,
      onError: (error) => {
        if (this.stopped) return;
        this.logger.error(`effects subscription stopped at ${this.position}: ${error.message}; restarting in 1 s`);
        this.subscription = undefined;
        setTimeout(() => this.start(), 1000).unref();
      },
    });
  }

  private async handle(recorded: RecordedEvent): Promise<void> {
    if (this.stopped) return;
    const event = this.registry.upcast(recorded);
    if (REACTS_TO.has(event.type)) {
      const barrier = event.type === 'ControlRequested';
      if (barrier) await Promise.all(this.inFlight.values());
      else {
        // Not once stopped: an effect cut short stays listed (the checkpoint stays before it), and racing it would spin.
        while (!this.stopped && this.inFlight.size >= MAX_IN_FLIGHT) await Promise.race(this.inFlight.values());
      }
      if (this.stopped) return;
      const running = this.carryOut(event).then((done) => {
        if (!done) return; // stopped before it was carried out: the checkpoint stays before it
        this.inFlight.delete(event.position);
        this.advance();
      });
      this.inFlight.set(event.position, running);
      if (barrier) await running;
    }
    this.handled = event.position;
    this.advance();
  }

  /** Carries an event's effect out, retrying transient failures; false when the reactor stopped first. */
  private async carryOut(event: RecordedEvent): Promise<boolean> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        // The read models this effect consults (a child's parent, a selector's workflows) include its cause.
        await this.projections.waitFor(event.position);
        await this.effect(event);
        return true;
      } catch (error) {
        if (error instanceof BatonError && error.code !== 'STORE_UNAVAILABLE') {
          this.logger.error(`effect of ${event.type} at ${event.position} (${event.streamId}) cannot be carried out, skipped: ${error.message}`);
          return true;
        }
        this.retries++;
        const delay = Math.min(BACKOFF_MIN_MS * 2 ** attempt, BACKOFF_MAX_MS);
        this.logger.warn(`effect of ${event.type} at ${event.position} (${event.streamId}) failed, retrying in ${delay} ms: ${(error as Error).message}`);
        await new Promise<void>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            this.wakeRetries.delete(wake);
            resolve();
          };
          const timer = setTimeout(wake, delay);
          this.wakeRetries.add(wake);
        });
      }
    }
    return false;
  }

  /** Moves the checkpoint to just before the oldest effect still running (or to the last event handled). */
  private advance(): void {
    if (this.stopped) return;
    const oldest = this.inFlight.keys().next();
    const done = oldest.done ? this.handled : oldest.value - 1n;
    if (done > this.position) {
      this.position = done;
      this.save();
    }
  }

  /** Persists the checkpoint at most every SAVE_EVERY_MS (a replay from an older one is harmless). */
  private save(force = false): void {
    const now = Date.now();
    if (force || now - this.savedAt >= SAVE_EVERY_MS) {
      clearTimeout(this.saveTimer);
      this.saveTimer = undefined;
      this.savedAt = now;
      if (this.position >= 0n && this.rm.db.open) this.rm.saveCheckpoint(EFFECTS_CHECKPOINT, this.position);
    } else if (!this.saveTimer) {
      this.saveTimer = setTimeout(() => this.save(true), SAVE_EVERY_MS);
      this.saveTimer.unref();
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    for (const wake of [...this.wakeRetries]) wake();
    await this.subscription?.close();
    // Appends already under way end; nothing new starts (the checkpoint is before what did not run).
    await Promise.all(this.inFlight.values());
    this.save(true);
  }

  private async effect(recorded: RecordedEvent): Promise<void> {
    const { streamId, metadata } = recorded;
    const id = streamId.slice(streamId.indexOf('-') + 1);
    const context: CommandContext = {
      actor: 'system',
      appId: String(metadata.appId ?? ''),
      environment: String(metadata.environment ?? ''),
      correlationId: String(metadata.correlationId ?? uuidv7()),
      causationId: recorded.id,
    };
    switch (recorded.type) {
      case 'ChildWorkflowStarted': {
        const data = recorded.data as WorkflowEventData['ChildWorkflowStarted'];
        await this.workflows.dispatch(context, {
          workflowId: data.childId,
          appId: context.appId,
          environment: context.environment,
          name: data.name,
          tag: data.tag,
          input: data.args,
          parent: { workflowId: id, seq: data.seq },
        });
        return;
      }
      case 'TaskDispatchRequested': {
        const data = recorded.data as WorkflowEventData['TaskDispatchRequested'];
        await this.tasks.dispatch(context, {
          taskId: data.taskId,
          appId: context.appId,
          environment: context.environment,
          name: data.name,
          args: data.args,
          parent: { workflowId: id, seq: data.seq },
        });
        return;
      }
      case 'ScheduleRequested': {
        const data = recorded.data as WorkflowEventData['ScheduleRequested'];
        await this.schedules.createFor(context, {
          appId: context.appId,
          environment: context.environment,
          kind: data.kind,
          name: data.name,
          input: JSON.stringify(data.args),
          tag: data.tag,
          cron: data.cron,
          timezone: data.timezone,
          overlapPolicy: 'allow',
          catchUpWindowMs: null,
          scheduleId: data.scheduleId,
        });
        return;
      }
      case 'ControlRequested': {
        const data = recorded.data as WorkflowEventData['ControlRequested'];
        const { state } = await this.runner.state(streamId, workflowDecider, context);
        if (state.status !== 'none' && state.controlsApplied?.has(data.seq)) return;
        const causeId = derivedUuid(id, String(data.seq), 'control');
        const command: WorkflowCommand =
          data.action === 'pause'
            ? { type: 'PauseWorkflow' }
            : data.action === 'resume'
              ? { type: 'ResumeWorkflow' }
              : data.action === 'terminate'
                ? { type: 'TerminateWorkflow', reason: `requested by workflow ${id}` }
                : { type: 'DeliverEvent', name: data.event?.name ?? '', data: data.event?.data ?? [], causeId };
        const result = await this.selectors
          .applyTo(context, data.selector, command, { eventId: (target) => derivedUuid(id, String(data.seq), target) })
          .catch((error) => {
            if (error instanceof BatonError && error.code !== 'STORE_UNAVAILABLE') return { matched: 0, changed: 0 };
            throw error;
          });
        await this.runner.run(
          streamId,
          workflowDecider,
          { type: 'RecordControlApplied', seq: data.seq, matched: result.matched, changed: result.changed },
          context,
          { eventId: () => derivedUuid(id, String(data.seq), 'applied') },
        );
        return;
      }
      case 'WorkflowCompleted':
      case 'WorkflowFailed':
      case 'WorkflowTerminated': {
        const child = this.readModel.getById(id);
        if (!child || child.parentId === null || child.parentSeq === null) return;
        const outcome =
          recorded.type === 'WorkflowCompleted'
            ? { ok: true as const, result: (recorded.data as WorkflowEventData['WorkflowCompleted']).result }
            : {
                ok: false as const,
                error:
                  recorded.type === 'WorkflowFailed'
                    ? (recorded.data as WorkflowEventData['WorkflowFailed']).error
                    : { message: `child workflow ${id} was terminated`, name: 'ChildWorkflowTerminated', nonRetryable: true },
              };
        await this.runner.run(
          `workflow-${child.parentId}`,
          workflowDecider,
          { type: 'ResolveChild', seq: child.parentSeq, childId: id, outcome },
          { ...context, appId: child.appId, environment: child.environment },
          { eventId: () => derivedUuid(child.parentId!, String(child.parentSeq), 'resolved') },
        );
        return;
      }
    }
  }
}
