import { createRequire } from 'node:module';
import {
  ANY,
  BACKWARDS,
  CancelledError,
  DeadlineExceededError,
  END,
  EventStoreDBClient,
  FORWARDS,
  MaxAppendSizeExceededError,
  NO_STREAM,
  NotLeaderError,
  START,
  STREAM_EXISTS,
  StreamDeletedError,
  StreamNotFoundError,
  TimeoutError,
  UnavailableError,
  UnknownError,
  WrongExpectedVersionError,
  convertToCommandError,
  excludeSystemEvents,
  jsonEvent,
  streamNameFilter,
  type AllStreamRecordedEvent,
  type AppendExpectedRevision,
  type JSONType,
  type Position,
  type RecordedEvent as EsdbRecordedEvent,
  type StreamingRead,
} from '@eventstore/db-client';
// The client's own Append RPC (one call per append, under its own gRPC deadline), which its
// `appendToStream` uses only when the server lacks BatchAppend or credentials are passed.
import { append as appendOneCall } from '@eventstore/db-client/dist/streams/appendToStream/append.js';
import {
  AppendResult,
  AppendTooLargeError,
  DeletedStreamError,
  EventHandler,
  EventMetadata,
  type EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StoreUnavailableError,
  SubscribeOptions,
  Subscription,
  WrongExpectedRevisionError,
  type CommitInfo,
} from '../event-store.port.js';

export interface EsdbEventStoreOptions {
  /**
   * Deadline of every call to the server (append, read, subscription start); a read's starts
   * again with every event received, so only silence that long fails it.
   */
  callTimeoutMs?: number;
}

interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  /** What the caller is told when the server does not answer. */
  unavailable?: string;
}

const DEFAULT_CALL_TIMEOUT_MS = 10_000;
const PING_TIMEOUT_MS = 2_000;
const PAGE = 512;
/** Events read backwards at a time looking for the head (past trailing system events). */
const HEAD_PAGE = 32;
const MAX_BACKOFF_MS = 5_000;

/**
 * The EventStoreDB / KurrentDB adapter. Streams map 1:1; our `position` is the `$all` commit
 * position, which is unique per event for everything appended over gRPC (each event is its own
 * committed prepare record, so commit == prepare). System events (types starting with `$`) never
 * reach callers. Needs EventStoreDB 22.6 or later (stream reads carry positions).
 *
 * Idempotence is EventStoreDB's own, keyed on our event ids: re-appending the same events with
 * the expected revision of the first attempt (an exact revision or `no_stream`) is guaranteed to
 * write nothing and to answer with the first attempt's revision and position, even after the
 * stream has moved on; with `any` / `stream_exists` it only holds while the ids are still in the
 * server's cache of recent commits.
 *
 * The client has no deadline of its own against a peer that accepts TCP and never answers, so
 * every call here has one and then fails with `StoreUnavailableError`. A read's deadline is one
 * of silence (it starts again with every event received): reading a long stream takes as long
 * as it needs, and no read's deadline grows or shrinks with the stream's history.
 */
export class EsdbEventStore implements EventStore {
  readonly kind = 'esdb';
  private readonly commitListeners: Array<(commit: CommitInfo) => void> = [];

  onCommit(listener: (commit: CommitInfo) => void): void {
    this.commitListeners.push(listener);
  }
  readonly callTimeoutMs: number;
  private readonly connectionString: string;
  private client: EventStoreDBClient;
  private readonly retired = new Map<EventStoreDBClient, NodeJS.Timeout>();
  private readonly subscriptions = new Set<EsdbSubscription>();
  private readonly lifetime = new AbortController();
  /** The newest event `headPosition` has looked at, and the head it found at or before it. */
  private headScan: { newest: Position; head: bigint | undefined } | undefined;

  constructor(url: string, options: EsdbEventStoreOptions = {}) {
    this.connectionString = url.replace(/^kurrent(?:db)?(\+discover)?:\/\//, 'esdb$1://');
    this.callTimeoutMs = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.client = connect(this.connectionString);
  }

  async append(streamId: string, events: NewEvent[], expected: ExpectedRevision = 'any'): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    const started = process.hrtime.bigint();
    const result = await this.call(
      'append',
      async (client) => {
        try {
          // Not `appendToStream`, which sends over BatchAppend: the client keeps the appends in
          // flight on every connection in one module-wide table, and an error on one connection's
          // batch stream (a retired one's, when it is disposed or finally drops) rejects all of
          // them, those in flight on the new connection too, whose answers then throw an uncaught
          // TypeError in the client (the process ends). Its server-features probe, which has no
          // deadline, is not needed either.
          return await appendOneCall.call(
            client,
            streamId,
            events.map((event) =>
              jsonEvent({
                id: event.id,
                type: event.type,
                data: (event.data ?? null) as JSONType,
                metadata: (event.metadata ?? {}) as JSONType,
              }),
            ),
            { expectedRevision: toClientRevision(expected), batchAppendSize: 0, deadline: this.callTimeoutMs },
          );
        } catch (error) {
          if (error instanceof WrongExpectedVersionError) {
            throw new WrongExpectedRevisionError(streamId, expected, error.actualVersion);
          }
          // Tombstoned (retention, perhaps by another instance): it reads as empty, so an append
          // expecting it to exist conflicts with a missing stream, as on the embedded store, and
          // the caller reads it again rather than failing on the client's own error.
          if (error instanceof StreamDeletedError) {
            if (typeof expected === 'bigint' || expected === 'stream_exists') throw new WrongExpectedRevisionError(streamId, expected, 'no_stream');
            throw new DeletedStreamError(streamId, { cause: error });
          }
          if (error instanceof MaxAppendSizeExceededError) throw new AppendTooLargeError(streamId, error.maxAppendSize, { cause: error });
          throw error;
        }
      },
      { unavailable: `append to ${streamId}: no answer from EventStoreDB; the events may or may not have been written` },
    );
    // An idempotent replay may come back without a position: take it from the stored event.
    const position =
      result.position?.commit ??
      (await this.readStream(streamId, { fromRevision: result.nextExpectedRevision, maxCount: 1 }))[0]?.position;
    if (position === undefined) throw new Error(`append to ${streamId}: EventStoreDB returned no position`);
    const commit: CommitInfo = { appends: 1, events: events.length, failed: 0, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
    for (const listener of this.commitListeners) listener(commit);
    return { nextExpectedRevision: result.nextExpectedRevision, position };
  }

  /**
   * Tombstones the stream (retention): its events are gone for good and its name cannot be reused
   * (`wasDeleted` then answers true: the tombstone is the memory `remember` asks for).
   */
  async deleteStream(streamId: string, options: { expectedRevision?: bigint; remember?: boolean; owner?: string } = {}): Promise<number | undefined> {
    try {
      await this.call('tombstone', (client) =>
        client.tombstoneStream(streamId, { deadline: this.callTimeoutMs, ...(options.expectedRevision !== undefined ? { expectedRevision: options.expectedRevision } : {}) }),
      );
    } catch (error) {
      if (options.expectedRevision !== undefined && error instanceof WrongExpectedVersionError) return 0;
      // Gone already (another instance's retention tombstoned it first): this call removed nothing.
      if (error instanceof StreamNotFoundError || error instanceof StreamDeletedError) return 0;
      throw error;
    }
    return undefined;
  }

  /** A tombstoned stream answers its reads `StreamDeletedError`; one that never existed, `StreamNotFoundError`. */
  async wasDeleted(streamId: string): Promise<boolean> {
    try {
      await this.collect('readStream', (client) => client.readStream(streamId, { direction: FORWARDS, fromRevision: START, maxCount: 1 }));
      return false;
    } catch (error) {
      if (error instanceof StreamDeletedError) return true;
      if (error instanceof StreamNotFoundError) return false;
      throw error;
    }
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const backwards = options.direction === 'backwards';
    try {
      const resolved = await this.collect('readStream', (client) =>
        client.readStream(streamId, {
          direction: backwards ? BACKWARDS : FORWARDS,
          fromRevision: options.fromRevision ?? (backwards ? END : START),
          maxCount: options.maxCount ?? Number.MAX_SAFE_INTEGER,
        }),
      );
      return resolved.flatMap(({ event }) => (event ? [toRecorded(event)] : []));
    } catch (error) {
      // A tombstoned stream (retention) reads as empty, as its deleted rows do on SQLite.
      if (error instanceof StreamNotFoundError || error instanceof StreamDeletedError) return [];
      throw error;
    }
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const after = options.after === undefined ? undefined : { commit: options.after, prepare: options.after };
    const page = await this.readAllPage(after, options.maxCount ?? PAGE);
    return page.map(toRecorded);
  }

  /**
   * Up to `limit` non-system events of `$all` strictly after `after`. The client (6.x) cannot
   * filter a read of `$all` on the server, so system events are skipped here, batch after batch.
   */
  async readAllPage(after: Position | undefined, limit: number, signal?: AbortSignal): Promise<AllStreamRecordedEvent[]> {
    const events: AllStreamRecordedEvent[] = [];
    for (let from = after; events.length < limit; ) {
      // Reading from a position includes the event at that position: ask for one more.
      const requested = limit - events.length + 1;
      const batch = await this.collect(
        'readAll',
        (client) => client.readAll({ direction: FORWARDS, fromPosition: from ?? START, maxCount: requested }),
        { signal },
      );
      for (const { event } of batch) {
        if (event && !isSystem(event) && (!from || isAfter(event.position, from))) events.push(event);
      }
      const last = batch[batch.length - 1]?.event;
      if (batch.length < requested || !last) break;
      from = last.position;
    }
    return events.slice(0, limit);
  }

  subscribe(handler: EventHandler, options: SubscribeOptions = {}): Subscription {
    if (this.lifetime.signal.aborted) throw new StoreUnavailableError('event store is closed');
    const subscription = new EsdbSubscription(this, handler, options);
    this.subscriptions.add(subscription);
    void subscription.done.finally(() => this.subscriptions.delete(subscription));
    return subscription;
  }

  /**
   * The position of the last event a subscriber can be handed: system events (the server's own
   * at the start of a fresh log, a tombstone's `$streamDeleted`, `$metadata`) are passed over,
   * reading backwards page by page (each page under its own deadline). Counting one of them, the
   * head would be a position no read model ever reaches, and every read fenced to it would wait
   * for its deadline.
   */
  async headPosition(): Promise<bigint | undefined> {
    // What the last call passed over is not read again: a run of trailing system events (retention
    // deleting thousands of streams) would otherwise be paged through by every fenced read.
    const known = this.headScan;
    let newest: Position | undefined;
    let head: bigint | undefined;
    scan: for (let from: Position | undefined; ; ) {
      const requested = HEAD_PAGE + (from ? 1 : 0);
      const batch = await this.collect('headPosition', (client) => client.readAll({ direction: BACKWARDS, fromPosition: from ?? END, maxCount: requested }));
      for (const { event } of batch) {
        if (!event || (from && !isAfter(from, event.position))) continue;
        newest ??= event.position;
        if (known && !isAfter(event.position, known.newest)) {
          head = known.head;
          break scan;
        }
        if (!isSystem(event)) {
          head = event.position.commit;
          break scan;
        }
      }
      const last = batch[batch.length - 1]?.event;
      if (batch.length < requested || !last) break;
      from = last.position;
    }
    if (newest && (!this.headScan || isAfter(newest, this.headScan.newest))) this.headScan = { newest, head };
    return head;
  }

  /** One bounded read of the log's last event, whatever it is. */
  async ping(): Promise<void> {
    await this.collect('ping', (client) => client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 }), {
      timeoutMs: Math.min(this.callTimeoutMs, PING_TIMEOUT_MS),
    });
  }

  async close(): Promise<void> {
    if (this.lifetime.signal.aborted) return;
    this.lifetime.abort();
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    for (const timer of this.retired.values()) clearTimeout(timer);
    await Promise.allSettled([this.client, ...this.retired.keys()].map(disposeClient));
    this.retired.clear();
  }

  /** Opens a live `$all` subscription on the current connection. */
  openSubscription(from: Position | undefined, prefixes: string[] | undefined) {
    const client = this.client;
    const stream = client.subscribeToAll({
      fromPosition: from ?? START,
      filter: prefixes?.length ? streamNameFilter({ prefixes }) : excludeSystemEvents(),
    });
    return { client, stream };
  }

  /**
   * Replaces a connection that let a deadline pass. The client caches a failed server-features
   * probe for its lifetime (every later append fails with it), so only a fresh client recovers.
   * Calls still running on the old one end by their own deadline; it is disposed after that.
   * Subscriptions move to the new one and resume from their checkpoint. The new client has a TCP
   * connection of its own (see `connect`): the old one's may be half-open.
   */
  retire(stale: EventStoreDBClient): void {
    if (this.lifetime.signal.aborted || this.client !== stale) return;
    this.client = connect(this.connectionString);
    const timer = setTimeout(() => {
      this.retired.delete(stale);
      void disposeClient(stale);
    }, this.callTimeoutMs);
    timer.unref();
    this.retired.set(stale, timer);
    for (const subscription of this.subscriptions) subscription.reconnect();
  }

  /**
   * Reads a whole (bounded) streaming read. The deadline is one of silence: it starts again with
   * every event received, so a long stream that keeps coming (a long history, large events) is
   * read to its end, while a read that stops answering fails after `timeoutMs`. Reads are never
   * abandoned half-consumed: the client's dispose() waits for every read to end.
   */
  private collect<E>(what: string, open: (client: EventStoreDBClient) => StreamingRead<E>, options: CallOptions = {}): Promise<E[]> {
    return this.call(
      what,
      async (client, onCancel, progress) => {
        const read = open(client);
        onCancel(() => {
          // A cancelled read never ends its stream, so it is destroyed as well.
          void read.cancel().catch(() => undefined);
          read.destroy();
        });
        const items: E[] = [];
        for await (const item of read) {
          items.push(item);
          progress();
        }
        return items;
      },
      options,
    );
  }

  private call<T>(
    what: string,
    work: (client: EventStoreDBClient, onCancel: (cancel: () => void) => void, progress: () => void) => Promise<T>,
    { timeoutMs = this.callTimeoutMs, signal, unavailable = `${what}: no answer from EventStoreDB` }: CallOptions = {},
  ): Promise<T> {
    const aborted = AbortSignal.any(signal ? [this.lifetime.signal, signal] : [this.lifetime.signal]);
    if (aborted.aborted) return Promise.reject(new StoreUnavailableError(`${what}: event store is closed`));
    const client = this.client;
    let cancel = (): void => undefined;
    let settled = false;
    return new Promise<T>((resolve, reject) => {
      const settle = (outcome: () => void) => {
        settled = true;
        clearTimeout(timer);
        aborted.removeEventListener('abort', onAbort);
        outcome();
      };
      const stop = (error: Error) => {
        settle(() => reject(error));
        cancel();
      };
      const onAbort = () => stop(new StoreUnavailableError(`${what}: cancelled (subscription or store closing)`));
      const expire = () => {
        stop(new StoreUnavailableError(`${unavailable} (no answer within ${timeoutMs} ms)`));
        this.retire(client);
      };
      let timer = setTimeout(expire, timeoutMs);
      const progress = () => {
        if (settled) return;
        clearTimeout(timer);
        timer = setTimeout(expire, timeoutMs);
      };
      aborted.addEventListener('abort', onAbort, { once: true });
      work(client, (fn) => (cancel = fn), progress).then(
        (value) => settle(() => resolve(value)),
        (error: unknown) => {
          settle(() =>
            reject(isConnectionError(error) ? new StoreUnavailableError(`${unavailable}: ${message(error)}`, { cause: error }) : error),
          );
          // The client's own deadline (appends and tombstones carry one as long as `timeoutMs`)
          // can fire before the timer above: the event loop's time that timer starts from may lag
          // the clock the deadline is computed from. The call let a deadline pass all the same.
          if (isDeadlineExceeded(error)) this.retire(client);
        },
      );
    });
  }
}

class EsdbSubscription implements Subscription {
  checkpoint: bigint | undefined;
  readonly done: Promise<void>;
  /** `$all` position of the last event seen (delivered or filtered out): where to resume. */
  private seen: Position | undefined;
  private stopped = false;
  private live = false;
  private failures = 0;
  private attempt = new AbortController();
  private wake: (() => void) | undefined;

  constructor(
    private readonly store: EsdbEventStore,
    private readonly handler: EventHandler,
    private readonly options: SubscribeOptions,
  ) {
    this.checkpoint = options.after;
    this.seen = options.after === undefined ? undefined : { commit: options.after, prepare: options.after };
    this.done = this.run();
  }

  /** Catch-up by paged reads, then a server subscription from the last event seen. */
  private async run(): Promise<void> {
    let caughtUp = false;
    while (!this.stopped) {
      this.attempt = new AbortController();
      const signal = this.attempt.signal;
      try {
        if (!caughtUp) {
          await this.catchUp(signal);
          caughtUp = true;
        }
        await this.follow(signal);
      } catch (error) {
        if (this.stopped) return;
        if (error instanceof HandlerError || !(error instanceof StoreUnavailableError || isConnectionError(error))) {
          this.stopped = true;
          const reported = error instanceof HandlerError ? error.cause : error;
          this.options.onError?.(reported instanceof Error ? reported : new Error(String(reported)));
          return;
        }
      }
      await this.backoff();
    }
  }

  private async catchUp(signal: AbortSignal): Promise<void> {
    for (;;) {
      const page = await this.store.readAllPage(this.seen, PAGE, signal);
      for (const event of page) await this.deliver(event);
      if (page.length < PAGE) return;
    }
  }

  /** Follows the live subscription until it drops; it never ends normally. */
  private async follow(signal: AbortSignal): Promise<void> {
    const { client, stream } = this.store.openSubscription(this.seen, this.options.streamPrefixes);
    const drop = (reason: string) => stream.destroy(new StoreUnavailableError(`subscription to $all ${reason}`));
    const unconfirmed = setTimeout(() => {
      drop(`not confirmed within ${this.store.callTimeoutMs} ms`);
      this.store.retire(client);
    }, this.store.callTimeoutMs);
    const onAbort = () => drop('closed');
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    stream.once('confirmation', () => {
      clearTimeout(unconfirmed);
      this.failures = 0;
      if (!this.live) {
        this.live = true;
        this.options.onCaughtUp?.();
      }
    });
    try {
      for await (const { event } of stream) {
        if (event) await this.deliver(event);
      }
      throw new StoreUnavailableError('subscription to $all ended by the server');
    } finally {
      clearTimeout(unconfirmed);
      signal.removeEventListener('abort', onAbort);
      void stream.unsubscribe().catch(() => undefined);
    }
  }

  private async deliver(event: AllStreamRecordedEvent): Promise<void> {
    if (this.stopped || (this.seen && !isAfter(event.position, this.seen))) return;
    const prefixes = this.options.streamPrefixes;
    if (!isSystem(event) && (!prefixes || prefixes.some((p) => event.streamId.startsWith(p)))) {
      try {
        await this.handler(toRecorded(event));
      } catch (error) {
        throw new HandlerError(error);
      }
      this.checkpoint = event.position.commit;
    }
    this.seen = event.position;
  }

  private backoff(): Promise<void> {
    const delay = Math.min(100 * 2 ** this.failures++, MAX_BACKOFF_MS);
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delay);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => (this.wake = undefined));
  }

  /** Drops the current connection attempt; the subscription resumes from its checkpoint. */
  reconnect(): void {
    this.attempt.abort();
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.attempt.abort();
    this.wake?.();
    await this.done;
  }
}

/** Clients created in this process (module-wide: a store's clients must not share with another store's either). */
let clientsCreated = 0;
/** How many successive clients get distinct keepalive settings before they repeat. */
const KEEPALIVE_VARIANTS = 1_000;
/** The client's defaults (6.x). */
const DEFAULT_KEEPALIVE_MS = 10_000;

/**
 * A client of its own TCP connection. grpc-js keeps one process-wide pool of subchannels (TCP
 * connections) and gives a new channel the pooled one whose target, channel options and
 * credentials are equal to its own; the client builds its channel with fixed options (keepalive
 * time and timeout, max receive length) and no way to ask for a private pool, so a new client made
 * from the same connection string would send over the very connection it replaces (a half-open one
 * then fails every call until keepalive gives up on it, ~20 s with the defaults). The keepalive
 * settings are the only channel options the connection string reaches, so each client gets them a
 * few milliseconds apart from its predecessors': the keepalive timeout grows by up to
 * `KEEPALIVE_VARIANTS - 1` ms, or, when it is disabled (-1) and pings are sent, the interval does.
 */
function connect(connectionString: string): EventStoreDBClient {
  const offset = clientsCreated++ % KEEPALIVE_VARIANTS;
  const client = EventStoreDBClient.connectionString(offset === 0 ? connectionString : withKeepAliveOffset(connectionString, offset));
  // The channels it opens, to close them when it is disposed (see `disposeClient`). `getChannel`
  // is the client's protected accessor, through which it opens every channel it uses.
  const internals = client as unknown as { getChannel?: () => Promise<Channel> };
  const getChannel = internals.getChannel;
  if (typeof getChannel === 'function') {
    const opened = new Set<Promise<Channel>>();
    channels.set(client, opened);
    internals.getChannel = () => {
      const channel = getChannel.call(client);
      opened.add(channel);
      return channel;
    };
  }
  return client;
}

/** The client's own connection-string parser (CommonJS, not in its exports' index). */
const { parseConnectionString } = createRequire(import.meta.url)('@eventstore/db-client/dist/Client/parseConnectionString.js') as {
  parseConnectionString: (connectionString: string) => { keepAliveTimeout?: number; keepAliveInterval?: number };
};

/** The connection string with its keepalive timeout (or interval) `offset` ms longer. */
function withKeepAliveOffset(connectionString: string, offset: number): string {
  const { keepAliveTimeout: timeout = DEFAULT_KEEPALIVE_MS, keepAliveInterval: interval = DEFAULT_KEEPALIVE_MS } =
    parseConnectionString(connectionString);
  // With pings off (interval -1) the timeout is never used, whatever it is. A later key wins.
  const varied =
    timeout >= 0 || interval < 0 ? `keepAliveTimeout=${Math.max(timeout, 0) + offset}` : `keepAliveInterval=${interval + offset}`;
  const trimmed = connectionString.trim().replace(/\/+$/, '');
  return `${trimmed}${trimmed.includes('?') ? '&' : '?'}${varied}`;
}

interface Channel {
  close(): void;
}
const channels = new WeakMap<EventStoreDBClient, Set<Promise<Channel>>>();

/**
 * Ends a client's calls and closes its channels. `dispose()` only ends the calls: a channel, and
 * with it its hold on a TCP connection in grpc-js's pool, would stay open for the life of the
 * process (one more connection kept for every client retired while the server still answers
 * keepalive pings). Closing one the client already closed itself (after a connection error) is
 * harmless.
 */
async function disposeClient(client: EventStoreDBClient): Promise<void> {
  await client.dispose().catch(() => undefined);
  for (const channel of channels.get(client) ?? []) {
    await channel.then((opened) => opened.close()).catch(() => undefined);
  }
  channels.delete(client);
}

/** The subscriber's handler threw: not the store's fault, so not retried. */
class HandlerError extends Error {
  constructor(override readonly cause: unknown) {
    super(`subscription handler failed: ${message(cause)}`);
  }
}

/** Errors that mean "no (usable) answer", as opposed to the server refusing the request. */
function isConnectionError(thrown: unknown): boolean {
  // Some paths (the server-features probe) reject with the raw gRPC error.
  const error = thrown instanceof Error ? convertToCommandError(thrown) : thrown;
  return (
    error instanceof UnavailableError ||
    error instanceof DeadlineExceededError ||
    error instanceof TimeoutError ||
    error instanceof CancelledError ||
    error instanceof NotLeaderError ||
    error instanceof UnknownError ||
    (error instanceof Error && error.message.startsWith('Failed to discover'))
  );
}

function isDeadlineExceeded(thrown: unknown): boolean {
  return (thrown instanceof Error ? convertToCommandError(thrown) : thrown) instanceof DeadlineExceededError;
}

function toClientRevision(expected: ExpectedRevision): AppendExpectedRevision {
  if (expected === 'any') return ANY;
  if (expected === 'no_stream') return NO_STREAM;
  if (expected === 'stream_exists') return STREAM_EXISTS;
  return expected;
}

/**
 * The server's own events: `$`-typed ones (stats, settings, metadata, tombstones, projections'
 * links), and anything in a `$` stream, where a projection's results go with types of its own
 * (`Result`, …). Baton never writes to a `$` stream.
 */
function isSystem(event: EsdbRecordedEvent): boolean {
  return event.type.startsWith('$') || event.streamId.startsWith('$');
}

function isAfter(position: Position, than: Position): boolean {
  return position.commit > than.commit || (position.commit === than.commit && position.prepare > than.prepare);
}

function toRecorded(event: EsdbRecordedEvent): RecordedEvent {
  if (!event.position) throw new Error('EventStoreDB returned an event without its position (needs server 22.6 or later)');
  return {
    id: event.id,
    type: event.type,
    streamId: event.streamId,
    revision: event.revision,
    position: event.position.commit,
    data: event.data,
    metadata: (event.metadata ?? {}) as EventMetadata,
    recordedAt: event.created,
  };
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
