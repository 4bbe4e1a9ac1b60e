import { Decider, DomainEvent } from '../shared/decider.js';
import { uuidv7 } from '../shared/ids.js';
import { readLatestRun } from './read-run.js';
import {
  AppendTooLargeError,
  type EventStore,
  EventMetadata,
  ExpectedRevision,
  NewEvent,
  RecordedEvent,
  WrongExpectedRevisionError,
} from './event-store.port.js';

/** Who asked, and when: becomes the events' metadata. */
export interface CommandContext {
  actor: string;
  /** The token of a worker's request (its actor is the worker id the worker gave). */
  tokenId?: string;
  appId: string;
  environment: string;
  correlationId: string;
  causationId?: string;
}

export interface RunResult<E, S> {
  /** What this command decided (empty when it changed nothing), each with the revision it was appended at. */
  events: E[];
  /** State after this command's events (and those of the commands decided before it in its batch). */
  state: S;
  /** State this command was decided on. */
  before: S;
  /** Global position of the append that carried the events, when there were any. */
  position: bigint | undefined;
  /** Position of the newest event the state reflects (appended or read); undefined for an empty stream. */
  seenPosition: bigint | undefined;
}

export interface QueueOptions {
  /** Deterministic ids for the appended events (for idempotent retries of the same work). */
  eventId?: (event: DomainEvent, index: number) => string;
  /**
   * A refusal or a no-op answer is fine as it is (an opportunistic claim): no look for other
   * writers before answering it.
   */
  opportunistic?: boolean;
  /**
   * The stream is most likely new (a dispatch under a fresh id): on a cache miss, start from the
   * initial state without reading it. The append expects no stream, so if it did exist the
   * conflict reads it and the command is decided again: still correct, one read dearer.
   */
  likelyNew?: boolean;
}

/**
 * A decider whose state can restart from one event: `resetTypes` are events after which the
 * state no longer depends on what came before (`WorkflowContinuedAsNew`). A cold load then reads
 * the stream backwards only as far as the newest of them.
 */
export interface ResettableDecider<C, E extends DomainEvent, S> extends Decider<C, E, S> {
  resetTypes?: ReadonlySet<string>;
}

/**
 * A stream's state as something else already folded it (a read model), with the revision of the
 * last event folded in: a cold load starts there and reads only the events after it. It must be
 * the decider's own fold of the stream up to `revision`; being behind the store is fine (what
 * follows is read), being ahead of it is not.
 */
export interface StreamSnapshot<S> {
  state: S;
  revision: bigint;
}

export type SnapshotSource<S> = (streamId: string) => StreamSnapshot<S> | undefined;

interface Entry {
  decider: Decider<any, any, any>;
  state: unknown;
  revision: ExpectedRevision;
  seenPosition: bigint | undefined;
}

interface Job {
  decider: Decider<any, any, any>;
  command: unknown;
  context: CommandContext;
  options: QueueOptions;
  resolve: (result: RunResult<any, any>) => void;
  reject: (error: unknown) => void;
}

export interface StreamQueueStats {
  cached: number;
  hits: number;
  loads: number;
  /** Cold loads that started from a snapshot (`useSnapshots`) instead of the stream's start. */
  snapshotLoads: number;
  /** Events read back from the store to build or refresh cached states (loads, conflicts, looks). */
  eventsRead: number;
  appends: number;
  commands: number;
  conflicts: number;
  refreshes: number;
}

const MAX_BATCH = 256;
/** A job that only reads the state (`StreamQueues.state`). */
const INSPECT = Symbol('inspect');
const MAX_CONFLICT_ROUNDS = 100;

/**
 * The write path of every stream (DESIGN.md §2): commands to one stream wait in one queue while
 * an append to it is in flight, then are decided together, in order, over the cached
 * `(state, revision)`, and all their events go in one append with that revision as the expected
 * one. The cost of a command therefore does not depend on the length of its stream.
 *
 * The cache is a bounded LRU. When another instance wrote (a revision conflict), or a command is
 * refused on state that may be stale, only the events after the cached revision are read and
 * folded, then the batch is decided again. Events of types the `prepare` hook does not know are
 * skipped (a newer Baton wrote them); their revision still counts.
 */
export class StreamQueues {
  private readonly entries = new Map<string, Entry>();
  private readonly queues = new Map<string, Job[]>();
  private readonly stats: StreamQueueStats = { cached: 0, hits: 0, loads: 0, snapshotLoads: 0, eventsRead: 0, appends: 0, commands: 0, conflicts: 0, refreshes: 0 };
  private readonly snapshots = new Map<Decider<any, any, any>, SnapshotSource<any>>();

  constructor(
    private readonly store: EventStore,
    private readonly options: {
      /** Most streams whose state is kept. */
      capacity?: number;
      /** Upcasts an event read back; null skips it (unknown type). */
      prepare?: (event: RecordedEvent) => RecordedEvent | null;
      /** Wall-clock time for the events' `at` metadata. */
      now?: () => number;
      /** Maps store errors (e.g. unavailability) to the caller's taxonomy. */
      mapError?: (error: unknown) => unknown;
    } = {},
  ) {}

  /** Decides `command` on the stream's current state and appends what it decided. */
  run<C, E extends DomainEvent, S>(
    streamId: string,
    decider: Decider<C, E, S>,
    command: C | ((state: S) => C),
    context: CommandContext,
    options: QueueOptions = {},
  ): Promise<RunResult<E, S>> {
    return new Promise((resolve, reject) => {
      const job: Job = { decider, command, context, options, resolve, reject };
      const queue = this.queues.get(streamId);
      if (queue) {
        queue.push(job);
        return;
      }
      this.queues.set(streamId, [job]);
      void this.drain(streamId);
    });
  }

  /**
   * The stream's current state, in turn with its commands (a look at what follows the cached
   * revision first, so another instance's writes are included). Reads nothing when cached and
   * nobody else wrote.
   */
  async state<S>(streamId: string, decider: Decider<any, any, S>, context: CommandContext): Promise<{ state: S; seenPosition: bigint | undefined }> {
    const result = await this.run(streamId, decider, INSPECT as never, context);
    return { state: result.state, seenPosition: result.seenPosition };
  }

  /**
   * Cold loads of this decider's streams start from `source` when it holds the stream (see
   * `StreamSnapshot`): a stream without reset events (a schedule, one event per firing) then costs
   * the events after the snapshot, not its whole history.
   */
  useSnapshots<S>(decider: Decider<any, any, S>, source: SnapshotSource<S>): void {
    this.snapshots.set(decider, source);
  }

  /** Forgets the cached state of a stream (the next command reads it again). */
  forget(streamId: string): void {
    this.entries.delete(streamId);
  }

  /** The cached state of a stream, if this instance holds it (for diagnostics and tests). */
  peek(streamId: string): { state: unknown; revision: ExpectedRevision } | undefined {
    const entry = this.entries.get(streamId);
    return entry && { state: entry.state, revision: entry.revision };
  }

  get statistics(): StreamQueueStats {
    return { ...this.stats, cached: this.entries.size };
  }

  private async drain(streamId: string): Promise<void> {
    const queue = this.queues.get(streamId)!;
    // Commands issued together (a report and the claim it makes possible) go in one batch.
    await Promise.resolve();
    let limit = MAX_BATCH;
    try {
      while (queue.length > 0) {
        const batch = takeBatch(queue, limit);
        try {
          await this.runBatch(streamId, batch);
        } catch (error) {
          if (error instanceof AppendTooLargeError && batch.length > 1) {
            // The store refused the batch's one append whole (EventStoreDB's MaxAppendSize), and
            // nothing of it was written: its commands may each fit, so fewer at a time, decided again.
            queue.unshift(...batch);
            limit = Math.ceil(batch.length / 2);
            continue;
          }
          this.entries.delete(streamId);
          const mapped = this.options.mapError?.(error) ?? error;
          for (const job of batch) job.reject(mapped);
        }
      }
    } finally {
      this.queues.delete(streamId);
      this.evict();
    }
  }

  private async runBatch(streamId: string, batch: Job[]): Promise<void> {
    const decider = batch[0].decider;
    let entry = await this.entry(streamId, decider, batch[0].options.likelyNew === true);
    let refreshed = false;
    for (let round = 0; ; round++) {
      const now = this.options.now?.() ?? Date.now();
      let state = entry.state;
      let revision = entry.revision;
      const outcomes: Array<{ job: Job; events: DomainEvent[]; before: unknown; after: unknown } | { job: Job; error: unknown }> = [];
      const toAppend: NewEvent[] = [];
      for (const job of batch) {
        const before = state;
        let events: DomainEvent[];
        try {
          const command = typeof job.command === 'function' ? (job.command as (s: unknown) => unknown)(state) : job.command;
          events = command === INSPECT ? [] : job.decider.decide(command, state);
        } catch (error) {
          outcomes.push({ job, error });
          continue;
        }
        const metadata: EventMetadata = {
          ...job.context,
          causationId: job.context.causationId ?? job.context.correlationId,
          at: new Date(now).toISOString(),
        };
        const appended = events.map((event, i) => {
          revision = nextRevision(revision);
          const withRevision = { ...event, revision };
          state = job.decider.evolve(state, withRevision);
          toAppend.push({ id: job.options.eventId?.(event, i) ?? uuidv7(now), type: event.type, data: event.data, metadata });
          return withRevision;
        });
        outcomes.push({ job, events: appended, before, after: state });
      }
      // A refusal, or a command that changes nothing, may come from state another instance has
      // moved on since: look once (one read of what follows the cached revision) before answering.
      // Commands that append need no look: the append's expected revision checks them.
      if (!refreshed && entry.revision !== 'no_stream' && outcomes.some((o) => !o.job.options.opportunistic && ('error' in o || o.events.length === 0))) {
        refreshed = true;
        this.stats.refreshes++;
        if (await this.catchUp(streamId, entry)) continue;
      }
      let position: bigint | undefined;
      let replayed = false;
      if (toAppend.length > 0) {
        try {
          const result = await this.store.append(streamId, toAppend, entry.revision);
          this.stats.appends++;
          position = result.position;
          if (result.nextExpectedRevision === revision) {
            entry.state = state;
            entry.revision = result.nextExpectedRevision;
            entry.seenPosition = result.position;
          } else {
            // Answered as a replay of an earlier append of the same event ids at another
            // revision: another instance carried out the same effect (deterministic ids) first,
            // after events this cache has not seen. What was decided here is not what the stream
            // holds: read what it does instead of keeping a state that would miss those events.
            replayed = true;
            this.stats.conflicts++;
            await this.catchUp(streamId, entry);
          }
        } catch (error) {
          if (error instanceof WrongExpectedRevisionError && round < MAX_CONFLICT_ROUNDS) {
            this.stats.conflicts++;
            refreshed = true;
            // The stream is behind the cache: another instance deleted it (retention), and what
            // follows the cached revision is nothing. Read it again from its start instead of
            // deciding on (and expecting) the revision of a stream that is no longer there. (An
            // append answered as partly stored before says 'any' and where its events are.)
            if (error.actual === 'no_stream' || (error.expected !== 'any' && typeof entry.revision === 'bigint' && error.actual < entry.revision)) {
              entry.state = decider.initialState();
              entry.revision = 'no_stream';
              entry.seenPosition = undefined;
            }
            await this.catchUp(streamId, entry);
            continue;
          }
          throw error;
        }
      }
      this.stats.commands += batch.length;
      for (const outcome of outcomes) {
        if ('error' in outcome) outcome.job.reject(outcome.error);
        else {
          outcome.job.resolve({
            events: outcome.events,
            state: replayed ? entry.state : outcome.after,
            before: outcome.before,
            position: outcome.events.length > 0 ? position : undefined,
            seenPosition: entry.seenPosition,
          });
        }
      }
      return;
    }
  }

  /** The cached entry, or the stream folded from the store (from its newest reset event). */
  private async entry(streamId: string, decider: Decider<any, any, any>, likelyNew = false): Promise<Entry> {
    const cached = this.entries.get(streamId);
    if (cached && cached.decider === decider) {
      this.stats.hits++;
      this.entries.delete(streamId);
      this.entries.set(streamId, cached);
      return cached;
    }
    const entry: Entry = { decider, state: decider.initialState(), revision: 'no_stream', seenPosition: undefined };
    if (likelyNew) {
      this.entries.set(streamId, entry);
      return entry;
    }
    this.stats.loads++;
    const snapshot = this.snapshots.get(decider)?.(streamId);
    if (snapshot) {
      this.stats.snapshotLoads++;
      entry.state = snapshot.state;
      entry.revision = snapshot.revision;
      await this.catchUp(streamId, entry);
    } else {
      const events = await readLatestRun(this.store, streamId, (decider as ResettableDecider<any, any, any>).resetTypes);
      this.stats.eventsRead += events.length;
      this.fold(entry, events);
    }
    this.entries.set(streamId, entry);
    return entry;
  }

  /** Reads and folds the events after the cached revision; true when there were any. */
  private async catchUp(streamId: string, entry: Entry): Promise<boolean> {
    const from = entry.revision === 'no_stream' ? 0n : (entry.revision as bigint) + 1n;
    const events = await this.store.readStream(streamId, { fromRevision: from });
    this.stats.eventsRead += events.length;
    this.fold(entry, events);
    return events.length > 0;
  }

  private fold(entry: Entry, events: RecordedEvent[]): void {
    for (const recorded of events) {
      const event = this.options.prepare ? this.options.prepare(recorded) : recorded;
      if (event) entry.state = entry.decider.evolve(entry.state, { type: event.type, data: event.data, revision: recorded.revision });
      entry.revision = recorded.revision;
      entry.seenPosition = recorded.position;
    }
  }

  private evict(): void {
    const capacity = this.options.capacity ?? 10_000;
    if (this.entries.size <= capacity) return;
    for (const key of this.entries.keys()) {
      if (this.entries.size <= capacity) break;
      if (!this.queues.has(key)) this.entries.delete(key);
    }
  }
}

/** Commands of one decider, in arrival order, up to the batch size (another decider waits its turn). */
function takeBatch(queue: Job[], limit = MAX_BATCH): Job[] {
  let n = 1;
  while (n < queue.length && n < limit && queue[n].decider === queue[0].decider) n++;
  return queue.splice(0, n);
}

function nextRevision(revision: ExpectedRevision): bigint {
  return revision === 'no_stream' ? 0n : (revision as bigint) + 1n;
}
