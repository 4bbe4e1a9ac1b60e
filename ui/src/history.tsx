import { Button, Group, Text } from '@mantine/core';
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, HISTORY_PAGE, HistoryEvent, Scope, readHistoryPage } from './api';

/** One history as read so far: the events from revision 0 on, and whether they reach its end. */
interface Loaded {
  key: string;
  events: HistoryEvent[];
  /** The last read ended the history: the events shown are all of it (as of that read). */
  complete: boolean;
  /** Request length the service answered last (smaller than a page after PAYLOAD_TOO_LARGE). */
  size: number;
  /** Reads waiting or running: they run one after another, each from where the last one ended. */
  queue: Promise<unknown>;
  pending: number;
}

export interface HistoryView {
  /** The events read so far, from the first on, in order. */
  events: HistoryEvent[];
  /** The events read are the whole history: the last read ended it, or the service counts no more. */
  complete: boolean;
  /** The history's length: the service's count (`historyLength`), or more when more were read since. */
  total: number;
  /** Nothing read yet. */
  loading: boolean;
  /** A read is under way (the first page, more, or the rest). */
  busy: boolean;
  error: string | null;
  /** Reads the next page. */
  more: () => void;
  /** Reads every page left, showing each as it comes. */
  rest: () => void;
}

/**
 * A workflow's or schedule's history, read in pages of `HISTORY_PAGE` events: the first page at
 * once, the next ones when asked (`more`, `rest`). Once the events read reach the end, its new
 * events are read every `intervalMs` (from the last one read on, never the whole history again).
 * `historyLength` is the service's count of its events, when the page knows it.
 */
export function useHistory(kind: 'workflow' | 'schedule', scope: Scope, id: string, historyLength: number | undefined, intervalMs = 2000): HistoryView {
  const key = `${kind} ${scope.appId} ${scope.environment} ${id}`;
  const ref = useRef<Loaded | null>(null);
  if (ref.current?.key !== key) ref.current = { key, events: [], complete: false, size: HISTORY_PAGE, queue: Promise.resolve(), pending: 0 };
  const loaded = ref.current;
  const [, setVersion] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const changed = useCallback(() => setVersion((v) => v + 1), []);
  const length = useRef(historyLength);
  length.current = historyLength;
  /** The events read reach the end the last read or the service's count saw: read on from there. */
  const atEnd = (l: Loaded) => l.complete || (length.current !== undefined && l.events.length >= length.current);

  /** Reads the next page; answers whether the history goes on after it. */
  const readNext = useCallback(
    async (l: Loaded): Promise<boolean> => {
      const last = l.events[l.events.length - 1];
      const page = await readHistoryPage(kind, scope, id, last ? last.revision + 1 : 0, HISTORY_PAGE, l.size);
      if (ref.current !== l) return false;
      l.size = page.size;
      l.events = l.events.concat(page.events);
      l.complete = page.ended;
      setError(null);
      return !page.ended;
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [key],
  );

  const enqueue = useCallback(
    (read: (l: Loaded) => Promise<unknown>) => {
      const l = ref.current!;
      l.pending++;
      changed();
      l.queue = l.queue
        .then(() => (ref.current === l ? read(l) : undefined))
        .catch((e) => ref.current === l && setError(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e)))
        .finally(() => {
          l.pending--;
          changed();
        });
      return l.queue;
    },
    [changed],
  );

  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout>;
    const poll = async () => {
      const l = ref.current!;
      // Until the end is read, the user pages on with `more`; after it, new events are appended.
      if (l.events.length === 0 || (atEnd(l) && l.pending === 0)) await enqueue(readNext);
      if (alive && intervalMs > 0) timer = setTimeout(poll, intervalMs);
    };
    void poll();
    return () => {
      alive = false;
      clearTimeout(timer);
    };
  }, [key, intervalMs, enqueue, readNext]);

  return {
    events: loaded.events,
    complete: atEnd(loaded) && loaded.events.length >= (historyLength ?? 0),
    total: Math.max(historyLength ?? 0, loaded.events.length),
    loading: loaded.events.length === 0 && !loaded.complete,
    busy: loaded.pending > 0,
    error,
    more: () => void enqueue(readNext),
    rest: () =>
      void enqueue(async (l) => {
        while (await readNext(l));
      }),
  };
}

/**
 * How much of a history is shown: "12 events", or "Showing 500 of 41,203 events" with buttons to
 * read the next page and all the rest.
 */
export function HistoryProgress({ history, noun = 'events', testId = 'history' }: { history: HistoryView; noun?: string; testId?: string }) {
  const shown = history.events.length;
  const count = history.total;
  const all = history.complete;
  const n = (x: number) => x.toLocaleString('en');
  return (
    <Group gap="sm" data-testid={`${testId}-progress`} data-shown={shown} data-total={count} data-complete={all}>
      <Text size="sm" c={all ? 'dimmed' : undefined} fw={all ? undefined : 600} data-testid={`${testId}-count`}>
        {history.loading ? 'Loading…' : all ? `${n(shown)} ${noun}` : `Showing ${n(shown)} of ${n(count)}${count > shown ? '' : '+'} ${noun}`}
      </Text>
      {!history.loading && !all && (
        <>
          <Button size="xs" variant="default" loading={history.busy} onClick={history.more}>
            Load {n(count > shown ? Math.min(HISTORY_PAGE, count - shown) : HISTORY_PAGE)} more
          </Button>
          <Button size="xs" variant="subtle" disabled={history.busy} onClick={history.rest}>
            {count > shown ? `Load all ${n(count)}` : 'Load all'}
          </Button>
        </>
      )}
    </Group>
  );
}
