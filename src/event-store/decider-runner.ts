import { Inject, Injectable, Logger } from '@nestjs/common';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { Decider, DomainEvent, fold } from '../shared/decider.js';
import { ConflictError, StoreUnavailable } from '../shared/errors.js';
import { uuidv7 } from '../shared/ids.js';
import {
  DeletedStreamError,
  EVENT_STORE,
  EventMetadata,
  type EventStore,
  NewEvent,
  RecordedEvent,
  StoreUnavailableError,
  WrongExpectedRevisionError,
  revisionOf,
} from './event-store.port.js';
import { EventRegistry } from './event-registry.js';
import { ProjectionRunner } from './projection-runner.js';
import { type CommandContext, QueueOptions, RunResult, StreamQueues } from './stream-queues.js';

export type { CommandContext, RunResult } from './stream-queues.js';

export interface RunOptions extends QueueOptions {
  /** Wait until this instance's read models include the appended events (default true). */
  readYourWrites?: boolean;
}

const MAX_CONFLICT_RETRIES = 50;

/**
 * One command on a stream without a cache: read it whole, fold, decide, append with the revision
 * read, and retry only when another writer got there first. For one-off tools (the CLI); the
 * service goes through `DeciderRunner`, whose per-stream queues and cache do not re-read streams.
 */
export async function decideAndAppend<C, E extends DomainEvent, S>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, E, S>,
  command: C | ((state: S) => C),
  context: CommandContext,
  options: QueueOptions & { upcast?: (e: RecordedEvent) => RecordedEvent } = {},
): Promise<RunResult<E, S>> {
  for (let attempt = 0; ; attempt++) {
    const recorded = await guard(() => store.readStream(streamId));
    const state = fold(decider, options.upcast ? recorded.map(options.upcast) : recorded);
    const cmd = typeof command === 'function' ? (command as (s: S) => C)(state) : command;
    const events = decider.decide(cmd, state);
    const seenPosition = recorded.at(-1)?.position;
    if (events.length === 0) return { events, state, before: state, position: undefined, seenPosition };
    const metadata: EventMetadata = {
      ...context,
      causationId: context.causationId ?? context.correlationId,
      at: new Date().toISOString(),
    };
    const toAppend: NewEvent[] = events.map((event, i) => ({
      id: options.eventId?.(event, i) ?? uuidv7(),
      type: event.type,
      data: event.data,
      metadata,
    }));
    try {
      const result = await guard(() => store.append(streamId, toAppend, revisionOf(recorded)));
      const after = events.reduce((s, e) => decider.evolve(s, e), state);
      return { events, state: after, before: state, position: result.position, seenPosition: result.position };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < MAX_CONFLICT_RETRIES) continue;
      throw error;
    }
  }
}

/**
 * Every command of the service goes through here: the per-stream queues (batched appends over
 * cached state, see `StreamQueues`), then, by default, a wait until this instance's read models
 * include the appended events (read your writes).
 */
@Injectable()
export class DeciderRunner {
  private readonly logger = new Logger('Streams');
  readonly queues: StreamQueues;

  constructor(
    @Inject(EVENT_STORE) store: EventStore,
    registry: EventRegistry,
    private readonly projections: ProjectionRunner,
    @Inject(BATON_CONFIG) config: BatonConfig,
  ) {
    const warned = new Set<string>();
    this.queues = new StreamQueues(store, {
      capacity: config.streamCacheSize,
      prepare: (event) => {
        const prepared = registry.prepare(event);
        if (!prepared && !warned.has(event.type)) {
          warned.add(event.type);
          this.logger.warn(`skipping events of unknown type ${event.type} (first seen in ${event.streamId} at revision ${event.revision})`);
        }
        return prepared;
      },
      mapError: (error) =>
        error instanceof StoreUnavailableError
          ? new StoreUnavailable(error.message)
          : // A name retention tombstoned (EventStoreDB): refused for good, not a fault to retry.
            error instanceof DeletedStreamError
            ? new ConflictError(error.message)
            : error,
    });
  }

  /** The stream's current state (see `StreamQueues.state`). */
  state<S>(streamId: string, decider: Decider<any, any, S>, context: CommandContext): Promise<{ state: S; seenPosition: bigint | undefined }> {
    return this.queues.state(streamId, decider, context);
  }

  async run<C, E extends DomainEvent, S>(
    streamId: string,
    decider: Decider<C, E, S>,
    command: C | ((state: S) => C),
    context: CommandContext,
    options: RunOptions = {},
  ): Promise<RunResult<E, S>> {
    const result = await this.queues.run(streamId, decider, command, context, options);
    if (result.position !== undefined && options.readYourWrites !== false) await this.projections.waitFor(result.position);
    return result;
  }
}

async function guard<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof StoreUnavailableError) throw new StoreUnavailable(error.message);
    throw error;
  }
}
