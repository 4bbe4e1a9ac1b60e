import { Injectable } from '@nestjs/common';

/**
 * Longest a lookup by id (an `{ id }` action, `awaitWorkflow`, `workflow`, `workflowHistory`)
 * waits for a child its parent recorded to be created (the read fence's bound).
 */
export const CHILD_CREATION_WAIT_MS = 10_000;

/**
 * Child workflows whose id is already recorded (`ChildWorkflowStarted` in the parent's stream;
 * `ctx.dispatch` answers it to the code) and that this instance's effects reactor has not created
 * yet. An `{ id }` selector for such a child waits for its creation instead of answering
 * NOT_FOUND, which the original service's client reads as "nothing matched" (the event is lost
 * without an error); `awaitWorkflow`, `workflow` and `workflowHistory` wait for it instead of
 * answering that there is no such workflow (`result()` threw NOT_FOUND). The reactor announces a child when it takes its `ChildWorkflowStarted` and
 * settles it once that effect is finished (carried out or skipped); it also says how far it has
 * read, so that a selector knows every child announced up to the position it read to is listed.
 */
@Injectable()
export class PendingChildren {
  private readonly pending = new Map<string, { scope: string; done: Promise<void>; settle: () => void }>();
  private read = -1n;
  private readonly readers = new Set<{ at: bigint; wake: () => void }>();
  /** Apps past the reactor's bound: the position of each one's first event it has not taken yet. */
  private readonly behind = new Map<string, bigint>();
  /** Lookups waiting for an app's passed-over events, by app. */
  private readonly behindReaders = new Map<string, Set<{ at: bigint; wake: () => void }>>();

  /**
   * The reactor took the `ChildWorkflowStarted` of `childId`, in the app and environment `scope`
   * (`scopeOf`, the parent's, which the child shares): the child is about to be created.
   */
  announce(childId: string, scope: string): void {
    if (this.pending.has(childId)) return;
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    this.pending.set(childId, { scope, done, settle });
  }

  /** The effect that creates `childId` is finished (the child exists, or it was skipped). */
  settle(childId: string): void {
    const entry = this.pending.get(childId);
    if (!entry) return;
    this.pending.delete(childId);
    entry.settle();
  }

  /** The reactor has read the log up to `position` (every child announced up to there is listed). */
  readTo(position: bigint): void {
    if (position <= this.read) return;
    this.read = position;
    for (const reader of this.readers) if (reader.at <= position) reader.wake();
  }

  /**
   * `appId` went past the reactor's bound of effects held per app: its events from `from` on are
   * passed over by the reactor's read (and not announced) until it reads them again; `undefined`
   * once it has taken them all. A lookup in that app waits for the events up to its position to
   * be taken, as it waits for the reactor's read (found in review: such an app's child was
   * answered as unknown at once, the gap the wait closes for other apps).
   */
  appBehind(appId: string, from: bigint | undefined): void {
    if (from === undefined) this.behind.delete(appId);
    else if (this.behind.get(appId) === from) return;
    else this.behind.set(appId, from);
    for (const reader of this.behindReaders.get(appId) ?? []) if (this.takenUpTo(appId, reader.at)) reader.wake();
  }

  /** Whether the reactor has taken every event of `appId` up to `at` (announced its children). */
  private takenUpTo(appId: string, at: bigint): boolean {
    const from = this.behind.get(appId);
    return from === undefined || from > at;
  }

  /**
   * Waits (at most `timeoutMs` in all) until the reactor has read up to `at` (and, in an app past
   * its bound, taken that app's events up to `at`) and, when `childId` is a child it has still to
   * create in `scope` (the lookup's app and environment), until it has. True when the child was
   * pending, or the app's events were still to be taken (look again). A child of another app or
   * environment is not waited for: the lookup answers as for an unknown id (found in review:
   * another app's token was held until that app's child was created, which told it the id was one).
   */
  async waitFor(childId: string, at: bigint, timeoutMs: number, scope: string): Promise<boolean> {
    // Only an id of the kind children get (`callId`: UUID version 8) may be one: a workflow
    // dispatched through the API (version 7) or any other id is answered at once, whatever the
    // reactor is doing (a miss on a deleted or mistyped workflow waited for a lagging reactor, and
    // in an app over the reactor's bound, for its backlog).
    if (!isDerivedId(childId)) return false;
    const deadline = Date.now() + timeoutMs;
    if (this.read < at) {
      let reader!: { at: bigint; wake: () => void };
      const caughtUp = new Promise<void>((resolve) => {
        reader = { at, wake: resolve };
        this.readers.add(reader);
      });
      await within(caughtUp, deadline - Date.now());
      this.readers.delete(reader);
    }
    let lagged = false;
    const appId = appOf(scope);
    if (!this.pending.has(childId) && !this.takenUpTo(appId, at)) {
      lagged = true;
      let reader!: { at: bigint; wake: () => void };
      let readers = this.behindReaders.get(appId);
      if (!readers) this.behindReaders.set(appId, (readers = new Set()));
      const taken = new Promise<void>((resolve) => {
        reader = { at, wake: resolve };
        readers.add(reader);
      });
      await within(taken, deadline - Date.now());
      readers.delete(reader);
      if (readers.size === 0 && this.behindReaders.get(appId) === readers) this.behindReaders.delete(appId);
    }
    const entry = this.pending.get(childId);
    if (!entry || entry.scope !== scope) return lagged;
    await within(entry.done, deadline - Date.now());
    return true;
  }
}

/** The key of an app and environment in `PendingChildren`. */
export function scopeOf(appId: string, environment: string): string {
  return JSON.stringify([appId, environment]);
}

/** Whether `id` is a UUID of version 8, as `derivedUuid` makes them (a child's id: `callId`). */
function isDerivedId(id: string): boolean {
  return id.length === 36 && id[14] === '8';
}

/** The app of a `scopeOf` key. */
function appOf(scope: string): string {
  return (JSON.parse(scope) as [string, string])[0];
}

/** `promise`, or nothing after `ms`. */
async function within(promise: Promise<void>, ms: number): Promise<void> {
  if (ms <= 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
