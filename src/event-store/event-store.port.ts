/**
 * The one port every part of Baton writes and reads domain events through.
 * Two adapters implement it (embedded SQLite, EventStoreDB) and pass one contract suite
 * (`test/event-store/event-store.contract.ts`).
 */

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What an event carries besides its data: who caused it, for which app, and why. */
export interface EventMetadata {
  correlationId?: string;
  causationId?: string;
  /** Token id, worker id, or 'system'. */
  actor?: string;
  appId?: string;
  environment?: string;
  /** ISO time at which the command that produced the event was decided. */
  at?: string;
  [key: string]: Json | undefined;
}

/** An event the caller wants to append. The id makes appends idempotent. */
export interface NewEvent<Type extends string = string, Data = unknown> {
  /** UUID; appending an event whose id is already stored in the stream is a no-op. */
  id: string;
  type: Type;
  data: Data;
  metadata?: EventMetadata;
}

/** An event as stored: the store assigned its revision, its global position and its time. */
export interface RecordedEvent<Type extends string = string, Data = unknown> {
  id: string;
  type: Type;
  streamId: string;
  /** 0-based index of the event in its stream. */
  revision: bigint;
  /** Position in the global log; strictly increasing in commit order. */
  position: bigint;
  data: Data;
  metadata: EventMetadata;
  /** When the store recorded it. */
  recordedAt: Date;
}

/**
 * What the caller expects the stream to look like before the append:
 * `'any'` (no check), `'no_stream'` (must not exist), `'stream_exists'` (must have at least one
 * event), or the exact revision of its last event.
 */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | bigint;

export interface AppendResult {
  /** Revision of the last event of the stream after the append. */
  nextExpectedRevision: bigint;
  /** Global position of the last appended event. */
  position: bigint;
}

export type Direction = 'forwards' | 'backwards';

export interface ReadStreamOptions {
  direction?: Direction;
  /** First revision to read (inclusive). Defaults to the start (forwards) or the end (backwards). */
  fromRevision?: bigint;
  maxCount?: number;
}

export interface ReadAllOptions {
  /** Read events whose position is strictly greater than this one. Defaults to the beginning. */
  after?: bigint;
  maxCount?: number;
}

export interface SubscribeOptions {
  /** Resume after this position (a checkpoint); omitted means from the beginning of the log. */
  after?: bigint;
  /** Only events whose stream id starts with one of these prefixes (e.g. `workflow-`). */
  streamPrefixes?: string[];
  /** Called after catch-up is done, once the subscription is live. */
  onCaughtUp?: () => void;
  /** Called when the subscription stops on an error it could not recover from. */
  onError?: (error: Error) => void;
}

/** A running subscription; events are delivered to the handler one at a time, in order. */
export interface Subscription {
  /** Position of the last event handed to the handler (the checkpoint to resume from). */
  readonly checkpoint: bigint | undefined;
  close(): Promise<void>;
}

export type EventHandler = (event: RecordedEvent) => void | Promise<void>;

/** One durable write: how many appends (callers) and events it carried, and how long it took. */
export interface CommitInfo {
  appends: number;
  events: number;
  failed: number;
  seconds: number;
}

export interface EventStore {
  /** Short name of the adapter, for logs and /health. */
  readonly kind: string;
  append(streamId: string, events: NewEvent[], expected?: ExpectedRevision): Promise<AppendResult>;
  /** Events of one stream; an unknown stream reads as empty. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /**
   * How many events a stream holds (its last revision plus one, 0 for an unknown stream), without
   * reading any event. Without it, a caller reads the last event.
   */
  streamLength?(streamId: string): Promise<number>;
  /** A page of the global log, in order. */
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Catch up from `after`, then go live. */
  subscribe(handler: EventHandler, options?: SubscribeOptions): Subscription;
  /** Position of the last event in the global log (undefined when empty). */
  headPosition(): Promise<bigint | undefined>;
  /** Throws `StoreUnavailableError` when the store does not answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Removes a whole stream for good (retention): its rows on SQLite, a tombstone on EventStoreDB.
   * Answers how many events were removed when the store knows. Removing an unknown stream is a no-op.
   * With `expectedRevision`, only a stream whose last revision is still that one is removed, in one
   * step (another instance may append to it meanwhile); otherwise nothing is, and the answer is 0.
   * With `remember`, the store keeps that it was removed (`wasDeleted`), as EventStoreDB's
   * tombstone always does; the embedded store keeps one row per such stream. With `remember` and
   * `owner` (another stream: a child's parent, whose log may replay the child's creation), the
   * embedded store keeps it only while the owner has events, and forgets it when the owner is
   * deleted; EventStoreDB's tombstone stays.
   */
  deleteStream?(streamId: string, options?: { expectedRevision?: bigint; remember?: boolean; owner?: string }): Promise<number | undefined>;
  /**
   * Whether `deleteStream` removed this stream (with `remember` on the embedded store; every
   * deleted stream on EventStoreDB). A stream that never existed reads as empty, as a deleted one
   * does; this tells them apart (an idempotency key's earlier generations, which retention may
   * delete, from the generation not yet dispatched).
   */
  wasDeleted?(streamId: string): Promise<boolean>;
  /**
   * Drops what this process holds in memory of a stream another process deleted (retention), so
   * that reads of it go to the store. `deleteStream` does it for the process that deletes.
   */
  forgetStream?(streamId: string): void;
  /**
   * Every event of the streams whose id starts with `prefix` (a category, e.g. `apitoken-`), in
   * log order. The embedded store reads those streams' rows only (a range of its stream index);
   * without it, a caller pages through the whole log.
   */
  readCategory?(prefix: string): Promise<RecordedEvent[]>;
  /** Told after every commit (for metrics); the embedded store commits several appends at once. */
  onCommit?(listener: (commit: CommitInfo) => void): void;
  /**
   * A bulk read for rebuilding read models (synchronous, the embedded store only): up to `maxCount`
   * events of the global log after `after`, but only those `wanted` takes are decoded and returned;
   * the others are passed over (the types `wanted` lacks collected in `skippedTypes`). `last` is
   * the position of the last event read, wanted or not (`after` when none was), and `done` tells
   * the page reached the end of the log.
   */
  readCatchUp?(after: bigint | undefined, maxCount: number, wanted: CatchUpFilter): CatchUpPage;
  /**
   * A bulk read of whole streams for rebuilding in-memory state (synchronous, the embedded store
   * only): calls `visit` with every event of these streams at or before position `upTo`, one
   * stream after another (in no set order), each stream in revision order. Rows are read as they
   * are visited, so memory holds one event at a time; data and metadata are parsed when first
   * read. `visit` must not call the store.
   */
  replayStreams?(streamIds: readonly string[], upTo: bigint, visit: (event: RecordedEvent) => void): void;
}

/**
 * The events a bulk catch-up decodes: their type is a key, and their stream starts with one of
 * its prefixes (null: any stream).
 */
export type CatchUpFilter = ReadonlyMap<string, readonly string[] | null>;

/** One page of `EventStore.readCatchUp`. */
export interface CatchUpPage {
  events: RecordedEvent[];
  /** How many events of the log the page covered, wanted or not. */
  read: number;
  last: bigint | undefined;
  done: boolean;
  skippedTypes: Set<string>;
}

/** The stream is not at the revision the caller expected. */
export class WrongExpectedRevisionError extends Error {
  readonly code = 'WRONG_EXPECTED_REVISION';
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    readonly actual: bigint | 'no_stream',
  ) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${String(actual)}`);
    this.name = 'WrongExpectedRevisionError';
  }
}

/**
 * The store refuses an append this large whole (EventStoreDB's MaxAppendSize, 1 MiB by default);
 * nothing of it was written. Fewer events at a time may fit.
 */
export class AppendTooLargeError extends Error {
  readonly code = 'APPEND_TOO_LARGE';
  constructor(
    readonly streamId: string,
    readonly limit: number | undefined,
    options?: { cause?: unknown },
  ) {
    super(`append to ${streamId}: larger than the store accepts in one append${limit === undefined ? '' : ` (${limit} bytes)`}`, options);
    this.name = 'AppendTooLargeError';
  }
}

/**
 * The stream was deleted for good (EventStoreDB's tombstone: retention) and its name cannot be
 * written again; nothing was written. (An append expecting it to exist is a
 * `WrongExpectedRevisionError` with actual `no_stream` instead, as on the embedded store.)
 */
export class DeletedStreamError extends Error {
  readonly code = 'STREAM_DELETED';
  constructor(
    readonly streamId: string,
    options?: { cause?: unknown },
  ) {
    super(`stream ${streamId} was deleted (retention) and cannot be written again`, options);
    this.name = 'DeletedStreamError';
  }
}

/** The store did not answer (in time). The append may or may not have been written. */
export class StoreUnavailableError extends Error {
  readonly code = 'STORE_UNAVAILABLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/** Injection token for the configured adapter. */
export const EVENT_STORE = Symbol('EVENT_STORE');

/** Revision of the last event of a stream read forwards, or 'no_stream'. */
export function revisionOf(events: RecordedEvent[]): ExpectedRevision {
  return events.length === 0 ? 'no_stream' : events[events.length - 1].revision;
}
