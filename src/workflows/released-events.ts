import type { EventStore } from '../event-store/event-store.port.js';

/** Events of a stream read at a time while putting released events' data in (a run of consecutive revisions). */
export const RELEASE_READ_CHUNK = 64;

interface HistoryItem {
  revision: number;
  type: string;
  data: unknown;
}

/**
 * The events as workflow code sees them: each release (`WorkflowEventReceived { queuedAt }`)
 * becomes the ordinary `WorkflowEventReceived { name, data, causeId? }` of the event it releases,
 * read from its `WorkflowEventQueued` in the same stream, so SDKs of every version replay it as a
 * received event (the revision stays the release's). Reads only the queued events released here,
 * by revision, a run of consecutive revisions (at most RELEASE_READ_CHUNK) a read: never more
 * events than there are releases in `events`, and no read at all when there is none.
 */
export async function withReleasedData<E extends HistoryItem>(store: Pick<EventStore, 'readStream'>, streamId: string, events: E[]): Promise<E[]> {
  const wanted: number[] = [];
  for (const e of events) {
    const at = releasedFrom(e);
    if (at !== undefined) wanted.push(at);
  }
  if (wanted.length === 0) return events;
  wanted.sort((a, b) => a - b);
  const queued = new Map<number, unknown>();
  for (let i = 0; i < wanted.length; ) {
    let n = 1;
    while (i + n < wanted.length && n < RELEASE_READ_CHUNK && wanted[i + n] === wanted[i] + n) n++;
    const read = await store.readStream(streamId, { fromRevision: BigInt(wanted[i]), maxCount: n });
    for (const r of read) if (r.type === 'WorkflowEventQueued') queued.set(Number(r.revision), r.data);
    i += n;
  }
  return events.map((e) => {
    const at = releasedFrom(e);
    if (at === undefined) return e;
    const original = queued.get(at);
    // Never expected (a running workflow's stream is never cut): an error, not a history with a hole the code would replay wrongly.
    if (original === undefined) throw new Error(`${streamId}: the release at revision ${e.revision} points at revision ${at}, which holds no WorkflowEventQueued`);
    return { ...e, data: original };
  });
}

/** The revision of the queued event `e` releases, when it is a release. */
export function releasedFrom(e: { type: string; data: unknown }): number | undefined {
  if (e.type !== 'WorkflowEventReceived') return undefined;
  const at = (e.data as { queuedAt?: unknown } | null)?.queuedAt;
  return typeof at === 'number' ? at : undefined;
}
