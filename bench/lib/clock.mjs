// The bench's clock: wall-clock milliseconds with performance.now()'s resolution, comparable
// between its processes (the runner, Baton's worker running workloads.mjs, the peers' endpoints).
//
// `performance.timeOrigin + performance.now()` reads the wall clock once, when the process starts,
// and then counts on the monotonic clock: a step of the system clock after that leaves each process
// with an offset of its own. In a full run on 2026-11-27 the runner, started ten minutes before the
// workers, was about 15 ms ahead of them, and a first step's latency (the runner's send → the
// worker's start) came out at -7.4 ms for Baton and -11.0 ms for Restate. `Date.now()` follows the
// wall clock, but only to the millisecond. So every reading re-anchors the monotonic clock on the
// wall clock: Date.now(), read between two readings p0 and p1 of the monotonic clock, puts the true
// offset between the two clocks in [Date.now() − p1, Date.now() − p0 + 1), and the estimate is kept
// inside that interval (it narrows while the clock is steady, and follows a step at the next reading).

/** Largest gap, in ms, between the two monotonic readings around Date.now() for a reading to count. */
const TIGHT_MS = 0.02;

/**
 * A clock over a monotonic clock (`mono`, ms) and the wall clock (`wall`, whole ms since the
 * epoch); both are parameters so that a test can step the wall clock.
 */
export function wallClock(mono = () => performance.now(), wall = () => Date.now()) {
  let offset = anchor(mono, wall);
  return function now() {
    const before = mono();
    const at = wall();
    const after = mono();
    // A reading interrupted in between bounds nothing worth having.
    if (after - before <= TIGHT_MS) {
      const low = at - after;
      const high = at - before + 1;
      if (offset < low) offset = low;
      else if (offset > high) offset = high;
    }
    return offset + after;
  };
}

/** The offset at a tick of the wall clock (spins at most a few milliseconds, once). */
function anchor(mono, wall) {
  const start = wall();
  const giveUp = mono() + 5;
  let at;
  let before;
  let after;
  do {
    before = mono();
    at = wall();
    after = mono();
  } while ((at === start || after - before > TIGHT_MS) && after < giveUp);
  return at - after;
}

/** Wall-clock time in ms (epoch), to a fraction of a millisecond. */
export const wallNow = wallClock();
