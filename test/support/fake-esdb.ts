import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';

/*
 * A fake EventStoreDB network peer: a gRPC server speaking the client's own protocol (the
 * generated service definitions `@eventstore/db-client` ships), over an in-memory log. NOT
 * EventStoreDB: a model of the parts of its gRPC Streams service the adapter uses, written from
 * the server's source (EventStore/EventStore, src/EventStore.Core; paths cited below):
 *
 * - the server-features probe; appends (the Append and BatchAppend RPCs) with the server's
 *   expected-version and idempotency rules (IndexWriter.CheckCommit);
 * - stream reads forwards and backwards; a tombstoned stream's read fails StreamDeleted, a missing
 *   or soft-deleted one answers StreamNotFound;
 * - `$all` reads forwards (from a position, inclusive) and backwards (from a position, exclusive),
 *   unfiltered and filtered (AllReader, Enumerator.ReadAll*);
 * - `$all` subscriptions, filtered or not: confirmation, catch-up, checkpoints at the filter's
 *   checkpoint interval, caught-up, then live events (Enumerator.AllSubscription[Filtered]);
 * - Delete (soft: stream metadata `$tb` = max in `$$stream`) and Tombstone (hard: a
 *   `$streamDeleted` event), with expected revisions (StorageWriterService, Streams.Delete);
 * - system events in `$all`, as a real server has them: the server's own at the start of a
 *   fresh log (`$settings`, users, `$$$stats-…` metadata, `$stats-…`), a `$statsCollected` every
 *   `statsPeriodMs` if set, stream metadata and tombstones.
 *
 * A spec can hold the answer to an append, and fail a connection's calls, as a network would.
 * Every record's log position is its predecessor's plus its size, as in a transaction file, so
 * positions are far apart and not contiguous; an event's commit and prepare positions are equal
 * (each event appended over gRPC is its own committed prepare record).
 */

const require = createRequire(import.meta.url);
/* eslint-disable @typescript-eslint/no-require-imports */
const grpc = require('@grpc/grpc-js');
const streamsGrpc = require('@eventstore/db-client/generated/streams_grpc_pb.js');
const streamsPb = require('@eventstore/db-client/generated/streams_pb.js');
const sharedPb = require('@eventstore/db-client/generated/shared_pb.js');
const featuresGrpc = require('@eventstore/db-client/generated/serverfeatures_grpc_pb.js');
const featuresPb = require('@eventstore/db-client/generated/serverfeatures_pb.js');
const statusPb = require('@eventstore/db-client/generated/status_pb.js');
const { Any } = require('google-protobuf/google/protobuf/any_pb.js');
const { Empty } = require('google-protobuf/google/protobuf/empty_pb.js');
/* eslint-enable @typescript-eslint/no-require-imports */

type Expected = 'any' | 'no_stream' | 'stream_exists' | bigint;

/** EventNumber.DeletedStream (long.MaxValue): a tombstone's event number, and `$tb` of a soft-deleted stream. */
const DELETED_STREAM = 9223372036854775807n;
/** Enumerator.ReadBatchSize: a filter's default search window, so its checkpoint interval is this times the multiplier. */
const READ_BATCH_SIZE = 32;
/** The node name the server's stats stream carries (`$stats-<http endpoint>`). */
const STATS_STREAM = '$stats-127.0.0.1:2113';

export interface StoredEvent {
  id: string;
  streamId: string;
  type: string;
  data: Uint8Array;
  metadata: Uint8Array;
  isJson: boolean;
  revision: bigint;
  /** Commit = prepare position in `$all`. */
  position: bigint;
  /** The position just past this record (a backwards read from a position includes a record only if this is at or before it). */
  postPosition: bigint;
  /** .NET ticks since the epoch. */
  created: bigint;
}

type Proposed = Pick<StoredEvent, 'id' | 'type' | 'data' | 'metadata'> & { isJson?: boolean };

/** One append the fake received; `release` answers it when the spec held it. */
export interface ReceivedAppend {
  streamId: string;
  ids: string[];
  expected: Expected;
  rpc: 'Append' | 'BatchAppend';
  /** Fails the gRPC call this append came on (a connection reset), with UNAVAILABLE. */
  failCall(): void;
}

type Outcome =
  | { kind: 'success'; revision: bigint; position: bigint }
  | { kind: 'wrong'; current: bigint | 'no_stream'; expected: Expected }
  | { kind: 'deleted' }
  | { kind: 'too-large' };

type Check =
  | { decision: 'ok'; current: bigint; softDeleted: boolean }
  | { decision: 'idempotent'; end: StoredEvent }
  | { decision: 'wrong'; current: bigint }
  | { decision: 'deleted' };

interface LiveSubscriber {
  deliver(event: StoredEvent): void;
  drop(): void;
}

export class FakeEsdb {
  /** Every stream's events by revision (a tombstone's `$streamDeleted` is in the log only). */
  readonly streams = new Map<string, StoredEvent[]>();
  /** Hard-deleted streams (a spec may add one directly: another instance's retention). */
  readonly tombstoned = new Set<string>();
  /** `$all`, in position order. */
  readonly log: StoredEvent[] = [];
  readonly received: ReceivedAppend[] = [];
  /** Decides whether to hold an append's answer; a held one waits for `release`. */
  hold: (append: ReceivedAppend) => boolean = () => false;
  /** How many `$all` subscriptions were ever opened. */
  subscriptionsOpened = 0;
  private readonly live = new Set<LiveSubscriber>();
  private readonly held: Array<{ append: ReceivedAppend; answer: () => void }> = [];
  /** Event ids written, for the server's idempotency check (its cache of committed events; unbounded here). */
  private readonly committed = new Map<string, StoredEvent>();
  private nextPosition = 0n;
  /** Emit the standard projections' link events (see `project`), as docker-compose.yml's KurrentDB does. */
  private standardProjections = false;
  private projectionQueue: StoredEvent[] = [];
  private statsTimer: NodeJS.Timeout | undefined;
  /**
   * The server's MaxAppendSize (its default, 1 MiB): an append whose events' type, data and
   * metadata come to more is refused whole (the server's rule counts a little more per event).
   */
  maxAppendSize = 1024 * 1024;
  private server: any;
  port = 0;

  /**
   * `statsPeriodMs`: write a `$statsCollected` event that often (the server's StatsPeriodSec,
   * 30 s by default), so `$all` ends in system events between the caller's own.
   */
  static async start(options: { port?: number; statsPeriodMs?: number; standardProjections?: boolean } = {}): Promise<FakeEsdb> {
    const fake = new FakeEsdb();
    fake.standardProjections = options.standardProjections ?? false;
    fake.seedSystemEvents();
    await fake.listen(options.port ?? 0);
    if (options.statsPeriodMs) {
      fake.statsTimer = setInterval(() => fake.writeStats(), options.statsPeriodMs);
      fake.statsTimer.unref();
    }
    return fake;
  }

  get url(): string {
    return `esdb://127.0.0.1:${this.port}?tls=false`;
  }

  /** Answers the held appends (in the order received). */
  release(): void {
    for (const { answer } of this.held.splice(0)) answer();
  }

  get heldCount(): number {
    return this.held.length;
  }

  async stop(): Promise<void> {
    clearInterval(this.statsTimer);
    // Subscriptions never end by themselves, and a graceful shutdown waits for every call.
    this.dropSubscriptions();
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    this.server.forceShutdown();
  }

  /**
   * Writes one system event (type and stream as the caller says), as the server writes its own:
   * `data` as JSON, or as it is if bytes (a non-JSON event).
   */
  writeSystemEvent(streamId: string, type: string, data: unknown = {}): StoredEvent {
    const stream = this.streams.get(streamId) ?? [];
    this.streams.set(streamId, stream);
    const raw = data instanceof Uint8Array;
    const proposed = { id: randomUUID(), type, data: raw ? data : json(data), metadata: new Uint8Array(), isJson: !raw };
    const [event] = this.write(streamId, BigInt(stream.length), [proposed]);
    stream.push(event);
    return event;
  }

  /** The server's periodic stats event (MonitoringService: `$statsCollected` in `$stats-<node>`). */
  writeStats(): StoredEvent {
    return this.writeSystemEvent(STATS_STREAM, '$statsCollected', { 'proc-id': process.pid, 'sys-freeMem': 1 << 30 });
  }

  /**
   * What a fresh node writes before any client does (its epoch, the default admin and ops users
   * as UserManagementService creates them, default ACL settings, the stats stream's max age as
   * MonitoringService sets it, and a first stats event).
   */
  private seedSystemEvents(): void {
    // The node's first epoch, written as an event too (EpochManager.WriteEpochInformationWithRetry).
    this.writeSystemEvent('$epoch-information', '$epoch-information', { EpochNumber: 0, EpochPosition: 0, EpochId: randomUUID(), LeaderInstanceId: randomUUID() });
    this.writeSystemEvent('$user-admin', '$UserCreated', { loginName: 'admin', fullName: 'Event Store Administrator', groups: ['$admins'] });
    this.writeSystemEvent('$users', '$User', new Uint8Array(Buffer.from('admin')));
    this.writeSystemEvent('$user-ops', '$UserCreated', { loginName: 'ops', fullName: 'Event Store Operations', groups: ['$ops'] });
    this.writeSystemEvent('$users', '$User', new Uint8Array(Buffer.from('ops')));
    this.writeSystemEvent('$settings', '$settings', { $userStreamAcl: { $r: '$all', $w: '$all' }, $systemStreamAcl: { $r: '$admins' } });
    this.writeSystemEvent(`$$${STATS_STREAM}`, '$metadata', { $maxAge: 864000 });
    this.writeStats();
  }

  /** Puts records in the log at the next positions, and tells live subscriptions. */
  private write(streamId: string, firstRevision: bigint, events: Proposed[]): StoredEvent[] {
    const created = BigInt(Date.now()) * 10_000n;
    const written = events.map((event, i) => {
      // A prepare record's size: its fixed header, stream name, type, data and metadata.
      const size = 90n + BigInt(Buffer.byteLength(streamId) + Buffer.byteLength(event.type) + event.data.length + event.metadata.length);
      const position = this.nextPosition;
      this.nextPosition += size;
      const stored: StoredEvent = {
        ...event,
        isJson: event.isJson ?? true,
        streamId,
        revision: firstRevision === DELETED_STREAM ? DELETED_STREAM : firstRevision + BigInt(i),
        position,
        postPosition: this.nextPosition,
        created,
      };
      this.log.push(stored);
      this.committed.set(stored.id, stored);
      return stored;
    });
    for (const subscriber of [...this.live]) for (const event of written) subscriber.deliver(event);
    if (this.standardProjections && !streamId.startsWith('$')) {
      if (this.projectionQueue.length === 0) setImmediate(() => this.project());
      this.projectionQueue.push(...written);
    }
    return written;
  }

  /**
   * The standard projections, run by a server with projections on (KURRENTDB_RUN_PROJECTIONS=All,
   * START_STANDARD_PROJECTIONS, as docker-compose.yml has it): a little after each event of a
   * user stream, `$>` link events (data `<revision>@<stream>`) in `$ce-<category>`
   * ($by_category, EventStore.Projections.Core/Standard/CategorizeEventsByStreamPath.cs: the
   * category is the name up to its first `-`; a tombstone is linked too), `$et-<type>`
   * ($by_event_type, IndexEventsByEventType.cs) and, for a stream's first event, `$streams`
   * ($streams). They land in `$all` after the events they link to, interleaved with later
   * appends. Links of streams in `$`-streams are left out.
   */
  private project(): void {
    for (const event of this.projectionQueue.splice(0)) {
      const link = (stream: string) => {
        const target = this.streams.get(stream) ?? [];
        this.streams.set(stream, target);
        const data = new Uint8Array(Buffer.from(`${event.revision}@${event.streamId}`, 'utf8'));
        target.push(...this.write(stream, BigInt(target.length), [{ id: randomUUID(), type: '$>', data, metadata: new Uint8Array(), isJson: false }]));
      };
      const dash = event.streamId.indexOf('-');
      if (dash > 0) link(`$ce-${event.streamId.slice(0, dash)}`);
      if (!event.type.startsWith('$')) link(`$et-${event.type}`);
      if (event.revision === 0n) link('$streams');
    }
  }

  /** `$tb` of the stream's latest metadata, if any. */
  private truncateBefore(streamId: string): bigint | undefined {
    const meta = this.streams.get(`$$${streamId}`);
    const last = meta?.[meta.length - 1];
    if (!last) return undefined;
    // Read as text: `$tb` of a deleted stream (long.MaxValue) is past a double's precision.
    const tb = /"\$tb"\s*:\s*(\d+)/.exec(Buffer.from(last.data).toString('utf8'))?.[1];
    return tb === undefined ? undefined : BigInt(tb);
  }

  private softDeleted(streamId: string): boolean {
    return this.truncateBefore(streamId) === DELETED_STREAM;
  }

  private lastRevision(streamId: string): bigint {
    return BigInt((this.streams.get(streamId)?.length ?? 0) - 1);
  }

  /**
   * The server's commit check (IndexWriter.CheckCommit): expected version, soft-deleted streams,
   * and idempotency. With `any` / `stream_exists`, a write whose first event id is already in
   * the stream is a retry if all its ids are (answered as the first write was), and a conflict if
   * only some are; with an exact revision or `no_stream` below the current one, a retry if the
   * events from the revision after it have the same ids.
   */
  private check(streamId: string, expected: Expected, ids: string[]): Check {
    if (this.tombstoned.has(streamId)) return { decision: 'deleted' };
    const current = this.lastRevision(streamId);
    const softDeleted = this.softDeleted(streamId);
    if (expected === 'stream_exists') {
      if (softDeleted) return { decision: 'deleted' };
      if (current < 0n && !this.streams.get(`$$${streamId}`)?.length) return { decision: 'wrong', current };
    }
    if (expected === 'any' || expected === 'stream_exists') {
      let end: StoredEvent | undefined;
      for (const [i, id] of ids.entries()) {
        const stored = this.committed.get(id);
        if (!stored || stored.streamId !== streamId) return i === 0 ? { decision: 'ok', current, softDeleted } : { decision: 'wrong', current };
        end = stored;
      }
      return end ? { decision: 'idempotent', end } : { decision: 'ok', current, softDeleted };
    }
    const version = expected === 'no_stream' ? -1n : expected;
    if (version < current) {
      const stream = this.streams.get(streamId)!;
      let revision = version;
      for (const id of ids) {
        revision += 1n;
        if (stream[Number(revision)]?.id === id) continue;
        // CorruptedIdempotency (part of the write matches) is answered as WrongExpectedVersion.
        if (revision !== version + 1n) return { decision: 'wrong', current };
        if (expected === 'no_stream' && softDeleted) return { decision: 'ok', current, softDeleted };
        return { decision: 'wrong', current };
      }
      return { decision: 'idempotent', end: stream[Number(revision)] };
    }
    if (version > current) return { decision: 'wrong', current };
    return { decision: 'ok', current, softDeleted };
  }

  /** What the server decides for an append, and does. */
  private decide(streamId: string, expected: Expected, events: Proposed[]): Outcome {
    const size = events.reduce((sum, e) => sum + Buffer.byteLength(e.type) + e.data.length + e.metadata.length, 0);
    if (size > this.maxAppendSize) return { kind: 'too-large' };
    const check = this.check(streamId, expected, events.map((e) => e.id));
    if (check.decision === 'deleted') return { kind: 'deleted' };
    if (check.decision === 'wrong') return { kind: 'wrong', current: check.current < 0n ? 'no_stream' : check.current, expected };
    // An idempotent write is answered with the revision and log position of its last event
    // (StorageMessage.AlreadyCommitted -> RequestManagerBase.ReturnCommitAt).
    if (check.decision === 'idempotent') return { kind: 'success', revision: check.end.revision, position: check.end.position };
    const stream = this.streams.get(streamId) ?? [];
    this.streams.set(streamId, stream);
    const written = this.write(streamId, BigInt(stream.length), events);
    stream.push(...written);
    // Appending to a soft-deleted stream undeletes it: its metadata's `$tb` becomes the first new
    // revision, so the old events stay hidden (StorageWriterService.SoftUndeleteStream).
    if (check.softDeleted) this.writeMetadata(streamId, check.current + 1n);
    const last = written[written.length - 1];
    return { kind: 'success', revision: last.revision, position: last.position };
  }

  /** Stream metadata with only `$tb` (StreamMetadata.ToJsonBytes writes it as a JSON number). */
  private writeMetadata(streamId: string, truncateBefore: bigint): StoredEvent {
    const metaStream = `$$${streamId}`;
    const stream = this.streams.get(metaStream) ?? [];
    this.streams.set(metaStream, stream);
    const data = new Uint8Array(Buffer.from(`{"$tb":${truncateBefore}}`, 'utf8'));
    const [event] = this.write(metaStream, BigInt(stream.length), [{ id: randomUUID(), type: '$metadata', data, metadata: new Uint8Array(), isJson: true }]);
    stream.push(event);
    return event;
  }

  private async listen(port: number): Promise<void> {
    this.server = new grpc.Server();
    this.server.addService(featuresGrpc.ServerFeaturesService, {
      getSupportedMethods: (_call: unknown, callback: (error: unknown, value: unknown) => void) => {
        const methods = new featuresPb.SupportedMethods();
        methods.setEventStoreServerVersion('24.10.0');
        const list = ['Read', 'Append', 'Delete', 'Tombstone', 'BatchAppend'].map((name) => {
          const method = new featuresPb.SupportedMethod();
          method.setServiceName('event_store.client.streams.Streams');
          method.setMethodName(name);
          return method;
        });
        methods.setMethodsList(list);
        callback(null, methods);
      },
    });
    this.server.addService(streamsGrpc.StreamsService, {
      read: (call: any) => this.read(call),
      append: (call: any, callback: any) => this.appendRpc(call, callback),
      batchAppend: (call: any) => this.batchAppendRpc(call),
      delete: (call: any, callback: any) => this.deleteRpc(call, callback, false),
      tombstone: (call: any, callback: any) => this.deleteRpc(call, callback, true),
    });
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (error: Error | null, bound: number) =>
        error ? reject(error) : resolve(bound),
      ),
    );
  }

  private receive(append: ReceivedAppend, answer: () => void): void {
    this.received.push(append);
    if (this.hold(append)) this.held.push({ append, answer });
    else answer();
  }

  private appendRpc(call: any, callback: any): void {
    let options: any;
    const events: Proposed[] = [];
    let done = false;
    const finish = (error: unknown, value?: unknown) => {
      if (done) return;
      done = true;
      callback(error, value);
    };
    call.on('data', (req: any) => {
      if (req.hasOptions()) options = req.getOptions();
      else events.push(proposed(req.getProposedMessage()));
    });
    call.on('end', () => {
      const streamId = Buffer.from(options.getStreamIdentifier().getStreamName()).toString('utf8');
      const expected: Expected = options.hasRevision()
        ? BigInt(options.getRevision())
        : options.hasNoStream()
          ? 'no_stream'
          : options.hasStreamExists()
            ? 'stream_exists'
            : 'any';
      const append: ReceivedAppend = {
        streamId,
        ids: events.map((e) => e.id),
        expected,
        rpc: 'Append',
        failCall: () => finish({ code: grpc.status.UNAVAILABLE, details: 'connection reset (fake)' }),
      };
      this.receive(append, () => {
        if (done) return;
        const outcome = this.decide(streamId, expected, events);
        if (outcome.kind === 'too-large') {
          const metadata = new grpc.Metadata();
          metadata.set('exception', 'maximum-append-size-exceeded');
          metadata.set('maximum-append-size', String(this.maxAppendSize));
          finish({ code: grpc.status.INVALID_ARGUMENT, details: `Maximum Append Size of ${this.maxAppendSize} Exceeded.`, metadata });
          return;
        }
        if (outcome.kind === 'deleted') {
          finish(streamDeleted(streamId));
          return;
        }
        const resp = new streamsPb.AppendResp();
        if (outcome.kind === 'wrong') {
          const wrong = new streamsPb.AppendResp.WrongExpectedVersion();
          if (outcome.current === 'no_stream') wrong.setCurrentNoStream(new sharedPb.Empty());
          else wrong.setCurrentRevision(outcome.current.toString());
          if (typeof expected === 'bigint') wrong.setExpectedRevision(expected.toString());
          else if (expected === 'no_stream') wrong.setExpectedNoStream(new sharedPb.Empty());
          else if (expected === 'stream_exists') wrong.setExpectedStreamExists(new sharedPb.Empty());
          else wrong.setExpectedAny(new sharedPb.Empty());
          resp.setWrongExpectedVersion(wrong);
        } else {
          const success = new streamsPb.AppendResp.Success();
          success.setCurrentRevision(outcome.revision.toString());
          const position = new streamsPb.AppendResp.Position();
          position.setCommitPosition(outcome.position.toString());
          position.setPreparePosition(outcome.position.toString());
          success.setPosition(position);
          resp.setSuccess(success);
        }
        finish(null, resp);
      });
    });
  }

  private batchAppendRpc(call: any): void {
    const pending = new Map<string, { options: any; events: Proposed[] }>();
    let open = true;
    call.on('cancelled', () => (open = false));
    call.on('error', () => (open = false));
    call.on('end', () => {
      if (open) call.end();
      open = false;
    });
    const failCall = () => {
      if (!open) return;
      open = false;
      call.emit('error', Object.assign(new Error('connection reset (fake)'), { code: grpc.status.UNAVAILABLE, details: 'connection reset (fake)' }));
    };
    call.on('data', (req: any) => {
      const correlation = req.getCorrelationId().getString();
      const entry = pending.get(correlation) ?? { options: undefined, events: [] };
      if (req.hasOptions()) entry.options = req.getOptions();
      for (const message of req.getProposedMessagesList()) entry.events.push(proposed(message));
      pending.set(correlation, entry);
      if (!req.getIsFinal()) return;
      pending.delete(correlation);
      const { options, events } = entry;
      const streamId = Buffer.from(options.getStreamIdentifier().getStreamName()).toString('utf8');
      const expected: Expected = options.hasStreamPosition()
        ? BigInt(options.getStreamPosition())
        : options.hasNoStream()
          ? 'no_stream'
          : options.hasStreamExists()
            ? 'stream_exists'
            : 'any';
      const append: ReceivedAppend = { streamId, ids: events.map((e) => e.id), expected, rpc: 'BatchAppend', failCall };
      this.receive(append, () => {
        if (!open) return;
        const outcome = this.decide(streamId, expected, events);
        const resp = new streamsPb.BatchAppendResp();
        const id = new sharedPb.UUID();
        id.setString(correlation);
        resp.setCorrelationId(id);
        const identifier = new sharedPb.StreamIdentifier();
        identifier.setStreamName(Buffer.from(streamId, 'utf8'));
        resp.setStreamIdentifier(identifier);
        if (outcome.kind === 'success') {
          const success = new streamsPb.BatchAppendResp.Success();
          success.setCurrentRevision(outcome.revision.toString());
          const position = new sharedPb.AllStreamPosition();
          position.setCommitPosition(outcome.position.toString());
          position.setPreparePosition(outcome.position.toString());
          success.setPosition(position);
          resp.setSuccess(success);
        } else {
          const status = new statusPb.Status();
          const details = new Any();
          if (outcome.kind === 'too-large') {
            status.setCode(3);
            const tooLarge = new sharedPb.MaximumAppendSizeExceeded();
            tooLarge.setMaxappendsize(this.maxAppendSize);
            details.pack(tooLarge.serializeBinary(), 'event_store.client.MaximumAppendSizeExceeded');
          } else if (outcome.kind === 'deleted') {
            status.setCode(9);
            const deleted = new sharedPb.StreamDeleted();
            deleted.setStreamIdentifier(identifier);
            details.pack(deleted.serializeBinary(), 'event_store.client.StreamDeleted');
          } else {
            status.setCode(9);
            const wrong = new sharedPb.WrongExpectedVersion();
            if (outcome.current === 'no_stream') wrong.setCurrentNoStream(new Empty());
            else wrong.setCurrentStreamRevision(outcome.current.toString());
            if (typeof expected === 'bigint') wrong.setExpectedStreamPosition(expected.toString());
            else if (expected === 'no_stream') wrong.setExpectedNoStream(new Empty());
            else if (expected === 'stream_exists') wrong.setExpectedStreamExists(new Empty());
            else wrong.setExpectedAny(new Empty());
            details.pack(wrong.serializeBinary(), 'event_store.client.WrongExpectedVersion');
          }
          status.setDetails(details);
          resp.setError(status);
        }
        call.write(resp);
      });
    });
  }

  /**
   * Delete (soft) and Tombstone (hard), after the same commit check as an append
   * (StorageWriterService's DeleteStream handler; errors as Streams.Delete.cs raises them). A soft
   * delete writes `{"$tb": max}` to the stream's metadata stream, and fails WrongExpectedVersion
   * when neither the stream nor its metadata exist; a tombstone writes a `$streamDeleted` event
   * numbered max into the stream itself, after which the name cannot be used again.
   */
  private deleteRpc(call: any, callback: any, hard: boolean): void {
    const options = call.request.getOptions();
    const streamId = Buffer.from(options.getStreamIdentifier().getStreamName()).toString('utf8');
    const expected: Expected = options.hasRevision()
      ? BigInt(options.getRevision())
      : options.hasNoStream()
        ? 'no_stream'
        : options.hasStreamExists?.()
          ? 'stream_exists'
          : 'any';
    const expectedVersion = expected === 'any' ? -2n : expected === 'no_stream' ? -1n : expected === 'stream_exists' ? -4n : expected;
    const wrong = (current: bigint | undefined) => {
      const metadata = new grpc.Metadata();
      metadata.set('exception', 'wrong-expected-version');
      metadata.set('stream-name', streamId);
      metadata.set('expected-version', expectedVersion.toString());
      metadata.set('actual-version', current === undefined ? '' : current.toString());
      return {
        code: grpc.status.FAILED_PRECONDITION,
        details: `Delete failed due to WrongExpectedVersion. Stream: ${streamId}, Expected version: ${expectedVersion}, Actual version: ${current ?? ''}`,
        metadata,
      };
    };
    const check = this.check(streamId, expected, [randomUUID()]);
    if (check.decision === 'deleted') return callback(streamDeleted(streamId));
    if (check.decision === 'wrong') return callback(wrong(check.current));
    let written: StoredEvent;
    if (hard) {
      [written] = this.write(streamId, DELETED_STREAM, [{ id: randomUUID(), type: '$streamDeleted', data: new Uint8Array(), metadata: new Uint8Array(), isJson: false }]);
      this.tombstoned.add(streamId);
    } else {
      if (this.lastRevision(streamId) < 0n && !this.streams.get(`$$${streamId}`)?.length) return callback(wrong(-1n));
      written = this.writeMetadata(streamId, DELETED_STREAM);
    }
    const position = new (hard ? streamsPb.TombstoneResp : streamsPb.DeleteResp).Position();
    position.setCommitPosition(written.position.toString());
    position.setPreparePosition(written.position.toString());
    const resp = new (hard ? streamsPb.TombstoneResp : streamsPb.DeleteResp)();
    resp.setPosition(position);
    callback(null, resp);
  }

  private read(call: any): void {
    const options = call.request.getOptions();
    if (options.hasSubscription()) {
      if (!options.hasAll()) return call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'stream subscriptions are not in the fake' });
      this.subscribeToAll(call, options);
      return;
    }
    if (options.hasAll()) this.readAll(call, options);
    else this.readStream(call, options);
  }

  /** Stream reads (forwards or backwards, from a revision inclusive, up to a count). */
  private readStream(call: any, options: any): void {
    const streamOptions = options.getStream();
    const streamId = Buffer.from(streamOptions.getStreamIdentifier().getStreamName()).toString('utf8');
    if (this.tombstoned.has(streamId)) {
      call.emit('error', Object.assign(new Error('deleted'), streamDeleted(streamId)));
      return;
    }
    // Events before `$tb` are gone to readers; a soft-deleted stream (`$tb` max) reads as missing.
    const tb = this.truncateBefore(streamId) ?? 0n;
    const stream = (this.streams.get(streamId) ?? []).filter((e) => e.revision >= tb);
    if (stream.length === 0) {
      const resp = new streamsPb.ReadResp();
      const notFound = new streamsPb.ReadResp.StreamNotFound();
      notFound.setStreamIdentifier(streamOptions.getStreamIdentifier());
      resp.setStreamNotFound(notFound);
      call.write(resp);
      call.end();
      return;
    }
    const backwards = options.getReadDirection() === 1;
    const count = Number(BigInt(options.getCount()));
    const last = stream[stream.length - 1].revision;
    const from = streamOptions.hasRevision() ? BigInt(streamOptions.getRevision()) : streamOptions.hasEnd() ? last : 0n;
    const ordered = backwards ? stream.filter((e) => e.revision <= from).reverse() : stream.filter((e) => e.revision >= from);
    for (const event of ordered.slice(0, count)) call.write(readResp(event));
    call.end();
  }

  /**
   * `$all` reads. Forwards from a position includes the record at it; backwards from a position
   * includes only records that end at or before it, so not the one at it (AllReader's
   * ReadAllEventsForwardInternal / ReadAllEventsBackwardInternal compare the prepare position,
   * resp. the post-position, with the requested one). Start / end are the log's ends.
   */
  private readAll(call: any, options: any): void {
    const all = options.getAll();
    const backwards = options.getReadDirection() === 1;
    const count = Number(BigInt(options.getCount()));
    const filter = options.hasFilter() ? eventFilter(options.getFilter()) : () => true;
    let events: StoredEvent[];
    if (backwards) {
      const from = all.hasPosition() ? BigInt(all.getPosition().getCommitPosition()) : all.hasStart() ? -1n : this.nextPosition;
      events = this.log.filter((e) => e.postPosition <= from).reverse();
    } else {
      const from = all.hasPosition() ? BigInt(all.getPosition().getCommitPosition()) : all.hasEnd() ? this.nextPosition : 0n;
      events = this.log.filter((e) => e.position >= from);
    }
    for (const event of events.filter(filter).slice(0, count)) call.write(readResp(event));
    call.end();
  }

  /**
   * A `$all` subscription as Enumerator.AllSubscription[Filtered] serves one: confirmation, then
   * the events after the given position (all of them from start; none of the past from end),
   * caught-up (the server never sends `FellBehind` to clients: Streams.Read's
   * TryConvertReadResponse), then live events. A filtered one also gets checkpoints, every
   * `checkpointInterval` x its search window (32 by default) records considered, matching or
   * not, during catch-up and live, and one at the end of catch-up. All in one pass here: the log
   * does not move while a catch-up runs.
   */
  private subscribeToAll(call: any, options: any): void {
    this.subscriptionsOpened++;
    const all = options.getAll();
    const filtered = options.hasFilter();
    const filter = filtered ? eventFilter(options.getFilter()) : () => true;
    const window = filtered && options.getFilter().hasMax() ? options.getFilter().getMax() : READ_BATCH_SIZE;
    const interval = filtered ? window * options.getFilter().getCheckpointintervalmultiplier() : Infinity;
    const lastPosition = this.log[this.log.length - 1]?.position ?? -1n;
    // The last event or checkpoint sent: events after it are sent, checkpoints at or after it.
    let checkpoint = all.hasPosition() ? BigInt(all.getPosition().getCommitPosition()) : all.hasEnd() ? lastPosition : -1n;
    let open = true;
    const send = (resp: any) => {
      if (open) call.write(resp);
    };
    const sendCheckpoint = (position: bigint) => {
      if (!filtered || position < 0n) return;
      const resp = new streamsPb.ReadResp();
      const cp = new streamsPb.ReadResp.Checkpoint();
      cp.setCommitPosition(position.toString());
      cp.setPreparePosition(position.toString());
      resp.setCheckpoint(cp);
      send(resp);
    };
    const sendEvent = (event: StoredEvent) => {
      if (event.position <= checkpoint) return;
      if (filter(event)) send(readResp(event));
      checkpoint = event.position;
    };
    // Live (SubscriptionsService.ProcessEventCommited): every committed event counts towards the
    // interval, and the one that reaches it is a checkpoint at its position.
    let liveCounter = 0;
    const live = (event: StoredEvent) => {
      sendEvent(event);
      if (++liveCounter < interval) return;
      liveCounter = 0;
      if (event.position >= checkpoint) {
        sendCheckpoint(event.position);
        checkpoint = event.position;
      }
    };
    const confirmation = new streamsPb.ReadResp();
    const confirmed = new streamsPb.ReadResp.SubscriptionConfirmation();
    confirmed.setSubscriptionId(randomUUID());
    confirmation.setConfirmation(confirmed);
    send(confirmation);
    // Catch-up (CatchUp): pages of `window` records read from the checkpoint; after a page that
    // brings the count of records considered to the interval, a checkpoint at the later of the
    // last event sent and the page's start; at the end of the log, one more, then caught-up.
    if (checkpoint < lastPosition) {
      let counter = 0;
      let pageStart = checkpoint < 0n ? 0n : checkpoint;
      for (;;) {
        const from = this.log.findIndex((e) => e.position >= pageStart);
        const page = from < 0 ? [] : this.log.slice(from, from + window);
        for (const event of page) sendEvent(event);
        const atEnd = from < 0 || from + page.length >= this.log.length;
        counter += page.length;
        if (atEnd || counter >= interval) {
          counter %= interval;
          if (checkpoint < pageStart) checkpoint = pageStart;
          sendCheckpoint(checkpoint);
        }
        if (atEnd) break;
        pageStart = page[page.length - 1].postPosition;
      }
    }
    const caughtUp = new streamsPb.ReadResp();
    caughtUp.setCaughtUp(new streamsPb.ReadResp.CaughtUp());
    send(caughtUp);
    const subscriber: LiveSubscriber = {
      deliver: live,
      drop: () => {
        if (!open) return;
        open = false;
        call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'subscription dropped (fake: the node went away)' });
      },
    };
    this.live.add(subscriber);
    const end = () => {
      open = false;
      this.live.delete(subscriber);
    };
    call.on('cancelled', end);
    call.on('error', end);
    call.on('close', end);
  }

  /** Ends every open `$all` subscription with UNAVAILABLE, as a connection lost to a node ends it. */
  dropSubscriptions(): number {
    const dropped = [...this.live];
    for (const subscriber of dropped) subscriber.drop();
    this.live.clear();
    return dropped.length;
  }

  /** Subscriptions to `$all` open now. */
  get liveSubscriptions(): number {
    return this.live.size;
  }
}

function streamDeleted(streamId: string) {
  const metadata = new grpc.Metadata();
  metadata.set('exception', 'stream-deleted');
  metadata.set('stream-name', streamId);
  return { code: grpc.status.FAILED_PRECONDITION, details: `Event stream '${streamId}' is deleted.`, metadata };
}

/**
 * A read's filter (Streams.Read's ConvertToEventFilter): on the event type or the stream name,
 * by regular expression or by prefixes.
 */
function eventFilter(options: any): (event: StoredEvent) => boolean {
  const onType = options.hasEventType();
  const expression = onType ? options.getEventType() : options.getStreamIdentifier();
  const pick = (event: StoredEvent) => (onType ? event.type : event.streamId);
  const regex = expression.getRegex();
  if (regex) {
    const compiled = new RegExp(regex);
    return (event) => compiled.test(pick(event));
  }
  const prefixes: string[] = expression.getPrefixList();
  return (event) => prefixes.some((prefix) => pick(event).startsWith(prefix));
}

/** One event as a read answers it (Streams.Read.ConvertToReadEvent: an event committed by itself has its position, in stream reads too). */
function readResp(event: StoredEvent): any {
  const recorded = new streamsPb.ReadResp.ReadEvent.RecordedEvent();
  const id = new sharedPb.UUID();
  id.setString(event.id);
  recorded.setId(id);
  const identifier = new sharedPb.StreamIdentifier();
  identifier.setStreamName(Buffer.from(event.streamId, 'utf8'));
  recorded.setStreamIdentifier(identifier);
  recorded.setStreamRevision(event.revision.toString());
  recorded.setCommitPosition(event.position.toString());
  recorded.setPreparePosition(event.position.toString());
  recorded.getMetadataMap().set('type', event.type);
  recorded.getMetadataMap().set('content-type', event.isJson ? 'application/json' : 'application/octet-stream');
  recorded.getMetadataMap().set('created', event.created.toString());
  recorded.setCustomMetadata(event.metadata);
  recorded.setData(event.data);
  const readEvent = new streamsPb.ReadResp.ReadEvent();
  readEvent.setEvent(recorded);
  readEvent.setCommitPosition(event.position.toString());
  const resp = new streamsPb.ReadResp();
  resp.setEvent(readEvent);
  return resp;
}

function json(value: unknown): Uint8Array {
  return new Uint8Array(Buffer.from(JSON.stringify(value), 'utf8'));
}

function proposed(message: any): Proposed {
  return {
    id: message.getId().getString(),
    type: message.getMetadataMap().get('type'),
    data: message.getData_asU8(),
    metadata: message.getCustomMetadata_asU8(),
    isJson: message.getMetadataMap().get('content-type') === 'application/json',
  };
}
