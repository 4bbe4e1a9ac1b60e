import { useCallback, useLayoutEffect, useRef, useState } from 'react';

/** Which rows of a windowed list to render, and the space that stands for the others. */
export interface WindowedList {
  /** The first row to render. */
  start: number;
  /** One past the last row to render. */
  end: number;
  /** Height of the rows above `start` (pad the rows' container with it), measured or estimated. */
  before: number;
  /** Height of the rows from `end` on. */
  after: number;
  /** For the scroll container (its own scrollbar: `overflow-y: auto` and a bounded height). */
  scrollRef: (element: HTMLElement | null) => void;
  /** For the element holding the rows: each row carries `data-index`, its index in the list. */
  rowsRef: (element: HTMLElement | null) => void;
  onScroll: () => void;
}

/**
 * Renders only the rows of a long list that are in or near its scroll container's view
 * (`overscan` rows each side): tens of thousands of rows cost what a screenful does.
 * Rows are not of one height (an expanded event shows its data), so they are measured while
 * rendered: a row never measured is assumed as tall as the shortest one measured (a collapsed
 * event), and the taller ones are remembered by index; those are few, so placing a row walks
 * them rather than every row. The rows keep their natural flow between two paddings, so an
 * estimate that is off moves the scrollbar a little but never overlaps rows.
 */
export function useWindowedList(count: number, { estimate = 45, overscan = 10 }: { estimate?: number; overscan?: number } = {}): WindowedList {
  const scroller = useRef<HTMLElement | null>(null);
  const rows = useRef<HTMLElement | null>(null);
  const [scrollTop, setScrollTop] = useState(0);
  /** Until the container is measured: a tall screen's worth, so that the first paint is not empty. */
  const [viewport, setViewport] = useState(1000);
  /** `base`: a row's height unless it is in `taller`; `measured`: base is a row's, not `estimate`. */
  const sizes = useRef({ base: estimate, measured: false, taller: new Map<number, number>() });
  const [, setVersion] = useState(0);

  /** Reads the container's height and the rendered rows' heights; renders again if one changed. */
  const measure = useCallback(() => {
    const container = scroller.current;
    if (!container) return;
    setViewport(container.clientHeight);
    setScrollTop(container.scrollTop);
    const s = sizes.current;
    const measured: Array<[number, number]> = [];
    for (const row of rows.current?.querySelectorAll<HTMLElement>('[data-index]') ?? []) {
      const height = row.getBoundingClientRect().height;
      if (height > 0) measured.push([Number(row.dataset.index), height]);
    }
    if (measured.length === 0) return;
    let changed = false;
    const shortest = Math.min(...measured.map(([, height]) => height));
    if (!s.measured || shortest < s.base - 0.5) {
      changed = Math.abs(shortest - s.base) > 0.5;
      s.base = shortest;
      s.measured = true;
    }
    for (const [index, height] of measured) {
      const known = s.taller.get(index) ?? s.base;
      if (Math.abs(height - known) <= 0.5) continue;
      if (Math.abs(height - s.base) <= 0.5) s.taller.delete(index);
      else s.taller.set(index, height);
      changed = true;
    }
    if (changed) setVersion((v) => v + 1);
  }, []);

  // Rows appear as the list scrolls or grows: measure them before the browser paints.
  useLayoutEffect(measure);

  // A row that changes height without a render here (an event expanded), or a resized window.
  const observer = useRef<ResizeObserver | null>(null);
  const observe = useCallback(
    (ref: typeof scroller) => (element: HTMLElement | null) => {
      observer.current ??= typeof ResizeObserver === 'undefined' ? null : new ResizeObserver(() => measure());
      if (ref.current) observer.current?.unobserve(ref.current);
      ref.current = element;
      if (element) observer.current?.observe(element);
    },
    [measure],
  );
  const scrollRef = useCallback((element: HTMLElement | null) => observe(scroller)(element), [observe]);
  const rowsRef = useCallback((element: HTMLElement | null) => observe(rows)(element), [observe]);
  const onScroll = useCallback(() => scroller.current && setScrollTop(scroller.current.scrollTop), []);

  const { base, taller } = sizes.current;
  const tall = [...taller].filter(([index]) => index < count).sort((a, b) => a[0] - b[0]);
  /** Where row `index` starts. */
  const top = (index: number) => {
    let extra = 0;
    for (const [i, height] of tall) {
      if (i >= index) break;
      extra += height - base;
    }
    return index * base + extra;
  };
  /** The row at `y` pixels from the list's top. */
  const at = (y: number) => {
    let extra = 0;
    for (const [i, height] of tall) {
      const start = i * base + extra;
      if (y < start) break;
      if (y < start + height) return i;
      extra += height - base;
    }
    return Math.max(0, Math.min(count - 1, Math.floor((y - extra) / base)));
  };
  const start = count === 0 ? 0 : Math.max(0, at(scrollTop) - overscan);
  const end = count === 0 ? 0 : Math.min(count, at(scrollTop + viewport) + 1 + overscan);
  return { start, end, before: top(start), after: top(count) - top(end), scrollRef, rowsRef, onScroll };
}
