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

let offset = anchor();

/** The offset at a tick of Date.now() (spins at most a millisecond, once). */
function anchor() {
  const start = Date.now();
  let wall;
  let before;
  let after;
  do {
    before = performance.now();
    wall = Date.now();
    after = performance.now();
  } while (wall === start || after - before > TIGHT_MS);
  return wall - after;
}

/** Wall-clock time in ms (epoch), to a fraction of a millisecond. */
export function wallNow() {
  const before = performance.now();
  const wall = Date.now();
  const after = performance.now();
  // A reading interrupted in between bounds nothing worth having.
  if (after - before <= TIGHT_MS) {
    const low = wall - after;
    const high = wall - before + 1;
    if (offset < low) offset = low;
    else if (offset > high) offset = high;
  }
  return offset + after;
}
