import type { CommandContext, RunResult } from '../event-store/decider-runner.js';
import { type Clock } from '../shared/clock.js';
import { Decider, DomainEvent } from '../shared/decider.js';
import { uuidv7 } from '../shared/ids.js';
import { MinHeap } from '../workers/min-heap.js';
import { ScheduleSpec, ScheduleState, scheduleDecider } from './domain/schedule.decider.js';
import { ScheduleChange, SchedulesReadModel } from './schedules.read-model.js';

export interface SchedulerLogger {
  log(message: string): void;
  warn(message: string): void;
}

/**
 * Decide on the stream's state and append with its revision, retrying on a conflict: in the
 * service, the per-stream queues of `DeciderRunner`; in the specs, `decideAndAppend`.
 */
export type DecideAndAppend = <C, E extends DomainEvent, S>(
  streamId: string,
  decider: Decider<C, E, S>,
  command: (state: S) => C,
  context: CommandContext,
) => Promise<RunResult<E, S>>;

export interface SchedulerDeps {
  clock: Clock;
  decide: DecideAndAppend;
  /** Fed from the store's log by the caller (a projection, or a subscription in the specs). */
  model: SchedulesReadModel;
  /** Starts the task or workflow of `spec` with id `dispatchId`; a second call with an id is a no-op. */
  dispatch(spec: ScheduleSpec, dispatchId: string, context: CommandContext): Promise<void>;
  /** Whether the workflow instance a schedule dispatched is still not final (unknown ones count as running). */
  isRunning(spec: ScheduleSpec, workflowId: string): boolean;
  /** Resolves once `model` has folded every event up to `position`. */
  caughtUp(position: bigint): Promise<void>;
  logger?: SchedulerLogger;
  /** After a failed firing (store unavailable), try the schedule again this much later. Default 1 s. */
  retryDelayMs?: number;
  /** A fired occurrence whose dispatch is not in the log after this long is dispatched again (same id). Default 10 s. */
  recoverAfterMs?: number;
}

/** Keys in the timer heap: `s:<scheduleId>` (its next due time) and `d:<dispatchId>` (a dispatch to redo). */
type Key = `s:${string}` | `d:${string}`;

const NOOP_BACKOFF_MS = 250;

/**
 * The timing half of schedules, without Nest: one timer (through the injected clock) armed for
 * the earliest due time over every schedule of the read model. When it rings, each due schedule
 * is fired through the decider (read the stream, decide FireDue, append with the revision read);
 * an instance that loses the race to another one reads the occurrence as already handled and
 * does nothing. The winner then dispatches with the occurrence's deterministic id. A fired
 * occurrence whose dispatch never reached the log (the process died in between) is dispatched
 * again at start, or by any instance once `recoverAfterMs` has passed.
 */
export class Scheduler {
  private readonly heap = new MinHeap<{ key: Key; version: number }>();
  private readonly due = new Map<Key, { at: number; version: number }>();
  private readonly notBefore = new Map<Key, number>();
  private readonly inFlight = new Set<Key>();
  private readonly recoverNow = new Set<string>();
  private readonly dirty = new Set<Key>();
  private version = 0;
  private started = false;
  private stopped = false;
  private flushQueued = false;
  private armedAt: number | undefined;
  private cancel: (() => void) | undefined;
  private busy = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly retryDelayMs: number;
  private readonly recoverAfterMs: number;

  constructor(private readonly deps: SchedulerDeps) {
    this.retryDelayMs = deps.retryDelayMs ?? 1000;
    this.recoverAfterMs = deps.recoverAfterMs ?? 10_000;
    deps.model.onChange((change) => this.onChange(change));
  }

  /** Call once the read model has caught up with the log. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    for (const view of this.deps.model.all()) this.refresh(`s:${view.id}`);
    const awaiting = [...this.deps.model.awaiting()];
    if (awaiting.length > 0) this.deps.logger?.log(`dispatching ${awaiting.length} fired occurrence(s) left undispatched by a previous run`);
    for (const entry of awaiting) {
      this.recoverNow.add(entry.dispatchId);
      this.refresh(`d:${entry.dispatchId}`);
    }
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
    this.cancel = undefined;
    this.armedAt = undefined;
  }

  /** Resolves when no firing or dispatch is under way (specs use it between clock steps). */
  whenIdle(): Promise<void> {
    if (this.busy === 0 && !this.flushQueued) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** When the schedule is due next, as this instance sees it (for tests and diagnostics). */
  dueAt(scheduleId: string): number | undefined {
    return this.due.get(`s:${scheduleId}`)?.at;
  }

  private onChange(change: ScheduleChange): void {
    if (!this.started || this.stopped) return;
    this.dirty.add(change.kind === 'awaiting' ? `d:${change.dispatchId}` : `s:${change.scheduleId}`);
    // After the current event has reached every projection (the workflows read model included).
    if (!this.flushQueued) {
      this.flushQueued = true;
      queueMicrotask(() => {
        this.flushQueued = false;
        const keys = [...this.dirty];
        this.dirty.clear();
        for (const key of keys) this.refresh(key);
        this.settle();
      });
    }
  }

  private computeDue(key: Key): number | undefined {
    const floor = this.notBefore.get(key) ?? -Infinity;
    if (key.startsWith('d:')) {
      const id = key.slice(2);
      const entry = this.deps.model.awaitingFor(id);
      if (!entry) {
        this.notBefore.delete(key);
        this.recoverNow.delete(id);
        return undefined;
      }
      const at = this.recoverNow.has(id) ? this.deps.clock.now() : entry.firedAt + this.recoverAfterMs;
      return Math.max(at, floor);
    }
    const view = this.deps.model.getById(key.slice(2));
    if (!view || view.state.status !== 'active') {
      this.notBefore.delete(key);
      return undefined;
    }
    const { state } = view;
    let at = this.deps.model.nextFireAt(view) ?? undefined;
    if (state.buffered !== null && state.lastDispatchId !== null && !this.deps.isRunning(state.spec, state.lastDispatchId)) {
      at = this.deps.clock.now();
    }
    return at === undefined ? undefined : Math.max(at, floor);
  }

  private refresh(key: Key): void {
    if (!this.started || this.stopped || this.inFlight.has(key)) return;
    const at = this.computeDue(key);
    const current = this.due.get(key);
    if (current?.at === at) return;
    if (at === undefined) {
      this.due.delete(key);
      return;
    }
    const version = ++this.version;
    this.due.set(key, { at, version });
    this.heap.push(at, { key, version });
    // Stale entries (a schedule deleted, paused or rescheduled since) are skipped when they reach
    // the top, which a yearly schedule's did after a year: dropped once the heap has doubled.
    if (this.heap.overgrown) this.heap.retain((_, entry) => this.due.get(entry.key)?.version === entry.version);
    this.arm();
  }

  private peek(): number | undefined {
    for (let top = this.heap.peek(); top; top = this.heap.peek()) {
      if (this.due.get(top.value.key)?.version === top.value.version) return top.key;
      this.heap.pop();
    }
    return undefined;
  }

  private arm(): void {
    if (this.stopped) return;
    const at = this.peek();
    if (at === undefined || (this.armedAt !== undefined && this.armedAt <= at)) return;
    this.cancel?.();
    this.armedAt = at;
    if (at <= this.deps.clock.now()) {
      // Due already: wake on the next turn (a manual clock only rings on its next step).
      this.busy++;
      const immediate = setImmediate(() => {
        this.busy--;
        this.wake();
        this.settle();
      });
      this.cancel = () => {
        clearImmediate(immediate);
        this.busy--;
        this.settle();
      };
    } else {
      this.cancel = this.deps.clock.at(at, () => this.wake());
    }
  }

  private wake(): void {
    this.armedAt = undefined;
    this.cancel = undefined;
    if (this.stopped) return;
    const now = this.deps.clock.now();
    for (let at = this.peek(); at !== undefined && at <= now; at = this.peek()) {
      const { key } = this.heap.pop()!.value;
      this.due.delete(key);
      if (this.inFlight.has(key)) continue; // refreshed when that work ends
      this.inFlight.add(key);
      this.track(key.startsWith('s:') ? this.fire(key.slice(2), now) : this.redispatch(key.slice(2), now), key);
    }
    this.arm();
  }

  private track(work: Promise<void>, key: Key): void {
    this.busy++;
    void work.finally(() => {
      this.inFlight.delete(key);
      this.refresh(key);
      this.busy--;
      this.settle();
    });
  }

  private settle(): void {
    if (this.busy > 0 || this.flushQueued) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private async fire(scheduleId: string, now: number): Promise<void> {
    const key: Key = `s:${scheduleId}`;
    const view = this.deps.model.getById(scheduleId);
    if (!view) return;
    const context: CommandContext = {
      actor: 'system',
      appId: view.state.spec.appId,
      environment: view.state.spec.environment,
      correlationId: uuidv7(now),
    };
    try {
      const result = await this.deps.decide(
        `schedule-${scheduleId}`,
        scheduleDecider,
        (state: ScheduleState) => ({ type: 'FireDue' as const, now, previousRunning: this.previousRunning(state) }),
        context,
      );
      if (result.events.length === 0) this.notBefore.set(key, now + NOOP_BACKOFF_MS);
      else this.notBefore.delete(key);
      const spec = result.state.status === 'none' ? undefined : result.state.spec;
      for (const event of result.events) {
        if (event.type !== 'ScheduleFired' || !spec) continue;
        const dispatchKey: Key = `d:${event.data.dispatchId}`;
        this.inFlight.add(dispatchKey);
        try {
          await this.deps.dispatch(spec, event.data.dispatchId, { ...context, actor: `schedule:${scheduleId}` });
        } catch (error) {
          this.deps.logger?.warn(`schedule ${scheduleId}: dispatch ${event.data.dispatchId} failed, will retry: ${(error as Error).message}`);
        } finally {
          // Recovery is for dispatches nobody is doing: leave this one alone for a while.
          this.inFlight.delete(dispatchKey);
          this.notBefore.set(dispatchKey, this.deps.clock.now() + this.recoverAfterMs);
          this.refresh(dispatchKey);
        }
      }
      if (result.seenPosition !== undefined) await this.deps.caughtUp(result.seenPosition);
    } catch (error) {
      this.deps.logger?.warn(`schedule ${scheduleId}: could not fire, retrying in ${this.retryDelayMs} ms: ${(error as Error).message}`);
      this.notBefore.set(key, now + this.retryDelayMs);
    }
  }

  private async redispatch(dispatchId: string, now: number): Promise<void> {
    const key: Key = `d:${dispatchId}`;
    this.recoverNow.delete(dispatchId);
    // Whatever happens, look again only after a while: the log may simply not show the dispatch yet.
    this.notBefore.set(key, now + this.recoverAfterMs);
    const entry = this.deps.model.awaitingFor(dispatchId);
    if (!entry) return;
    // The occurrence was fired: it is dispatched even if its schedule was deleted since.
    const { spec } = entry;
    try {
      await this.deps.dispatch(spec, dispatchId, {
        actor: `schedule:${spec.scheduleId}`,
        appId: spec.appId,
        environment: spec.environment,
        correlationId: uuidv7(now),
      });
    } catch (error) {
      this.deps.logger?.warn(`schedule ${spec.scheduleId}: dispatch ${dispatchId} failed, will retry: ${(error as Error).message}`);
    }
  }

  private previousRunning(state: ScheduleState): boolean {
    if (state.status === 'none' || state.lastDispatchId === null) return false;
    if (state.spec.kind !== 'workflow' || state.spec.overlapPolicy === 'allow') return false;
    return this.deps.isRunning(state.spec, state.lastDispatchId);
  }
}
