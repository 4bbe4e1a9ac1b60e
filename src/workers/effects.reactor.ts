import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { CommandContext, DeciderRunner } from '../event-store/decider-runner.js';
import { EVENT_STORE, type EventStore, RecordedEvent, Subscription } from '../event-store/event-store.port.js';
import { EventRegistry } from '../event-store/event-registry.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { READ_MODEL_DB, ReadModelDb } from '../event-store/read-model-db.js';
import { ScheduleCreator } from '../schedules/commands/create-schedule.js';
import { BatonError, NotFoundError, TooManyQueuedEventsError } from '../shared/errors.js';
import { derivedUuid, uuidv7 } from '../shared/ids.js';
import { EffectsQueue, HeldEffect } from './effects-queue.js';
import { TaskDispatcher } from '../tasks/commands/dispatch-task/dispatch-task.js';
import { WorkflowDispatcher } from '../workflows/commands/dispatch-workflow/dispatch-workflow.js';
import { SelectorActions } from '../workflows/commands/selector-actions.js';
import { PendingChildren, scopeOf } from '../workflows/pending-children.js';
import { type ExistingWorkflow, WorkflowCommand, WorkflowEventData, type WorkflowState, awaitedRunning, workflowDecider } from '../workflows/domain/workflow.decider.js';
import { WorkflowsReadModel } from '../workflows/workflows.read-model.js';

export const EFFECTS_CHECKPOINT = 'effects';
const REACTS_TO = new Set(['ChildWorkflowStarted', 'TaskDispatchRequested', 'ControlRequested', 'ScheduleRequested', 'WorkflowCompleted', 'WorkflowFailed', 'WorkflowTerminated']);
/** The events with an effect: those of REACTS_TO, and a continue-as-new that leaves awaited children behind. */
const reactsTo = (event: { type: string; data: unknown }): boolean =>
  REACTS_TO.has(event.type) ||
  (event.type === 'WorkflowContinuedAsNew' && ((event.data as WorkflowEventData['WorkflowContinuedAsNew']).awaitedChildren?.length ?? 0) > 0);
const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 10_000;
const SAVE_EVERY_MS = 200;
/** Effects carried out at once, all apps together (each holds one event and one append in progress). */
const MAX_IN_FLIGHT = 256;
/** Retries of one app attempted at once, at most (see EffectsQueue). */
const MAX_RETRYING_PER_APP = 16;
/**
 * Events held (queued or running) before the subscription waits: by count, and by the size of
 * their data (an event's metadata is small and bounded: counted as EVENT_OVERHEAD_BYTES). A
 * decision of MAX_DECISION_COMMANDS (20,000 by default) fits, so another app's effect recorded
 * after it is read, queued and started while that decision's effects run.
 */
const MAX_HELD_EVENTS = 32_768;
const MAX_HELD_BYTES = 64 * 1024 * 1024;
const EVENT_OVERHEAD_BYTES = 1024;
/**
 * Effects of one app held at most. Past it, the app's further events are not held but read again
 * from the log once it has carried out half of what it holds (`refill`), so one app's backlog, or
 * its effects failing for good, never fill the read-ahead that every app shares.
 */
const MAX_HELD_PER_APP = 4_096;
/** Bytes of one app's effects held at most (as MAX_HELD_BYTES is to MAX_HELD_EVENTS). */
const MAX_HELD_BYTES_PER_APP = 8 * 1024 * 1024;
/** Events read from the log at once when an app's effects are read again. */
const REFILL_PAGE = 1_000;
/** ...and at least this many, however little room the app has. */
const REFILL_MIN_PAGE = 64;

/** The reactor's bounds (tests lower them). */
export interface EffectsLimits {
  maxInFlight: number;
  maxHeldEvents: number;
  maxHeldBytes: number;
  maxHeldPerApp: number;
  maxHeldBytesPerApp: number;
  maxRetryingPerApp: number;
  /** Longest delay before an effect is tried again (the delay doubles from 100 ms up to it). */
  maxBackoffMs: number;
}

/** An app whose effects went past `maxHeldPerApp`: its events from `from` on are in the log only. */
interface Overflow {
  from: bigint;
  refilling: boolean;
}

/**
 * What a workflow's recorded decisions cause outside its own stream: starting children and
 * standalone tasks, acting on selected workflows, and telling a parent that its child ended.
 *
 * A checkpointed reactor: its own subscription to the log, from the checkpoint kept in the
 * read-model database (`rm_checkpoints.effects`). It serves apps fairly: the subscription reads
 * ahead while effects run, each event that causes an effect joins a FIFO queue for its app
 * (`metadata.appId`, the app the effect acts in), and effects start round robin across the apps
 * whose next effect may start, up to MAX_IN_FLIGHT at once (`EffectsQueue`): one app's decision
 * of thousands of dispatches no longer holds the effects other apps recorded after it. What is
 * held is bounded (MAX_HELD_EVENTS, MAX_HELD_BYTES); when it is full, the subscription's handler
 * waits, and both stores wait for the handler before they deliver the next event. Effects that
 * create a stream (a child, a standalone task, a schedule) or resolve a parent's child are
 * independent of each other and run side by side, so their appends share the group commit. A
 * `ControlRequested` acts on workflows found through the read models of its own app (selectors
 * are scoped to the app, and children are created in their parent's app), which must include
 * what its app's effects before it created (a child it then signals): it starts once every
 * earlier effect of its app is finished, and its app's later effects start once it is finished;
 * other apps go on. An effect that fails for a transient reason (the store did not answer,
 * anything not a domain error) is retried with backoff, without holding one of the slots while
 * it waits (its app's later effects go on), at most MAX_RETRYING_PER_APP retries of one app at
 * once; one that fails with a domain error is skipped. The checkpoint moves only past events
 * whose effects were carried out: just before the oldest effect, of any app, not finished
 * (queued, running or backing off), and before the first event passed over of an app past its
 * own bound (MAX_HELD_PER_APP: such an app's later events are read again from the log, `refill`).
 * Every effect is a command whose target decider recognises its cause as already applied (a
 * child or task with a deterministic id exists; a parent's child is already resolved; a
 * delivered event's `causeId`; a recorded `ControlApplied`), so replaying from an older
 * checkpoint, or running the reactor on several instances at once, yields one event on any store.
 */
@Injectable()
export class EffectsReactor implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Effects');
  private subscription: Subscription | undefined;
  private stopped = false;
  private position = -1n;
  /** The last event handed to the reactor (its effect queued, or none needed); a restarted subscription goes on after it. */
  private read = -1n;
  /** Set before the reactor starts (tests lower them). */
  limits: EffectsLimits = {
    maxInFlight: MAX_IN_FLIGHT,
    maxHeldEvents: MAX_HELD_EVENTS,
    maxHeldBytes: MAX_HELD_BYTES,
    maxHeldPerApp: MAX_HELD_PER_APP,
    maxHeldBytesPerApp: MAX_HELD_BYTES_PER_APP,
    maxRetryingPerApp: MAX_RETRYING_PER_APP,
    maxBackoffMs: BACKOFF_MAX_MS,
  };
  private queue!: EffectsQueue<RecordedEvent>;
  /** Apps past `maxHeldPerApp`, and the smallest of their `from` (the checkpoint stays before it). */
  private readonly overflow = new Map<string, Overflow>();
  private overflowFrom: bigint | undefined;
  /** A refill stopped for lack of room (`refillRoom`) since room was last found. */
  private wasFull = false;
  /** Events read again from the log for apps past their bound (for tests). */
  refilled = 0;
  /** Attempts under way. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Delays of effects backing off after a failed attempt. */
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  /** Wakes the subscription's handler waiting for room in the queue. */
  private wakeReader: (() => void) | undefined;
  private savedAt = 0;
  private saveTimer: NodeJS.Timeout | undefined;
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
    private readonly children: PendingChildren,
  ) {}

  onApplicationBootstrap(): void {
    this.projections.onLive(() => this.start());
  }

  get checkpoint(): bigint {
    return this.position;
  }

  /** Effects queued, running or backing off (for /health). */
  get held(): number {
    return this.queue?.held ?? 0;
  }

  /** Effects backing off after a failed attempt (for /health). */
  get backingOff(): number {
    return this.queue?.backingOff ?? 0;
  }

  /** What is held, by state (for /metrics). */
  get heldByState(): { queued: number; running: number; backingOff: number } {
    const { held, running, backingOff } = this.queue ?? { held: 0, running: 0, backingOff: 0 };
    return { queued: held - running - backingOff, running, backingOff };
  }

  /** Apps whose effects went past their bound and are read again from the log (for /health). */
  get appsOverBound(): number {
    return this.overflow.size;
  }

  private start(): void {
    if (this.stopped || this.subscription) return;
    this.queue ??= new EffectsQueue<RecordedEvent>({
      maxRunning: this.limits.maxInFlight,
      maxHeldEvents: this.limits.maxHeldEvents,
      maxHeldBytes: this.limits.maxHeldBytes,
      maxRetryingPerApp: this.limits.maxRetryingPerApp,
    });
    if (this.read < 0n) this.read = this.position = this.rm.checkpoint(EFFECTS_CHECKPOINT);
    this.children.readTo(this.read);
    // After a dropped subscription, what was read is still queued or done: go on after it.
    this.subscription = this.store.subscribe((event) => this.handle(event), {
      after: this.read < 0n ? undefined : this.read,
      onError: (error) => {
        if (this.stopped) return;
        this.logger.error(`effects subscription stopped after ${this.read} (checkpoint ${this.position}): ${error.message}; restarting in 1 s`);
        this.subscription = undefined;
        setTimeout(() => this.start(), 1000).unref();
      },
    });
  }

  private async handle(recorded: RecordedEvent): Promise<void> {
    if (this.stopped || recorded.position <= this.read) return;
    const event = this.registry.upcast(recorded);
    if (reactsTo(event)) {
      const app = String(event.metadata.appId ?? '');
      if (!this.overflow.has(app) && this.atBound(app)) {
        // Past its bound: this event and the app's later ones stay in the log until it has room.
        this.overflow.set(app, { from: event.position, refilling: false });
        this.overflowChanged();
      }
      if (!this.overflow.has(app)) {
        // Backpressure: the store delivers the next event once this one is taken.
        while (!this.stopped && this.queue.full) await new Promise<void>((resolve) => (this.wakeReader = resolve));
        if (this.stopped) return;
        this.hold(event, app);
        this.pump();
      }
    }
    this.read = event.position;
    this.children.readTo(event.position);
    this.advance();
  }

  private hold(event: RecordedEvent, app: string): void {
    if (event.type === 'ChildWorkflowStarted') {
      this.children.announce((event.data as WorkflowEventData['ChildWorkflowStarted']).childId, scopeOf(String(event.metadata.appId ?? ''), String(event.metadata.environment ?? '')));
    }
    const bytes = EVENT_OVERHEAD_BYTES + JSON.stringify(event.data ?? null).length;
    this.queue.add(event.position, app, event.type === 'ControlRequested', bytes, event);
  }

  /**
   * Reads the log again for an app past its bound, from its first event not held, holding its
   * events up to its bound (or until the read-ahead is full), in log order: its own FIFO order
   * holds, as its earlier events are all held or done. Once the read reaches the events the
   * subscription has handled, the app leaves the overflow, with no await in between: its next
   * event comes through the subscription and is held as usual.
   */
  private async refill(app: string, over: Overflow): Promise<void> {
    over.refilling = true;
    try {
      // A turn of the event loop first: effects that end at once (no append) and a store that
      // answers at once would otherwise chain finish → read again → finish in microtasks, with
      // no timer, request or retry run in between.
      await new Promise<void>((resolve) => setImmediate(resolve));
      // After an empty read, what the subscription had handled by then: read once more.
      let handledBeforeRead: bigint | undefined;
      for (let after = over.from - 1n; !this.stopped; ) {
        // As many events as the app has room for, a few times over (its events among others'),
        // so that an app with little room does not read a whole page for each effect.
        const room = this.limits.maxHeldPerApp - this.queue.heldOf(app);
        const page = await this.store.readAll({ after, maxCount: Math.min(REFILL_PAGE, Math.max(REFILL_MIN_PAGE, 4 * room)) });
        if (this.stopped || this.overflow.get(app) !== over) return;
        // Handled by the subscription (and passed over for this app) up to here; later events reach it.
        const upTo = this.read;
        if (page.length === 0) {
          // Events up to `upTo` that this read did not see were written after it started (read
          // again), or deleted since (retention: nothing to hold) once a read that started after
          // they were handled still does not see them.
          if (after >= upTo || (handledBeforeRead !== undefined && handledBeforeRead >= upTo)) break;
          handledBeforeRead = upTo;
          continue;
        }
        handledBeforeRead = undefined;
        for (const recorded of page) {
          if (recorded.position > upTo) break;
          after = recorded.position;
          this.refilled++;
          // As `handle` decides: by the upcast event's type (an upcaster may rename a type).
          const event = this.registry.upcast(recorded);
          if (!reactsTo(event) || String(event.metadata.appId ?? '') !== app) continue;
          if (this.atBound(app) || !this.refillRoom()) {
            // Room again later (`refillIfRoom`), from this event on.
            if (!this.atBound(app)) this.wasFull = true;
            over.from = event.position;
            this.overflowChanged();
            this.pump();
            return;
          }
          this.hold(event, app);
        }
        this.pump();
        // The page reached past what the subscription handled: every event up to it was seen.
        if (page[page.length - 1].position >= upTo) break;
        over.from = after + 1n;
        this.overflowChanged();
      }
      if (this.stopped) return;
      // No await since `upTo` was read: the app's next event comes through the subscription, held as usual.
      this.overflow.delete(app);
      this.children.appBehind(app, undefined);
      this.overflowChanged();
      this.advance();
    } catch (error) {
      if (this.stopped) return; // the store closed under a read at shutdown
      this.logger.warn(`reading the log again for app ${app}'s effects failed, retrying in ${this.limits.maxBackoffMs} ms: ${error instanceof Error ? error.message : String(error)}`);
      setTimeout(() => this.refillIfRoom(app), this.limits.maxBackoffMs).unref();
    } finally {
      over.refilling = false;
    }
  }

  /** Reads an app's effects again once it has carried out half of what it may hold, if it went past its bound. */
  private refillIfRoom(app: string): void {
    const over = this.overflow.get(app);
    if (!over || over.refilling || this.stopped || this.atBound(app)) return;
    // Half of the room left beside its effects backing off (which may fail for good, and would
    // otherwise stop the app for good once they are more than half its bound).
    const { maxHeldPerApp, maxHeldBytesPerApp } = this.limits;
    const waiting = this.queue.backingOffOf(app);
    if (this.queue.heldOf(app) - waiting.count > (maxHeldPerApp - waiting.count) / 2) return;
    if (this.queue.heldBytesOf(app) - waiting.bytes > (maxHeldBytesPerApp - waiting.bytes) / 2) return;
    // No room: every app past its bound is tried again once there is (`attempt`).
    if (!this.refillRoom()) this.wasFull = true;
    else void this.refill(app, over);
  }

  /**
   * Room for events read again: the read-ahead plus one app's bound, which the subscription's
   * handler never takes (it waits at `queue.full`), so a refill is not starved by the handler
   * taking every slot freed while its page is read.
   */
  private refillRoom(): boolean {
    const { maxHeldEvents, maxHeldPerApp, maxHeldBytes, maxHeldBytesPerApp } = this.limits;
    return this.queue.held < maxHeldEvents + maxHeldPerApp && this.queue.heldBytes < maxHeldBytes + maxHeldBytesPerApp;
  }

  /** The app holds as many effects, or as many bytes of them, as it may (an app holding none takes one, however large). */
  private atBound(app: string): boolean {
    return this.queue.heldOf(app) >= this.limits.maxHeldPerApp || this.queue.heldBytesOf(app) >= this.limits.maxHeldBytesPerApp;
  }

  private overflowChanged(): void {
    let from: bigint | undefined;
    for (const [app, over] of this.overflow) {
      from = earliest(from, over.from);
      // Lookups in the app wait for its children announced by the events passed over.
      this.children.appBehind(app, over.from);
    }
    this.overflowFrom = from;
  }

  /** Starts what may start now: resumed retries first, then round robin across apps. */
  private pump(): void {
    while (!this.stopped) {
      const effect = this.queue.next();
      if (!effect) return;
      const running: Promise<void> = this.attempt(effect).then(() => {
        this.inFlight.delete(running);
      });
      this.inFlight.add(running);
    }
  }

  /**
   * One attempt at an effect. Carried out, or failed with a domain error (skipped): finished. Failed
   * for a transient reason (the store did not answer, anything not a domain error): it backs off,
   * its slot free for other effects meanwhile, and asks for a slot again after its delay.
   */
  private async attempt(effect: HeldEffect<RecordedEvent>): Promise<void> {
    const event = effect.item;
    try {
      // The read models this effect consults (a child's parent, a selector's workflows) include its cause.
      await this.projections.waitFor(event.position);
      await this.effect(event);
    } catch (error) {
      if (error instanceof BatonError && error.code !== 'STORE_UNAVAILABLE') {
        this.logger.error(`effect of ${event.type} at ${event.position} (${event.streamId}) cannot be carried out, skipped: ${error.message}`);
      } else {
        if (this.stopped) return; // not carried out: the checkpoint stays before it
        this.retries++;
        // Jittered, so that effects that failed together do not all come back in the same instant.
        const delay = Math.round(Math.min(BACKOFF_MIN_MS * 2 ** effect.attempts, this.limits.maxBackoffMs) * (0.5 + Math.random() / 2));
        const attempt = effect.attempts + 1;
        // Attempts 1, 2, 4, 8, ...: an effect failing for good writes a line every few minutes, not every 10 s.
        if ((attempt & (attempt - 1)) === 0) {
          const reason = error instanceof Error ? error.message : String(error);
          this.logger.warn(`effect of ${event.type} at ${event.position} (${event.streamId}) failed (attempt ${attempt}), retrying in ${delay} ms: ${reason}`);
        }
        this.queue.suspend(effect);
        // Its app's effects under way may now be few enough, beside those backing off, to read again.
        if (this.overflow.size > 0) this.refillIfRoom(effect.app);
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer);
          this.queue.resume(effect);
          this.pump();
        }, delay);
        this.retryTimers.add(timer);
        this.pump();
        return;
      }
    }
    this.queue.finish(effect);
    if (event.type === 'ChildWorkflowStarted') this.children.settle((event.data as WorkflowEventData['ChildWorkflowStarted']).childId);
    if (!this.queue.full) {
      this.wakeReader?.();
      this.wakeReader = undefined;
    }
    if (this.overflow.size > 0) {
      this.refillIfRoom(effect.app);
      // A refill stopped for lack of room: that may be what stopped other apps' reads (O(apps past their bound), once per time).
      if (this.wasFull && this.refillRoom()) {
        this.wasFull = false;
        for (const app of this.overflow.keys()) this.refillIfRoom(app);
      }
    }
    this.pump();
    this.advance();
  }

  /** Moves the checkpoint to just before the oldest effect not finished, or an app's first event passed over (or to the last event read). */
  private advance(): void {
    if (this.stopped) return;
    const oldest = earliest(this.queue.oldestUnfinished(), this.overflowFrom);
    const done = oldest === undefined ? this.read : oldest - 1n;
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
    // Effects backing off are not carried out: the checkpoint stays before them.
    for (const timer of this.retryTimers) clearTimeout(timer);
    this.retryTimers.clear();
    // A handler waiting for room returns, so the subscription can close.
    this.wakeReader?.();
    this.wakeReader = undefined;
    await this.subscription?.close();
    // Appends already under way end; nothing new starts (the checkpoint is before what did not run).
    await Promise.all(this.inFlight);
    this.save(true);
  }

  /**
   * Terminates `childIds`, children its parent `parentId` awaited, now that the parent's run that
   * awaited them ended (`ended`). One with that end already, or ended by itself, is left as it is
   * (the decider appends nothing to an ended workflow), so an effect carried out again changes nothing.
   */
  private async endChildren(context: CommandContext, parentId: string, ended: RunEnd, childIds: string[]): Promise<void> {
    const reason =
      ended === 'terminated'
        ? `its parent workflow ${parentId} was terminated`
        : ended === 'completed'
          ? `its parent workflow ${parentId} completed without waiting for it`
          : `its parent workflow ${parentId} continued as new without waiting for it`;
    for (let i = 0; i < childIds.length; i += END_CHILDREN_BATCH) {
      await Promise.all(
        childIds.slice(i, i + END_CHILDREN_BATCH).map((childId) =>
          this.runner
            // A run that continued as new may list a child that failed before its run was told (the
            // news reached the new run, which has no such call): the effect found it failed and left
            // it, so a retried one is left too (else a replay would end what an operator started again).
            .run(`workflow-${childId}`, workflowDecider, { type: 'TerminateWorkflow', reason, unlessRetried: ended === 'continued' }, context, {
              eventId: () => derivedUuid(childId, 'ended with its parent'),
            })
            // Not created yet: its creation (ChildWorkflowStarted's effect) finds the parent ended
            // and ends it. The stream's cached "none" is dropped: kept, it would answer NOT_FOUND to
            // commands for the child on this instance once another instance had created it.
            .catch((error) => {
              if (!(error instanceof NotFoundError)) throw error;
              this.runner.queues.forget(`workflow-${childId}`);
            }),
        ),
      );
    }
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
        // A replay (read models and their effects checkpoint started anew: a new instance next to
        // EventStoreDB, a restore) of a child its parent already saw end: that child ran, and
        // retention may have deleted it since; dispatched again it would run again. Its parent's
        // current run knows the end of every child it started, awaited or not; a child of an
        // earlier run is asked of the store (did retention delete it?).
        const parent = (await this.runner.state(streamId, workflowDecider, context)).state;
        if (parent.status !== 'none' && data.seq >= parent.seqBase) {
          const known = parent.children.get(data.seq);
          if (known !== undefined && known.childId === data.childId && known.status !== 'started') return;
        } else if (await this.store.wasDeleted?.(`workflow-${data.childId}`)) {
          // A child of an earlier run (the parent continued as new since), which the current run
          // does not know: deleted by retention, it was created and ended, and is not created again.
          // The store remembers it while its parent is stored (retention's `owner`); on EventStoreDB
          // the tombstone, whose stream cannot be written again anyway.
          return;
        }
        await this.workflows.dispatch(context, {
          workflowId: data.childId,
          appId: context.appId,
          environment: context.environment,
          name: data.name,
          tag: data.tag,
          input: data.args,
          parent: { workflowId: id, seq: data.seq },
        });
        // The run that awaits it may have ended (terminated, completed, or continued as new)
        // before its child existed: the child is ended with it, as that run's own end could not
        // reach it. A child of the current run only while that run still awaits it: one already
        // told of its end (a replay) has nothing to end.
        if (data.wait) {
          const { state } = await this.runner.state(streamId, workflowDecider, context);
          if (state.status === 'none') return;
          if (data.seq < state.seqBase) {
            // A continue-as-new recorded before it listed (and ended) the old run's children left them running.
            if (state.childrenEndedFrom === undefined || data.seq < state.childrenEndedFrom) return;
            // A retried child is left (`unlessRetried`, as for every 'continued' ending): it had
            // failed, so the run that awaited it was told (or ended) before, and a replay of this
            // effect would otherwise end what an operator started again.
            await this.endChildren(context, id, 'continued', [data.childId]);
            return;
          }
          const ended = endedForGood(state);
          const awaited = ended && state.children.get(data.seq);
          if (ended && awaited && awaited.childId === data.childId && awaited.status === 'started') await this.endChildren(context, id, ended, [data.childId]);
        }
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
          // Checked with the decision that recorded them: re-checked against MAX_PAYLOAD_BYTES, args the
          // decision took (up to MAX_DECISION_BYTES) were refused here and the schedule skipped.
          input: data.args,
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
            ? { type: 'PauseWorkflow', causeId }
            : data.action === 'resume'
              ? { type: 'ResumeWorkflow', causeId }
              : data.action === 'terminate'
                ? { type: 'TerminateWorkflow', reason: `requested by workflow ${id}`, causeId }
                : { type: 'DeliverEvent', name: data.event?.name ?? '', data: data.event?.data ?? [], causeId };
        const result = await this.selectors
          .applyTo(context, data.selector, command, { eventId: (target) => derivedUuid(id, String(data.seq), target) })
          .catch((error) => {
            // A full backlog (MAX_QUEUED_EVENTS) refused the event: a { name } selector's other
            // workflows still recorded it, and the error says how many (an { id } one matched its one).
            if (error instanceof TooManyQueuedEventsError) {
              const picked = error.details as { matched?: number; changed?: number };
              return { matched: picked.matched ?? 1, changed: picked.changed ?? 0 };
            }
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
        // Its parent first (it may be waiting on this result), then its own children.
        await this.resolveParent(recorded, id, context);
        // Children it awaits (`ctx.workflow`) still running exist for this workflow alone: ended
        // with it when it is terminated or completes (it never runs again). A failed workflow
        // may be retried and still want their results: they go on. Children it dispatched
        // (`ctx.dispatch`) live their own lives.
        if (recorded.type !== 'WorkflowFailed') {
          // The state this instance holds, when it has the end already: children join a run only
          // before it ends, so it lists them all (a child marked running that ended meanwhile is
          // left as it is by the decider). Else one read of what the stream recorded since.
          const cached = this.runner.queues.peek(streamId)?.state as WorkflowState | undefined;
          const state = endedForGood(cached) ? cached! : (await this.runner.state(streamId, workflowDecider, context)).state;
          const ended = endedForGood(state);
          if (ended) await this.endChildren(context, id, ended, awaitedRunning(state as ExistingWorkflow));
        }
        return;
      }
      case 'WorkflowContinuedAsNew': {
        // The children the old run awaited that still ran: the new run cannot await them.
        const children = (recorded.data as WorkflowEventData['WorkflowContinuedAsNew']).awaitedChildren ?? [];
        if (children.length > 0) await this.endChildren(context, id, 'continued', children);
        return;
      }
    }
  }

  /** Tells the parent of workflow `id`, if it has one, how it ended (`ResolveChild`). */
  private async resolveParent(recorded: RecordedEvent, id: string, context: CommandContext): Promise<void> {
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
  }
}

/** How a run ended whose awaited children end with it. */
type RunEnd = 'terminated' | 'completed' | 'continued';

/** How a workflow ended that never runs again (terminated or completed: its awaited children end with it); undefined otherwise. */
function endedForGood(state: WorkflowState | undefined): 'terminated' | 'completed' | undefined {
  return state?.status === 'terminated' || state?.status === 'completed' ? state.status : undefined;
}

/** How many children of an ended workflow are terminated at once (their appends share the group commit). */
const END_CHILDREN_BATCH = 256;

/** The smaller of two positions, either of which may be absent. */
function earliest(a: bigint | undefined, b: bigint | undefined): bigint | undefined {
  return a === undefined || (b !== undefined && b < a) ? b : a;
}
