import { Inject, Injectable } from '@nestjs/common';
import { Decider, DomainEvent, fold } from '../shared/decider.js';
import { StoreUnavailable } from '../shared/errors.js';
import { uuidv7 } from '../shared/ids.js';
import {
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

/** Who asked, and when: becomes the events' metadata. */
export interface CommandContext {
  actor: string;
  appId: string;
  environment: string;
  correlationId: string;
  causationId?: string;
}

export interface RunOptions {
  /** Wait until this instance's read models include the appended events (default true). */
  readYourWrites?: boolean;
  /** Deterministic ids for the appended events (for idempotent retries of the same work). */
  eventId?: (event: DomainEvent, index: number) => string;
}

export interface RunResult<E, S> {
  events: E[];
  /** State after the appended events. */
  state: S;
  /** State the decision was made on. */
  before: S;
  /** The stream as read for the decision (before the appended events). */
  history: RecordedEvent[];
  position: bigint | undefined;
}

const MAX_CONFLICT_RETRIES = 50;

/**
 * The thin shell around every decider: read the stream, fold, decide, append with the revision
 * read, and retry only when another writer got there first. Usable without Nest (the CLI).
 */
export async function decideAndAppend<C, E extends DomainEvent, S>(
  store: EventStore,
  streamId: string,
  decider: Decider<C, E, S>,
  command: C | ((state: S) => C),
  context: CommandContext,
  options: Pick<RunOptions, 'eventId'> & { upcast?: (e: RecordedEvent) => RecordedEvent } = {},
): Promise<RunResult<E, S>> {
  for (let attempt = 0; ; attempt++) {
    const recorded = await guard(() => store.readStream(streamId));
    const state = fold(decider, options.upcast ? recorded.map(options.upcast) : recorded);
    const cmd = typeof command === 'function' ? (command as (s: S) => C)(state) : command;
    const events = decider.decide(cmd, state);
    if (events.length === 0) return { events, state, before: state, position: undefined, history: recorded };
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
      return { events, state: after, before: state, position: result.position, history: recorded };
    } catch (error) {
      if (error instanceof WrongExpectedRevisionError && attempt < MAX_CONFLICT_RETRIES) continue;
      throw error;
    }
  }
}

/** `decideAndAppend` inside the service, reading its own writes by default. */
@Injectable()
export class DeciderRunner {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly registry: EventRegistry,
    private readonly projections: ProjectionRunner,
  ) {}

  async run<C, E extends DomainEvent, S>(
    streamId: string,
    decider: Decider<C, E, S>,
    command: C | ((state: S) => C),
    context: CommandContext,
    options: RunOptions = {},
  ): Promise<RunResult<E, S>> {
    const result = await decideAndAppend(this.store, streamId, decider, command, context, {
      eventId: options.eventId,
      upcast: (e) => this.registry.upcast(e),
    });
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
