import { afterEach, describe, expect, it } from '@jest/globals';
import type { RetryPolicy } from '../tasks/domain/task-attempts.js';
import { ManualClock } from '../shared/clock.js';
import { EngineState } from './engine-state.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const POLICY: RetryPolicy = { maxAttempts: 3, initialDelayMs: 100, backoffFactor: 2, maxDelayMs: 1000 };
const id = (n: number) => `0190aaaa-0000-7000-8000-${String(n).padStart(12, '0')}`;
/** A turn of the event loop: what the projection and the polls' claims take between two steps. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const settle = async () => {
  for (let i = 0; i < 20; i++) await tick();
};

/**
 * Polls as `EngineService.poll` makes them, over the real index: look, claim (an append the
 * projection applies a turn later), answer or park, leave. `claim` decides each claim's fate.
 */
function harness() {
  const state = new EngineState(new ManualClock(T0));
  const claiming = new Set<string>();
  const stop = new AbortController();
  const claimed: string[] = [];
  const won = new Set<string>();
  const parked = new Set<Poll>();
  let rounds = 0;
  let dispatched = 0;

  interface Poll {
    tasks: string[];
    max: number;
  }

  const dispatch = (name: string) => {
    const taskId = id(++dispatched);
    state.applyTask(taskId, {
      type: 'TaskDispatched',
      data: { taskId, appId: 'demo', environment: 'test', name, args: [], scheduleId: null, parent: null, dispatchedAt: at(0) },
    });
    return `task:${taskId}`;
  };
  const start = (ref: string) => {
    const taskId = ref.slice(5);
    if (state.tasks.get(taskId)?.attempt.status === 'started') return false;
    state.applyTask(taskId, { type: 'TaskStarted', data: { attempt: 1, attemptId: `a-${taskId}`, workerId: 'w', startedAt: at(0), leaseExpiresAt: at(60_000), deadlineAt: null, retryPolicy: POLICY } });
    return true;
  };

  /** One poll; `fate(ref)`: `won` (claimed), `lost` (another instance took it first), `refused` (no room in this answer: stays claimable). */
  async function poll(p: Poll, fate: (ref: string) => 'won' | 'lost' | 'refused' = () => 'won', signal = stop.signal): Promise<string[]> {
    const watch = state.watch('demo', 'test', [], p.tasks);
    try {
      for (;;) {
        if (signal.aborted) return [];
        rounds++;
        const candidates = watch.candidates(p.max, claiming);
        const items = (
          await Promise.all(
            candidates.map(async ({ ref }) => {
              claiming.add(ref);
              await tick();
              claiming.delete(ref);
              // The stream's expected revision: a task started already is not started again.
              if (won.has(ref)) return null;
              const outcome = fate(ref);
              if (outcome === 'refused') return null;
              // The append: this instance's projection applies it a turn later.
              if (outcome === 'lost') {
                won.add(ref);
                setImmediate(() => start(ref));
                return null;
              }
              won.add(ref);
              state.claimed(ref);
              setImmediate(() => start(ref));
              return ref;
            }),
          )
        ).filter((r): r is string => r !== null);
        if (items.length > 0) {
          claimed.push(...items);
          return items;
        }
        parked.add(p);
        await watch.park(candidates.length === 0 ? 60_000 : 20, signal);
        parked.delete(p);
      }
    } finally {
      watch.leave(claiming);
    }
  }

  /** A worker: polls again as soon as it is answered, until stopped. */
  async function worker(p: Poll, fate?: (ref: string) => 'won' | 'lost' | 'refused') {
    while (!stop.signal.aborted) await poll(p, fate);
  }

  /** Parked polls that could claim something now: what must never be. */
  const stranded = () => [...parked].filter((p) => state.candidates('demo', 'test', [], p.tasks, p.max, claiming).length > 0);

  /**
   * A report filling its worker's free slots (`EngineService.report` with a claim's `pollId`,
   * `EagerClaims.fill`): the claimable items for its names, claimed as a poll claims them; it
   * looks as a poll does and leaves once its claims end (it never parks).
   */
  async function fill(p: Poll, fate: (ref: string) => 'won' | 'lost' | 'refused' = () => 'won'): Promise<string[]> {
    const watch = state.watch('demo', 'test', [], p.tasks);
    const found = watch.candidates(p.max, claiming);
    const items = (
      await Promise.all(
        found.map(async ({ ref }) => {
          claiming.add(ref);
          await tick();
          claiming.delete(ref);
          if (won.has(ref) || fate(ref) === 'refused') return null;
          won.add(ref);
          state.claimed(ref);
          setImmediate(() => start(ref));
          return ref;
        }),
      )
    ).filter((r): r is string => r !== null);
    watch.leave(claiming);
    claimed.push(...items);
    return items;
  }

  /** A started task's attempt given back unfinished (`TaskAttemptFailed`, released): claimable again at once. */
  const release = (ref: string) => {
    const taskId = ref.slice(5);
    state.applyTask(taskId, {
      type: 'TaskAttemptFailed',
      data: { attemptId: `a-${taskId}`, attempt: 1, reason: 'released', error: { message: 'given back', name: 'ReleasedError' }, retryAt: at(0), released: true },
    } as never);
  };

  /** A task dispatched and started in the same batch of events (as one append's events are applied). */
  const dispatchStarted = (name: string) => {
    const ref = dispatch(name);
    start(ref);
    return ref;
  };

  return {
    state,
    dispatch,
    dispatchStarted,
    release,
    poll,
    fill,
    worker,
    stranded,
    parked,
    claimed,
    stop: () => stop.abort(),
    get rounds() {
      return rounds;
    },
  };
}

describe('EngineState: new work wakes one parked poll per entry', () => {
  let h: ReturnType<typeof harness>;
  afterEach(async () => {
    h.stop();
    await settle();
  });

  it('50 parked polls, 200 tasks arriving one at a time: one wake-up, one waiter visit and one round of a woken poll per task', async () => {
    h = harness();
    for (let n = 0; n < 50; n++) void h.worker({ tasks: ['resize'], max: 1 });
    await settle();
    expect(h.parked.size).toBe(50);
    const before = { ...h.state.pollCounts, rounds: h.rounds };
    for (let i = 0; i < 200; i++) {
      h.dispatch('resize');
      await settle();
      expect(h.stranded()).toEqual([]);
    }
    expect(h.claimed).toHaveLength(200);
    expect(h.parked.size).toBe(50);
    const counts = { wakeups: h.state.pollCounts.wakeups - before.wakeups, visits: h.state.pollCounts.waiterVisits - before.waiterVisits, rounds: h.rounds - before.rounds };
    // Each task: one poll woken, which claims it (1 round), polls again and parks (1 round).
    expect(counts).toEqual({ wakeups: 200, visits: 200, rounds: 400 });
  });

  it('an entry claimed in the batch that made it claimable wakes no parked poll (a task claimed by the report that scheduled it)', async () => {
    h = harness();
    for (let n = 0; n < 5; n++) void h.worker({ tasks: ['resize'], max: 1 });
    await settle();
    const before = { ...h.state.pollCounts, rounds: h.rounds };
    // The events of one append, applied together: claimable, then claimed (eager dispatch).
    for (let i = 0; i < 100; i++) h.dispatchStarted('resize');
    await settle();
    // Before: each task woke a parked poll that looked, found nothing and parked again (100 wake-ups, 100 rounds).
    expect({ wakeups: h.state.pollCounts.wakeups - before.wakeups, rounds: h.rounds - before.rounds }).toEqual({ wakeups: 0, rounds: 0 });
    expect(h.parked.size).toBe(5);
    // A task left claimable still wakes one.
    h.dispatch('resize');
    await settle();
    expect(h.state.pollCounts.wakeups - before.wakeups).toBe(1);
    expect(h.claimed).toHaveLength(1);
    expect(h.stranded()).toEqual([]);
  });

  it('an entry whose claimable set is emptied and made again in one batch (claimed, then given back) wakes a parked poll, which claims it', async () => {
    h = harness();
    void h.worker({ tasks: ['resize'], max: 1 });
    await settle();
    expect(h.parked.size).toBe(1);
    // One batch: dispatched (a new set), started (the set emptied and dropped), given back (a new set).
    const ref = h.dispatchStarted('resize');
    h.release(ref);
    await settle();
    expect(h.claimed).toEqual([ref]);
    expect(h.stranded()).toEqual([]);
  });

  it('a burst of 200 tasks in one batch wakes each of the 50 parked polls once, and every task is claimed', async () => {
    h = harness();
    for (let n = 0; n < 50; n++) void h.worker({ tasks: ['resize'], max: 1 });
    await settle();
    const before = h.state.pollCounts.wakeups;
    for (let i = 0; i < 200; i++) h.dispatch('resize');
    await settle();
    expect(h.state.pollCounts.wakeups - before).toBe(50);
    for (let i = 0; i < 20 && h.claimed.length < 200; i++) await settle();
    expect(h.claimed).toHaveLength(200);
    expect(h.stranded()).toEqual([]);
  });

  it('a poll woken that leaves before it looks (its worker went away) hands the task to another parked poll', async () => {
    h = harness();
    const gone = new AbortController();
    void h.poll({ tasks: ['resize'], max: 1 }, undefined, gone.signal);
    await settle();
    const other = h.poll({ tasks: ['resize'], max: 1 });
    await settle();
    expect(h.parked.size).toBe(2);
    const ref = h.dispatch('resize');
    // The longest parked is woken; its worker goes away in the same turn.
    gone.abort();
    await settle();
    expect(h.claimed).toEqual([ref]);
    await expect(other).resolves.toEqual([ref]);
  });

  it('a poll woken that takes less than there is (its answer full) hands the rest on: nothing claimable while a poll is parked', async () => {
    h = harness();
    // A poll whose answer has room for one task only: a second it claims is refused.
    let room = 1;
    const full = h.poll({ tasks: ['thumb'], max: 3 }, () => (room-- > 0 ? 'won' : 'refused'));
    await settle();
    // Three tasks at once: the one parked poll is woken, and looks at all three.
    h.dispatch('thumb');
    h.dispatch('thumb');
    h.dispatch('thumb');
    for (let i = 0; i < 5; i++) await Promise.resolve();
    // Two more polls, which find all three being claimed and park.
    void h.poll({ tasks: ['thumb'], max: 1 });
    void h.poll({ tasks: ['thumb'], max: 1 });
    await settle();
    await expect(full).resolves.toHaveLength(1);
    // The two it could not take reached the two parked polls.
    expect(h.claimed).toHaveLength(3);
    expect(h.parked.size).toBe(0);
    expect(h.stranded()).toEqual([]);
  });

  it("a task a report's fill claimed and was refused (no room in the report's answer) reaches the poll that parked while that claim was under way", async () => {
    h = harness();
    const ref = h.dispatch('resize');
    await settle();
    // Worker A's report fills its free slot with the waiting task; its answer has no room left for it.
    const filled = h.fill({ tasks: ['resize'], max: 1 }, () => 'refused');
    // Worker B polls meanwhile: the task is being claimed (excluded), so B parks for its whole wait.
    const b = h.poll({ tasks: ['resize'], max: 1 });
    await expect(filled).resolves.toEqual([]);
    await settle();
    // The refused task stays claimable: B must be told, not left parked for 20 s beside it
    // (main: nothing hands it on, as a poll's own refused claims are handed on when it leaves).
    expect(h.stranded()).toEqual([]);
    await expect(b).resolves.toEqual([ref]);
  });

  it('a poll that lost its claim to another instance looks again after its short wait; others are not woken for the lost task', async () => {
    h = harness();
    const loser = h.poll({ tasks: ['resize'], max: 1 }, () => 'lost');
    await settle();
    const other = h.poll({ tasks: ['resize'], max: 1 });
    await settle();
    const before = h.state.pollCounts.wakeups;
    h.dispatch('resize');
    await settle();
    // Only the loser was woken; the task is gone (started elsewhere), so the other stays parked.
    expect(h.state.pollCounts.wakeups - before).toBe(1);
    expect(h.parked.size).toBe(2);
    expect(h.stranded()).toEqual([]);
    h.stop();
    await Promise.all([loser, other]);
  });

  it('a task that arrives while every poll serving it is busy claiming is seen before they park again', async () => {
    h = harness();
    let late = '';
    // Its claim is lost to another instance; meanwhile another task arrives, with no poll parked
    // or woken to see it: the poll looks again instead of parking.
    const busy = h.poll({ tasks: ['resize'], max: 2 }, (ref) => {
      if (late === '') late = h.dispatch('resize');
      return ref === late ? 'won' : 'lost';
    });
    await settle();
    h.dispatch('resize');
    await settle();
    expect(h.stranded()).toEqual([]);
    expect(h.claimed).toEqual([late]);
    await expect(busy).resolves.toEqual([late]);
  });

  it('polls parked for other names are neither woken nor visited', async () => {
    h = harness();
    for (let n = 0; n < 50; n++) void h.worker({ tasks: [`other-${n}`], max: 1 });
    void h.worker({ tasks: ['resize'], max: 1 });
    await settle();
    const before = { ...h.state.pollCounts };
    for (let i = 0; i < 10; i++) {
      h.dispatch('resize');
      await settle();
    }
    expect(h.claimed).toHaveLength(10);
    expect({ wakeups: h.state.pollCounts.wakeups - before.wakeups, visits: h.state.pollCounts.waiterVisits - before.waiterVisits }).toEqual({ wakeups: 10, visits: 10 });
  });
});
