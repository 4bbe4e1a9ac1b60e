import { Badge, Button, Code, Group, Modal, Stack, Text } from '@mantine/core';
import { createContext, useCallback, useContext, useEffect, useRef, useState } from 'react';
import { ApiError, Scope, Viewer } from './api';

export interface Session {
  viewer: Viewer;
  scope: Scope;
  canControl: boolean;
  navigate: (path: string) => void;
}

export const SessionContext = createContext<Session | null>(null);
export const useSession = (): Session => useContext(SessionContext)!;

/** An API error as the pages show it: its code and message. */
const errorText = (e: unknown): string => (e instanceof ApiError ? `${e.code}: ${e.message}` : String(e));

/**
 * Loads `load()` now and every `intervalMs` (live updates without reloading the page). `data` is
 * the last answer, kept while `deps` change until the next one comes; `fresh` says it answers the
 * current `deps`.
 */
export function usePolling<T>(load: () => Promise<T>, deps: unknown[], intervalMs = 2000): { data: T | undefined; fresh: boolean; error: string | null; reload: () => void } {
  const [data, setData] = useState<T>();
  const depsKey = JSON.stringify(deps);
  const [loadedFor, setLoadedFor] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const loadRef = useRef(load);
  loadRef.current = load;
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    let alive = true;
    let timer: ReturnType<typeof setTimeout>;
    const run = async () => {
      try {
        const value = await loadRef.current();
        if (alive) {
          setData(value);
          setLoadedFor(depsKey);
          setError(null);
        }
      } catch (e) {
        if (alive) setError(errorText(e));
      }
      if (alive && intervalMs > 0) timer = setTimeout(run, intervalMs);
    };
    void run();
    return () => {
      alive = false;
      clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick, intervalMs]);
  return { data, fresh: loadedFor === depsKey, error, reload };
}

/** A page of a cursor-paginated list, as the API answers it. */
export interface Connection<N> {
  nodes: N[];
  pageInfo: { endCursor: string | null; hasNextPage: boolean };
}

/**
 * A list whose first page is polled (`load()`, every `intervalMs`) until older pages are loaded
 * by cursor (`more`), which then hold the list still until `backToNewest`. A filtered page may
 * come back short, even empty, with more to search (the API searches a bounded number of rows a
 * page), so older pages are fetched from the last page's `endCursor`, never as a larger first page.
 */
export function useCursorList<D, N>(
  load: () => Promise<D>,
  connection: (data: D) => Connection<N>,
  loadAfter: (after: string) => Promise<Connection<N>>,
  key: string,
  intervalMs = 2000,
): { data: D | undefined; error: string | null; nodes: N[]; hasNextPage: boolean; loadedOlder: boolean; more: () => void; backToNewest: () => void; refresh: () => void } {
  const [older, setOlder] = useState<Connection<N> | null>(null);
  const [moreError, setMoreError] = useState<string | null>(null);
  // What an older page or a refresh was asked for: an answer that comes after the filter (or the
  // app) changed belongs to the list as it was, and is dropped (it replaced the new list and
  // held it still).
  const current = useRef(key);
  current.current = key;
  useEffect(() => {
    setOlder(null);
    setMoreError(null);
  }, [key]);
  const { data, error, reload } = usePolling(load, [key], older ? 0 : intervalMs);
  const shown = older ?? (data ? connection(data) : null);
  const more = () => {
    if (!shown?.pageInfo.endCursor) return;
    const before = shown;
    const asked = key;
    loadAfter(before.pageInfo.endCursor!).then(
      (next) => {
        if (current.current !== asked) return;
        setOlder({ nodes: [...before.nodes, ...next.nodes], pageInfo: next.pageInfo });
        setMoreError(null);
      },
      (e) => current.current === asked && setMoreError(errorText(e)),
    );
  };
  // After an action: what is shown read again, every page loaded so far (not back to the first
  // page only, which took the row acted on out of view when it came from "Load more").
  const refresh = () => {
    if (!older) return reload();
    const wanted = older.nodes.length;
    const asked = key;
    (async () => {
      let shownNow = connection(await load());
      while (shownNow.nodes.length < wanted && shownNow.pageInfo.hasNextPage && shownNow.pageInfo.endCursor) {
        const next = await loadAfter(shownNow.pageInfo.endCursor);
        shownNow = { nodes: [...shownNow.nodes, ...next.nodes], pageInfo: next.pageInfo };
      }
      return shownNow;
    })().then(
      (next) => {
        if (current.current !== asked) return;
        setOlder(next);
        setMoreError(null);
      },
      (e) => current.current === asked && setMoreError(errorText(e)),
    );
  };
  return {
    data,
    refresh,
    error: error ?? moreError,
    nodes: shown?.nodes ?? [],
    hasNextPage: shown?.pageInfo.hasNextPage ?? false,
    loadedOlder: older !== null,
    more,
    backToNewest: () => setOlder(null),
  };
}

/** The buttons under a `useCursorList`: load the next older page, and go back to the refreshing newest page. */
export function CursorListButtons({ list, moreLabel }: { list: { hasNextPage: boolean; loadedOlder: boolean; more: () => void; backToNewest: () => void }; moreLabel: string }) {
  return (
    <Group>
      {list.hasNextPage && (
        <Button variant="default" onClick={list.more}>
          {moreLabel}
        </Button>
      )}
      {list.loadedOlder && (
        <Button variant="subtle" onClick={list.backToNewest}>
          Back to the newest (refreshing)
        </Button>
      )}
    </Group>
  );
}

const STATE_COLORS: Record<string, string> = {
  RUNNING: 'blue',
  PAUSED: 'yellow',
  COMPLETED: 'green',
  FAILED: 'red',
  TERMINATED: 'gray',
  PENDING: 'cyan',
  ACTIVE: 'green',
  DELETED: 'gray',
};

export const StateBadge = ({ state }: { state: string }) => (
  <Badge color={STATE_COLORS[state] ?? 'gray'} variant="light" data-state={state}>
    {state}
  </Badge>
);

export const time = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString(undefined, { hour12: false }) : '—');

export const shortId = (id: string): string => `${id.slice(0, 8)}…${id.slice(-4)}`;

/** A count the service stopped counting at (`capped`): shown as a lower bound, e.g. "10,000+". */
export const atLeast = (count: number, capped: boolean | undefined): string => (capped ? `${count.toLocaleString('en')}+` : String(count));

export function prettyJson(raw: string | null | undefined): string {
  if (raw == null) return '';
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}

export const JsonBlock = ({ value, label }: { value: string | null; label: string }) => (
  <Stack gap={4}>
    <Text size="sm" fw={600}>
      {label}
    </Text>
    <Code block>{value == null ? '—' : prettyJson(value)}</Code>
  </Stack>
);

/** A button that asks before doing something that cannot be undone. */
export function ConfirmButton(props: { label: string; question: string; color?: string; onConfirm: () => Promise<unknown>; size?: string }) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  return (
    <>
      <Button size={props.size ?? 'xs'} color={props.color ?? 'red'} variant="light" onClick={() => setOpen(true)}>
        {props.label}
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={props.label}>
        <Text mb="md">{props.question}</Text>
        <Group justify="flex-end">
          <Button variant="default" onClick={() => setOpen(false)}>
            Cancel
          </Button>
          <Button
            color={props.color ?? 'red'}
            loading={busy}
            onClick={async () => {
              setBusy(true);
              try {
                await props.onConfirm();
              } finally {
                setBusy(false);
                setOpen(false);
              }
            }}
          >
            Confirm
          </Button>
        </Group>
      </Modal>
    </>
  );
}

/** Runs an action and reports its error in a line under the buttons. */
export function useAction(after?: () => void): { run: (action: () => Promise<unknown>) => Promise<void>; error: string | null } {
  const [error, setError] = useState<string | null>(null);
  const run = async (action: () => Promise<unknown>) => {
    setError(null);
    try {
      await action();
      after?.();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return { run, error };
}
