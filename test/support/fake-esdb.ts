import { createRequire } from 'node:module';

/*
 * A fake EventStoreDB network peer: a gRPC server speaking the client's own protocol (the
 * generated service definitions `@eventstore/db-client` ships), over an in-memory log. Enough of
 * the server for what a spec needs to show without a real one: the server-features probe, appends
 * (the Append and BatchAppend RPCs), stream reads and tombstoned streams. A spec can hold the
 * answer to an append, and fail a connection's calls, as a network would.
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

interface StoredEvent {
  id: string;
  type: string;
  data: Uint8Array;
  metadata: Uint8Array;
  revision: bigint;
  position: bigint;
}

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

export class FakeEsdb {
  readonly streams = new Map<string, StoredEvent[]>();
  readonly tombstoned = new Set<string>();
  readonly received: ReceivedAppend[] = [];
  /** Decides whether to hold an append's answer; a held one waits for `release`. */
  hold: (append: ReceivedAppend) => boolean = () => false;
  private readonly held: Array<{ append: ReceivedAppend; answer: () => void }> = [];
  private nextPosition = 1000n;
  /**
   * The server's MaxAppendSize (its default, 1 MiB): an append whose events' type, data and
   * metadata come to more is refused whole (the server's rule counts a little more per event).
   */
  maxAppendSize = 1024 * 1024;
  private server: any;
  port = 0;

  static async start(): Promise<FakeEsdb> {
    const fake = new FakeEsdb();
    await fake.listen();
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
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    this.server.forceShutdown();
  }

  private async listen(): Promise<void> {
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
      delete: (_call: any, callback: any) => callback({ code: grpc.status.UNIMPLEMENTED, details: 'not in the fake' }),
      tombstone: (_call: any, callback: any) => callback({ code: grpc.status.UNIMPLEMENTED, details: 'not in the fake' }),
    });
    this.port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error: Error | null, port: number) =>
        error ? reject(error) : resolve(port),
      ),
    );
  }

  /** What the server decides for an append (EventStoreDB's rules, idempotence left out). */
  private decide(streamId: string, expected: Expected, events: Array<Omit<StoredEvent, 'revision' | 'position'>>): Outcome {
    const size = events.reduce((sum, e) => sum + Buffer.byteLength(e.type) + e.data.length + e.metadata.length, 0);
    if (size > this.maxAppendSize) return { kind: 'too-large' };
    if (this.tombstoned.has(streamId)) return { kind: 'deleted' };
    const stream = this.streams.get(streamId) ?? [];
    const current = stream.length === 0 ? 'no_stream' : BigInt(stream.length - 1);
    const ok =
      expected === 'any' ||
      (expected === 'no_stream' && current === 'no_stream') ||
      (expected === 'stream_exists' && current !== 'no_stream') ||
      (typeof expected === 'bigint' && current === expected);
    if (!ok) return { kind: 'wrong', current, expected };
    for (const event of events) {
      stream.push({ ...event, revision: BigInt(stream.length), position: this.nextPosition });
      this.nextPosition += 100n;
    }
    this.streams.set(streamId, stream);
    const last = stream[stream.length - 1];
    return { kind: 'success', revision: last.revision, position: last.position };
  }

  private receive(append: ReceivedAppend, answer: () => void): void {
    this.received.push(append);
    if (this.hold(append)) this.held.push({ append, answer });
    else answer();
  }

  private appendRpc(call: any, callback: any): void {
    let options: any;
    const events: Array<Omit<StoredEvent, 'revision' | 'position'>> = [];
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
          const metadata = new grpc.Metadata();
          metadata.set('exception', 'stream-deleted');
          metadata.set('stream-name', streamId);
          finish({ code: grpc.status.FAILED_PRECONDITION, details: `Event stream '${streamId}' is deleted.`, metadata });
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
    const pending = new Map<string, { options: any; events: Array<Omit<StoredEvent, 'revision' | 'position'>> }>();
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

  /** Stream reads (forwards or backwards, from a revision, up to a count); `$all` reads answer nothing. */
  private read(call: any): void {
    const options = call.request.getOptions();
    if (!options.hasStream()) {
      call.end();
      return;
    }
    const streamOptions = options.getStream();
    const streamId = Buffer.from(streamOptions.getStreamIdentifier().getStreamName()).toString('utf8');
    if (this.tombstoned.has(streamId)) {
      const metadata = new grpc.Metadata();
      metadata.set('exception', 'stream-deleted');
      metadata.set('stream-name', streamId);
      call.emit('error', Object.assign(new Error('deleted'), { code: grpc.status.FAILED_PRECONDITION, details: `Event stream '${streamId}' is deleted.`, metadata }));
      return;
    }
    const stream = this.streams.get(streamId);
    if (!stream || stream.length === 0) {
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
    const last = BigInt(stream.length - 1);
    const from = streamOptions.hasRevision() ? BigInt(streamOptions.getRevision()) : streamOptions.hasEnd() ? last : 0n;
    const ordered = backwards ? stream.filter((e) => e.revision <= from).reverse() : stream.filter((e) => e.revision >= from);
    for (const event of ordered.slice(0, count)) {
      const recorded = new streamsPb.ReadResp.ReadEvent.RecordedEvent();
      const id = new sharedPb.UUID();
      id.setString(event.id);
      recorded.setId(id);
      const identifier = new sharedPb.StreamIdentifier();
      identifier.setStreamName(Buffer.from(streamId, 'utf8'));
      recorded.setStreamIdentifier(identifier);
      recorded.setStreamRevision(event.revision.toString());
      recorded.setCommitPosition(event.position.toString());
      recorded.setPreparePosition(event.position.toString());
      recorded.getMetadataMap().set('type', event.type);
      recorded.getMetadataMap().set('content-type', 'application/json');
      recorded.getMetadataMap().set('created', (BigInt(Date.now()) * 10_000n).toString());
      recorded.setCustomMetadata(event.metadata);
      recorded.setData(event.data);
      const readEvent = new streamsPb.ReadResp.ReadEvent();
      readEvent.setEvent(recorded);
      readEvent.setCommitPosition(event.position.toString());
      const resp = new streamsPb.ReadResp();
      resp.setEvent(readEvent);
      call.write(resp);
    }
    call.end();
  }
}

function proposed(message: any): Omit<StoredEvent, 'revision' | 'position'> {
  return {
    id: message.getId().getString(),
    type: message.getMetadataMap().get('type'),
    data: message.getData_asU8(),
    metadata: message.getCustomMetadata_asU8(),
  };
}
