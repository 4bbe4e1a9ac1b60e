import type { EventStore, RecordedEvent } from './event-store.port.js';

/** Events read at a time, newest first, looking for the run's start. */
export const RUN_PAGE = 512;

/**
 * A stream from its newest reset event on (all of it when `resetTypes` is empty): a workflow's
 * current run, from its last `WorkflowContinuedAsNew`. Read backwards a page at a time, so the
 * cost is the run's length, not the stream's whole history.
 */
export async function readLatestRun(store: EventStore, streamId: string, resetTypes: ReadonlySet<string> | undefined, pageSize = RUN_PAGE): Promise<RecordedEvent[]> {
  if (!resetTypes || resetTypes.size === 0) return store.readStream(streamId);
  const pages: RecordedEvent[][] = [];
  let from: bigint | undefined;
  for (;;) {
    const page = await store.readStream(streamId, { direction: 'backwards', fromRevision: from, maxCount: pageSize });
    if (page.length === 0) break;
    const reset = page.findIndex((e) => resetTypes.has(e.type));
    if (reset >= 0) {
      pages.push(page.slice(0, reset + 1));
      break;
    }
    pages.push(page);
    const last = page[page.length - 1].revision;
    if (last === 0n || page.length < pageSize) break;
    from = last - 1n;
  }
  return pages.flat().reverse();
}
