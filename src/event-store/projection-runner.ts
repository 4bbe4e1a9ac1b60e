import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { IEventHandler } from '@nestjs/cqrs';
import { FAULTS } from '../shared/faults.js';
import { EVENT_STORE, type EventStore, RecordedEvent, Subscription } from './event-store.port.js';
import { DurableProjection, EventRegistry, PROJECTION_TYPES, READ_MODEL_TYPES, type StoredEvent } from './event-registry.js';
import { READ_MODEL_DB, ReadModelDb } from './read-model-db.js';
import { READ_MODELS_CHECKPOINT, ReadModelFolder } from './read-model-folder.js';
import { notePosition } from './request-position.js';
import { openingStatements } from './sqlite/better-sqlite3.js';

export { READ_MODELS_CHECKPOINT };
/** Largest batch folded in one transaction while live. */
const MAX_BATCH = 1000;
/** In-flight streams replayed per bulk read at start-up (`rebuildInMemory`). */
const REPLAY_STREAMS = 500;

const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 5000;

/** CPU time (user and system) of this process since `since`, in ms. */
const cpuMs = (since: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(since);
  return Math.round((used.user + used.system) / 1000);
};

/** An in-memory handler with `load()` rebuilds itself from its own tables at start. */
interface Loadable {
  load(): void;
}

/**
 * Feeds every read model of this instance from one subscription to the global log.
 *
 * - Durable read models (`@ReadModel`) are rows in the read-model database: each batch of
 *   events (a catch-up page, or what arrived in one tick) is folded in one transaction that
 *   also moves the checkpoint, so a restart resumes from the checkpoint instead of the start of
 *   the log. Instances sharing a file (the embedded store) share the rows and the checkpoint;
 *   a batch is applied only past the checkpoint, so nothing is applied twice.
 * - In-memory handlers (`@Projection`: the engine's index, the schedules' timers) are called
 *   after the batch committed. At start, those without their own `load()` are rebuilt from the
 *   streams still in flight at the checkpoint (not the whole log).
 *
 * A subscription that dies is restarted with backoff from the last batch applied; meanwhile
 * `ready` is false and `/health` answers 503 with the reason. Unknown event types are skipped
 * with one warning per type. Mutations and reads wait for positions here (`waitFor`).
 */
@Injectable()
export class ProjectionRunner implements OnApplicationShutdown {
  private readonly logger = new Logger('Projections');
  private subscription: Subscription | undefined;
  private position = -1n;
  private waiters: Array<{ position: bigint; resolve: () => void }> = [];
  private liveListeners: Array<() => void> = [];
  private live = false;
  private restarting: string | null = null;
  private stopped = false;
  private batch: RecordedEvent[] = [];
  private flushScheduled = false;
  private durable = new Map<string, DurableProjection[]>();
  private memory = new Map<string, IEventHandler<StoredEvent>[]>();
  private readonly warnedTypes = new Set<string>();
  private folder!: ReadModelFolder;
  private dropUntil = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  /** Events folded since start (the replay a restart had to do). */
  private replayed = 0;
  private startedFrom = -1n;
  private catchUpMs: number | null = null;
  private catchUpReplayed: number | null = null;
  private generation = 0;
  private failures = 0;
  private firstCaughtUp: (() => void) | null = null;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_DB) private readonly rm: ReadModelDb,
    private readonly registry: EventRegistry,
    private readonly discovery: DiscoveryService,
  ) {}

  private discover(): { loadables: Loadable[]; durables: DurableProjection[] } {
    const loadables: Loadable[] = [];
    const durables = new Set<DurableProjection>();
    for (const { instance, metatype } of this.discovery.getProviders()) {
      if (!metatype || !instance) continue;
      const readModelTypes: string[] | undefined = Reflect.getMetadata(READ_MODEL_TYPES, metatype);
      for (const type of readModelTypes ?? []) {
        this.durable.set(type, [...(this.durable.get(type) ?? []), instance as DurableProjection]);
        durables.add(instance as DurableProjection);
      }
      const types: string[] | undefined = Reflect.getMetadata(PROJECTION_TYPES, metatype);
      for (const type of types ?? []) this.memory.set(type, [...(this.memory.get(type) ?? []), instance as IEventHandler<StoredEvent>]);
      if (types && typeof (instance as Partial<Loadable>).load === 'function') loadables.push(instance as Loadable);
    }
    return { loadables, durables: [...durables] };
  }

  async start(): Promise<void> {
    if (this.subscription || this.live) return;
    const started = Date.now();
    const cpu = process.cpuUsage();
    const { loadables, durables } = this.discover();
    // Instances starting together on one file create the same tables: a refusal without waiting
    // is tried again (migrations are idempotent).
    for (const projection of durables) openingStatements(() => projection.migrate());
    this.folder = new ReadModelFolder(this.rm, this.registry, this.durable);

    this.startedFrom = this.rm.checkpoint(READ_MODELS_CHECKPOINT);
    // With a store that reads in bulk, the log up to its head is folded into the durable read
    // models first. In-memory handlers are not fed by it: like after a restart, they are rebuilt
    // below from their own tables (`load()`) and the streams still in flight at the checkpoint,
    // and the subscription then takes over for what was appended meanwhile.
    this.replayed +=
      (await this.folder.catchUp(this.store, {
        rehydrate: (recorded) => this.rehydrate(recorded),
        skipped: (type) => this.warnIfUnknown(type),
        stopped: () => this.stopped,
      })) ?? 0;

    // The rows, the in-flight list and the checkpoint are read at one point of the log.
    // Streams read whole, and streams read from a later revision (a workflow's current run).
    const inFlight: string[] = [];
    const runs: Array<[streamId: string, fromRevision: number]> = [];
    this.rm.db.transaction(() => {
      this.position = this.rm.checkpoint(READ_MODELS_CHECKPOINT);
      for (const loadable of loadables) loadable.load();
      // One push per stream: spreading the list into one call overflows the stack past ~130,000
      // streams, and the service could not start on a store with that many workflows in flight.
      for (const projection of durables) {
        projection.inFlightStreams?.((streamId, from) => (from > 0 ? runs.push([streamId, from]) : inFlight.push(streamId)));
      }
    })();
    const inFlightEvents = await this.rebuildInMemory(inFlight, runs, loadables);
    await new Promise<void>((resolve, reject) => {
      this.firstCaughtUp = () => {
        this.catchUpMs = Date.now() - started;
        this.catchUpReplayed = this.replayed;
        this.logger.log(
          `read models resumed from checkpoint ${this.startedFrom} (${inFlight.length + runs.length} in-flight streams rebuilt in memory from ${inFlightEvents} events); caught up ${this.replayed} events in ${this.catchUpMs} ms (${cpuMs(cpu)} ms of CPU)`,
        );
        this.live = true;
        for (const listener of this.liveListeners) listener();
        resolve();
      };
      this.subscribe(reject);
    });
  }

  /**
   * In-memory handlers that cannot load themselves get the in-flight streams, up to the
   * checkpoint: with a store that reads in bulk, `REPLAY_STREAMS` streams a statement (one index
   * search each, their rows streamed, JSON parsed only where read); else one read a stream.
   */
  private async rebuildInMemory(streams: string[], runs: Array<[streamId: string, fromRevision: number]>, loadables: Loadable[]): Promise<number> {
    let folded = 0;
    const skip = new Set<unknown>(loadables);
    const fold = (recorded: RecordedEvent) => {
      folded++;
      const event = this.rehydrate(recorded);
      for (const handler of (event && this.memory.get(event.type)) || []) {
        if (!skip.has(handler)) this.callMemory(handler, event!);
      }
    };
    if (this.store.replayStreams) {
      for (let i = 0; i < streams.length; i += REPLAY_STREAMS) {
        this.store.replayStreams(streams.slice(i, i + REPLAY_STREAMS), this.position, fold);
        // Lets timers and signals through between slices.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } else {
      for (const streamId of streams) await this.replayStream(streamId, 0, fold);
    }
    // Workflows that continued as new: their current run only, one indexed read each.
    for (const [streamId, from] of runs) await this.replayStream(streamId, from, fold);
    return folded;
  }

  private async replayStream(streamId: string, fromRevision: number, fold: (recorded: RecordedEvent) => void): Promise<void> {
    for (const recorded of await this.store.readStream(streamId, fromRevision > 0 ? { fromRevision: BigInt(fromRevision) } : undefined)) {
      if (recorded.position > this.position) break;
      fold(recorded);
    }
  }

  private subscribe(onFirstError?: (error: Error) => void): void {
    const generation = ++this.generation;
    this.subscription = this.store.subscribe((recorded) => this.receive(recorded, generation), {
      after: this.position < 0n ? undefined : this.position,
      onCaughtUp: () => {
        // Everything read so far must be folded before the caller is told.
        try {
          this.flush();
        } catch (error) {
          return this.died(error as Error);
        }
        this.failures = 0;
        if (this.restarting !== null) {
          this.logger.log(`projection subscription restarted at position ${this.position}`);
          this.restarting = null;
        }
        const first = this.firstCaughtUp;
        this.firstCaughtUp = null;
        first?.();
      },
      onError: (error) => {
        if (generation !== this.generation) return;
        if (!this.live && onFirstError && this.restarting === null) return onFirstError(error);
        this.died(error);
      },
    });
  }

  private receive(recorded: RecordedEvent, generation: number): void {
    if (generation !== this.generation) return;
    this.batch.push(recorded);
    if (this.batch.length >= MAX_BATCH) this.flush();
    else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        try {
          this.flush();
        } catch (error) {
          this.died(error as Error);
        }
      });
    }
  }

  /** Folds the pending batch: durable rows and checkpoint in one transaction, then memory. */
  private flush(): void {
    const events = this.batch;
    if (events.length === 0) return;
    this.injectDrop(events);
    const stored = events.map((recorded) => this.rehydrate(recorded));
    this.folder.apply(stored, events[events.length - 1].position);
    this.batch = [];
    for (const event of stored) {
      const handlers = event && this.memory.get(event.type);
      if (handlers) for (const handler of handlers) this.callMemory(handler, event!);
    }
    this.replayed += events.length;
    this.advance(events[events.length - 1].position);
  }

  private callMemory(handler: IEventHandler<StoredEvent>, event: StoredEvent): void {
    try {
      handler.handle(event);
    } catch (error) {
      this.logger.error(`${handler.constructor.name} failed on ${event.type} at position ${event.recorded.position}: ${(error as Error).stack}`);
    }
  }

  private rehydrate(recorded: RecordedEvent): StoredEvent | null {
    const event = this.registry.rehydrate(recorded);
    if (!event && !this.warnedTypes.has(recorded.type)) {
      this.warnedTypes.add(recorded.type);
      this.logger.warn(`skipping events of unknown type ${recorded.type} (first at position ${recorded.position}, stream ${recorded.streamId})`);
    }
    return event;
  }

  /** An event type passed over while catching up: warned once if no one registered it. */
  private warnIfUnknown(type: string): void {
    if (this.warnedTypes.has(type) || this.registry.isKnown(type)) return;
    this.warnedTypes.add(type);
    this.logger.warn(`skipping events of unknown type ${type}`);
  }

  /** TEST-ONLY: `BATON_FAULTS=projection-drop:<type>:<ms>`. */
  private injectDrop(events: RecordedEvent[]): void {
    if (FAULTS.projectionDrop.size === 0) return;
    if (Date.now() < this.dropUntil) throw new Error('injected fault (BATON_FAULTS): projection subscription still failing');
    for (const event of events) {
      const ms = FAULTS.projectionDrop.get(event.type);
      if (ms === undefined) continue;
      FAULTS.projectionDrop.delete(event.type);
      this.dropUntil = Date.now() + ms;
      throw new Error(`injected fault (BATON_FAULTS): projection subscription dropped at ${event.type} (position ${event.position})`);
    }
  }

  /** The subscription (or a batch) failed: close it, report not ready, and restart with backoff. */
  private died(error: Error): void {
    if (this.stopped) return;
    const attempt = this.failures++;
    this.batch = [];
    this.flushScheduled = false;
    const subscription = this.subscription;
    this.subscription = undefined;
    this.generation++;
    void subscription?.close().catch(() => undefined);
    this.restarting = `projection subscription stopped at position ${this.position}: ${error.message}`;
    const delay = Math.min(BACKOFF_MIN_MS * 2 ** attempt, BACKOFF_MAX_MS);
    this.logger.error(`${this.restarting}; restarting in ${delay} ms`);
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      if (this.stopped) return;
      try {
        this.subscribe();
      } catch (e) {
        this.died(e as Error);
      }
    }, delay);
    this.restartTimer.unref?.();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    await this.subscription?.close();
    for (const waiter of this.waiters) waiter.resolve();
    this.waiters = [];
  }

  /** Caught up once since start. */
  get isLive(): boolean {
    return this.live;
  }

  /** Live and not restarting a dead subscription; `notReadyReason` says why not. */
  get ready(): boolean {
    return this.live && this.restarting === null;
  }

  get notReadyReason(): string | null {
    if (!this.live) return 'read models are catching up with the log';
    return this.restarting;
  }

  /** What the last start did: the checkpoint it resumed from and how many events it folded to catch up. */
  get startInfo(): { resumedFrom: string; replayedEvents: number | null; catchUpMs: number | null } {
    return { resumedFrom: this.startedFrom.toString(), replayedEvents: this.catchUpReplayed, catchUpMs: this.catchUpMs };
  }

  /** Runs `listener` once the read models have caught up (at once if they already have). */
  onLive(listener: () => void): void {
    if (this.live) listener();
    else this.liveListeners.push(listener);
  }

  get checkpoint(): bigint {
    return this.position;
  }

  /** Resolves once every event up to `position` has been projected. */
  waitFor(position: bigint): Promise<void> {
    notePosition(position);
    if (position <= this.position) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ position, resolve }));
  }

  private advance(position: bigint): void {
    this.position = position;
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((w) => w.position <= position);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.position > position);
    for (const waiter of ready) waiter.resolve();
  }
}
