import { Injectable } from '@nestjs/common';
import { EventsHandler } from '@nestjs/cqrs';
import { RecordedEvent } from './event-store.port.js';

/**
 * An event read back from the store, as `@nestjs/cqrs` handlers receive it. Each persisted type
 * (a string literal, never a constructor name) has its own subclass, so `@EventsHandler` can
 * route by type.
 */
export class StoredEvent<Data = unknown> {
  static readonly type: string;
  constructor(readonly recorded: RecordedEvent<string, Data>) {}
  get type(): string {
    return this.recorded.type;
  }
  get data(): Data {
    return this.recorded.data;
  }
}

const classes = new Map<string, typeof StoredEvent>();

/** The class standing for one persisted event type (created once, named after the type). */
export function eventClass(type: string): typeof StoredEvent {
  let cls = classes.get(type);
  if (!cls) {
    cls = { [type]: class extends StoredEvent {} }[type] as typeof StoredEvent;
    Object.defineProperty(cls, 'type', { value: type });
    classes.set(type, cls);
  }
  return cls;
}

/** Rewrites an event stored in an older shape into the current one. */
export type Upcaster = (event: RecordedEvent) => RecordedEvent;

/**
 * Maps persisted event types to their classes and upcasts old versions. Types nobody registered
 * are skipped by projections, not fatal: a newer Baton may have written them.
 */
@Injectable()
export class EventRegistry {
  private readonly known = new Set<string>();
  private readonly upcasters = new Map<string, Upcaster[]>();

  register(types: readonly string[]): void {
    for (const type of types) this.known.add(type);
  }

  /** Upcasters run in registration order on every read of an event of `type`. */
  registerUpcaster(type: string, upcaster: Upcaster): void {
    this.upcasters.set(type, [...(this.upcasters.get(type) ?? []), upcaster]);
  }

  upcast(event: RecordedEvent): RecordedEvent {
    const chain = this.upcasters.get(event.type);
    if (!chain) return event;
    // A plain copy first: a store may hand over metadata as an accessor (parsed when read), which
    // an upcaster's `{ ...event }` would not carry over.
    const { id, type, streamId, revision, position, data, metadata, recordedAt } = event;
    return chain.reduce((e, up) => up(e), { id, type, streamId, revision, position, data, metadata, recordedAt } as RecordedEvent);
  }

  /** The event upcast to its current shape, or null when its type is unknown (a newer Baton wrote it). */
  prepare(event: RecordedEvent): RecordedEvent | null {
    const upcast = this.upcast(event);
    return this.known.has(upcast.type) ? upcast : null;
  }

  /** Whether events of this type are known (registered by a module). */
  isKnown(type: string): boolean {
    return this.known.has(type);
  }

  /** The stored types an upcaster rewrites (their events may become of another type). */
  upcastTypes(): string[] {
    return [...this.upcasters.keys()];
  }

  /** The event as its class instance, or null when the type is unknown. */
  rehydrate(event: RecordedEvent): StoredEvent | null {
    const upcast = this.upcast(event);
    if (!this.known.has(upcast.type)) return null;
    return new (eventClass(upcast.type))(upcast);
  }
}

export const PROJECTION_TYPES = Symbol('baton.projectionTypes');

/**
 * Declares a read model's handler for these persisted event types: an `@EventsHandler` of their
 * classes, which the ProjectionRunner calls directly, synchronously and in log order (see
 * docs/DECISIONS.md: the EventBus's per-handler rxjs pipeline cost most of a replay).
 */
export function Projection(types: readonly string[]): ClassDecorator {
  return (target) => {
    EventsHandler(...types.map(eventClass))(target);
    Reflect.defineMetadata(PROJECTION_TYPES, [...types], target);
  };
}

export const READ_MODEL_TYPES = Symbol('baton.readModelTypes');

/**
 * A durable read model: rows in the read-model database (`ReadModelDb`), written by `project`
 * inside the ProjectionRunner's batch transaction, together with the checkpoint. Events at or
 * below the checkpoint are never handed to it again.
 */
export interface DurableProjection {
  /** Creates its tables and prepares its statements (called once at start). */
  migrate(): void;
  /** Folds one event into its rows; runs inside the batch transaction. */
  project(event: StoredEvent): void;
  /**
   * Optional write-back within a batch: `project` may keep rows in memory and write each changed
   * row once in `endBatch` (called inside the batch transaction, before the checkpoint moves);
   * `abortBatch` drops what was kept when the batch fails (its transaction is rolled back).
   */
  endBatch?(): void;
  abortBatch?(): void;
  /**
   * The streams still in flight (not final) at the checkpoint, for in-memory state to rebuild
   * from, each with the revision to read it from: its current run's first (a workflow that
   * continued as new starts over at its last `WorkflowContinuedAsNew`), so a restart's cost is
   * the runs in flight, not every run before them.
   */
  inFlightStreams?(visit: (streamId: string, fromRevision: number) => void): void;
}

export const READ_MODEL_STREAMS = Symbol('baton.readModelStreams');

/**
 * Declares a durable read model for these persisted event types (see `DurableProjection`).
 * `streams`: the prefixes of the only streams whose events it folds (its `project` passes over
 * the others); a bulk catch-up then leaves the others' events undecoded. Without it, every
 * stream's.
 */
export function ReadModel(types: readonly string[], options: { streams?: readonly string[] } = {}): ClassDecorator {
  return (target) => {
    Injectable()(target);
    Reflect.defineMetadata(READ_MODEL_TYPES, [...types], target);
    if (options.streams) Reflect.defineMetadata(READ_MODEL_STREAMS, [...options.streams], target);
  };
}

/** The stream prefixes a read model folds (`@ReadModel`'s `streams`), or null for every stream. */
export function readModelStreams(model: DurableProjection): readonly string[] | null {
  return (Reflect.getMetadata(READ_MODEL_STREAMS, model.constructor) as string[] | undefined) ?? null;
}
