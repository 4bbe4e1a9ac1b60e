/**
 * The effects reactor's bounds per app, against faults a review found in the first version of
 * them: effects read again from the log went behind newer effects of other apps, and the
 * checkpoint passed them; one app's large effects failing for good filled the read-ahead's bytes;
 * an app past its bound starved, its pages read again for nothing, while other apps kept the
 * read-ahead full. A temporary SQLite file is the store; what an effect does is replaced by a
 * dispatcher whose attempts can be held back, slowed or failed.
 */
import { describe, expect, it } from '@jest/globals';
import { reactorOnTempStore, reactorSpecHooks, until } from '../../test/support/effects-reactor.js';
import { callId } from '../protocol/decision-commands.js';
import { scopeOf } from '../workflows/pending-children.js';

describe('EffectsReactor: bounds per app', () => {
  const cleanup = reactorSpecHooks();

  async function setUp() {
    /** Task ids whose attempts wait until released. */
    const blocked = new Map<string, Promise<void>>();
    const releases = new Map<string, () => void>();
    const block = (taskId: string) => {
      let open!: () => void;
      blocked.set(taskId, new Promise<void>((resolve) => (open = resolve)));
      releases.set(taskId, open);
    };
    const release = (taskId: string) => releases.get(taskId)?.();
    const failing = new Set<string>();
    /** Task ids whose every attempt fails. */
    const failingTasks = new Set<string>();
    const slowApps = new Map<string, number>();
    const started: string[] = [];
    const carriedOut: string[] = [];
    const { store, rm, reactor, children, dispatchMany } = reactorOnTempStore(async (context, command) => {
      started.push(command.taskId);
      await blocked.get(command.taskId);
      const ms = slowApps.get(context.appId);
      if (ms) await new Promise((resolve) => setTimeout(resolve, ms));
      if (failingTasks.has(command.taskId)) throw new TypeError(`fault in ${command.taskId}`);
      if (failing.has(context.appId)) throw new TypeError(`fault in ${context.appId}`);
      carriedOut.push(command.taskId);
    }, cleanup);
    /**
     * Eight other apps, each under its bound, enough together to keep a read-ahead of 40 full
     * (320 slow effects each); then counts the pages read again (the returned function).
     */
    const keepReadAheadFull = async () => {
      const goods = ['g1', 'g2', 'g3', 'g4', 'g5', 'g6', 'g7', 'g8'];
      for (let round = 0; round < 40; round++) for (const g of goods) await dispatchMany(g, g, 8, round * 8);
      for (const g of goods) slowApps.set(g, 2);
      let reads = 0;
      const readAll = store.readAll.bind(store);
      store.readAll = async (options) => {
        reads++;
        return readAll(options);
      };
      return () => reads;
    };
    return { store, rm, reactor, children, block, release, failing, failingTasks, started, carriedOut, dispatchMany, keepReadAheadFull };
  }

  it('keeps the checkpoint before effects read again from the log that are not carried out yet', async () => {
    const { store, rm, reactor, block, release, started, carriedOut, dispatchMany } = await setUp();
    reactor.limits = { ...reactor.limits, maxHeldPerApp: 10, maxHeldEvents: 1_000 };
    // busy: b-0..b-11 at positions 1..12; slow: s-0 at 13.
    await dispatchMany('busy', 'b', 12);
    await dispatchMany('slow', 's', 1);
    const head = (await store.headPosition())!;
    const b10 = head - 2n; // position of b-10
    block('s-0');
    block('b-10');
    block('b-11');
    for (let i = 0; i < 10; i++) block(`b-${i}`);
    reactor.onApplicationBootstrap();
    await until(() => reactor.appsOverBound === 1 && reactor.held === 11, 'busy past its bound, s-0 held');
    expect(reactor.checkpoint).toBe(0n);
    for (let i = 0; i < 10; i++) release(`b-${i}`);
    // b-0..b-9 held and carried out; b-10, b-11 passed over, then read again and started (blocked).
    try {
      await until(() => started.includes('b-11'), 'b-11 read again and started');
      // Leaving the overflow moves the checkpoint at once (before, past b-10 and b-11).
      await until(() => reactor.appsOverBound === 0, 'busy caught up');
      expect(carriedOut).not.toContain('b-10');
      // Neither b-10 nor s-0 is carried out: the checkpoint must stay before b-10 (in memory and saved).
      expect(reactor.checkpoint).toBeLessThan(b10);
      expect(rm.checkpoint('effects')).toBeLessThan(b10);
    } finally {
      for (const id of ['s-0', 'b-10', 'b-11']) release(id);
    }
    await until(() => carriedOut.length === 13, 'every effect carried out');
    await until(() => reactor.checkpoint === head, 'the checkpoint at the head');
  });

  it("has a lookup in an app past its bound wait until the app's passed-over events are taken (its children announced)", async () => {
    const { store, reactor, children, block, release, carriedOut, dispatchMany } = await setUp();
    reactor.limits = { ...reactor.limits, maxHeldPerApp: 10, maxHeldEvents: 1_000 };
    // busy: b-0..b-11, of which b-10 and b-11 are passed over; calm: c-0.
    for (let i = 0; i < 12; i++) block(`b-${i}`);
    await dispatchMany('busy', 'b', 12);
    await dispatchMany('calm', 'c', 1);
    const head = (await store.headPosition())!;
    reactor.onApplicationBootstrap();
    await until(() => reactor.appsOverBound === 1 && carriedOut.includes('c-0'), 'busy past its bound, calm carried out');
    // An id of the kind children get (derived: UUID version 8), which no workflow has.
    const unknown = callId('0190b0c0-0000-7000-8000-000000000000', 0);
    // Another app, all of whose events were taken: an unknown id is answered at once, not looked up again.
    expect(await children.waitFor(unknown, head, 5_000, scopeOf('calm', 'prod'))).toBe(false);
    // In busy, an id no child can have (a workflow dispatched through the API: version 7) is answered at once too.
    expect(await children.waitFor('0190b0c0-0000-7000-8000-000000000001', head, 5_000, scopeOf('busy', 'prod'))).toBe(false);
    // In busy, events up to the head are still to be taken: a lookup waits for them.
    let answered: boolean | undefined;
    const lookup = children.waitFor(unknown, head, 10_000, scopeOf('busy', 'prod')).then((again) => (answered = again));
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBeUndefined();
    for (let i = 0; i < 12; i++) release(`b-${i}`);
    await until(() => reactor.appsOverBound === 0, 'busy caught up');
    // Taken: the lookup ends, and looks again (a child of those events may have been created meanwhile).
    expect(await lookup).toBe(true);
    await until(() => carriedOut.length === 13, 'every effect carried out');
  });

  it('reads an app past its bound again while the read-ahead is kept full by other apps (no starvation, no empty re-reads)', async () => {
    const { reactor, block, release, carriedOut, dispatchMany, keepReadAheadFull } = await setUp();
    reactor.limits = { ...reactor.limits, maxHeldPerApp: 10, maxHeldEvents: 40, maxInFlight: 8 };
    for (let i = 0; i < 10; i++) block(`x-${i}`);
    await dispatchMany('x', 'x', 30);
    const reads = await keepReadAheadFull();
    reactor.onApplicationBootstrap();
    await until(() => reactor.appsOverBound === 1, 'x past its bound');
    for (let i = 0; i < 10; i++) release(`x-${i}`);
    await until(() => carriedOut.length === 30 + 8 * 320, 'every effect carried out', 60_000);
    const lastX = carriedOut.indexOf('x-29');
    const goodsBefore = carriedOut.slice(0, lastX).filter((id) => id.startsWith('g')).length;
    expect(goodsBefore).toBeLessThan(8 * 320 / 2);
    expect(reads()).toBeLessThan(20);
  }, 90_000);

  it("keeps an app whose large effects fail for good from filling the read-ahead's bytes", async () => {
    const { reactor, failing, carriedOut, dispatchMany } = await setUp();
    // 200 KB of read-ahead; the failing app's 10 KB events fill it long before its 100-event bound.
    reactor.limits = { ...reactor.limits, maxHeldPerApp: 100, maxHeldEvents: 1_000, maxHeldBytes: 200 * 1024, maxHeldBytesPerApp: 50 * 1024 };
    failing.add('bad');
    await dispatchMany('bad', 'bad', 60, 0, 10_000);
    await dispatchMany('good', 'good', 1);
    reactor.onApplicationBootstrap();
    await until(() => carriedOut.includes('good-0'), "the good app's effect carried out", 5_000);
  });

  it('goes on with an app past its bound whose effects failing for good are more than half its bound but fewer than its bound', async () => {
    const { reactor, failingTasks, block, release, carriedOut, dispatchMany } = await setUp();
    reactor.limits = { ...reactor.limits, maxHeldPerApp: 10 };
    // x-0..x-5 fail for good (6 < the bound of 10: the app should still have room for 4 more at a time).
    for (let i = 0; i < 6; i++) failingTasks.add(`x-${i}`);
    for (let i = 6; i < 10; i++) block(`x-${i}`);
    await dispatchMany('x', 'x', 30);
    reactor.onApplicationBootstrap();
    await until(() => reactor.appsOverBound === 1, 'x past its bound');
    for (let i = 6; i < 10; i++) release(`x-${i}`);
    await until(() => carriedOut.length === 24, "x's 24 good effects carried out", 5_000);
  });

  it('reads apps past their bound again without a page per event when several share the room beyond the read-ahead', async () => {
    const { reactor, block, release, carriedOut, dispatchMany, keepReadAheadFull } = await setUp();
    reactor.limits = { ...reactor.limits, maxHeldPerApp: 10, maxHeldEvents: 40, maxInFlight: 8 };
    const overs = ['x', 'y', 'z'];
    for (const o of overs) for (let i = 0; i < 10; i++) block(`${o}-${i}`);
    for (const o of overs) await dispatchMany(o, o, 60);
    const reads = await keepReadAheadFull();
    reactor.onApplicationBootstrap();
    await until(() => reactor.appsOverBound === 3, 'x, y, z past their bound');
    for (const o of overs) for (let i = 0; i < 10; i++) release(`${o}-${i}`);
    await until(() => carriedOut.length === 180 + 8 * 320, 'every effect carried out', 60_000);
    expect(reads()).toBeLessThan(60);
  }, 90_000);
});
