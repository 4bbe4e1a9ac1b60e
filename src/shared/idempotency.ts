import { ConflictError } from './errors.js';
import { derivedUuid } from './ids.js';

/**
 * Idempotent dispatch: the same key (per app, environment and kind) within the retention window
 * answers with the first dispatch's id and starts nothing new.
 *
 * No table of keys: the id itself is derived from (kind, app, environment, key, generation), so
 * the stream's "must not exist yet" expectation makes a second dispatch of the same key a no-op on
 * every instance that shares the store, even two racing ones. Generation 0 is tried first; when
 * the workflow (or task) it names was dispatched longer ago than the window, the key is free again
 * and the next generation is tried, and so on. A key reused every day thus costs one extra
 * one-event read per past day; keys are meant to be retried for minutes, not reused forever.
 *
 * Retention may delete an earlier generation (it keeps a derived id for the window after its
 * dispatch, no longer), and it remembers that it did (`EventStore.wasDeleted`): a deleted
 * generation is one whose window has passed, so the walk goes on past it. Taken for a free one,
 * a retry of a later generation within its window started the deleted one again under its old
 * id (and on EventStoreDB, where a tombstoned stream cannot be written again, every dispatch of
 * the key failed).
 */

export type IdempotentKind = 'workflow' | 'task';

export interface IdempotencyScope {
  kind: IdempotentKind;
  appId: string;
  environment: string;
  key: string;
}

/** What the first dispatch under an id recorded. */
export interface FirstDispatch {
  name: string;
  dispatchedAt: number;
}

export const idempotentId = (scope: IdempotencyScope, generation: number): string =>
  derivedUuid('idempotency', scope.kind, scope.appId, scope.environment, scope.key, String(generation));

export interface DispatchOnce {
  scope: IdempotencyScope;
  /** Name of what is dispatched: a key reused for another name within the window is a CONFLICT. */
  name: string;
  now: number;
  windowMs: number;
  /** The first event under this id, if any. */
  read(id: string): Promise<FirstDispatch | undefined>;
  /** Whether retention deleted the stream of this id (a generation whose window has passed). */
  deleted?(id: string): Promise<boolean>;
  /** Dispatches under this id; true when it recorded a new dispatch, false when one existed. */
  dispatch(id: string): Promise<boolean>;
  /** Drops what this process caches of the id's stream (one retention deleted is still cached until its `WorkflowsExpired` arrives). */
  forget?(id: string): void;
}

/** Runs `dispatch` once per key and window; answers the id and whether this call started it. */
export async function dispatchOnce(d: DispatchOnce): Promise<{ id: string; created: boolean }> {
  for (let generation = 0; ; generation++) {
    const id = idempotentId(d.scope, generation);
    let first = await d.read(id);
    if (!first) {
      if (d.deleted && (await d.deleted(id))) continue;
      if (await d.dispatch(id)) return { id, created: true };
      first = await d.read(id);
      if (!first && d.forget) {
        // Refused as existing, yet not in the store: a cached state of a stream retention deleted.
        d.forget(id);
        if (await d.dispatch(id)) return { id, created: true };
        first = await d.read(id);
      }
      if (!first) throw new Error(`dispatch ${id} neither recorded nor found`);
    }
    if (d.now - first.dispatchedAt < d.windowMs) {
      if (first.name !== d.name) {
        throw new ConflictError(`idempotency key ${JSON.stringify(d.scope.key)} was used for ${d.scope.kind} ${JSON.stringify(first.name)} within the retention window`);
      }
      return { id, created: false };
    }
  }
}

/** Reads one stream (the event store's `readStream`, structurally: `shared/` imports nothing above it). */
export interface StreamReader {
  readStream(streamId: string, options: { maxCount: number }): Promise<Array<{ data: unknown }>>;
}

/** The dispatch event that opens a `workflow-` or `task-` stream, as `dispatchOnce` compares it. */
export async function firstDispatch(store: StreamReader, streamId: string): Promise<FirstDispatch | undefined> {
  const [first] = await store.readStream(streamId, { maxCount: 1 });
  if (!first) return undefined;
  const data = first.data as { name: string; dispatchedAt: string };
  return { name: data.name, dispatchedAt: Date.parse(data.dispatchedAt) };
}
