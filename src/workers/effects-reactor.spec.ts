/**
 * The effects reactor when effects keep failing, and when one app's backlog is larger than what
 * it may hold: a temporary SQLite file is the store and the reactor reads it through its own
 * subscription, as in a Baton process; what an effect does is replaced by a dispatcher that fails
 * for one app (a fault that is not a domain error, retried) or waits for a gate.
 */
import { describe, expect, it } from '@jest/globals';
import { reactorOnTempStore, reactorSpecHooks, until } from '../../test/support/effects-reactor.js';

describe('EffectsReactor: failing effects, and what one app may hold', () => {
  const cleanup = reactorSpecHooks();

  /** `failAfterMs`: how long a failing attempt takes before it throws. */
  async function setUp(failAfterMs = 0) {
    const failing = new Set<string>(['bad']);
    /** Apps whose attempts wait until `open(app)`. */
    const gates = new Map<string, { promise: Promise<void>; open: () => void }>();
    const gate = (app: string) => {
      if (gates.has(app)) return;
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      gates.set(app, { promise, open });
    };
    const open = (app: string) => {
      gates.get(app)?.open();
      gates.delete(app);
    };
    /** Task ids in the order their first attempt started. */
    const started: string[] = [];
    const carriedOut: string[] = [];
    const attempted = new Map<string, number>();
    let attempts = 0;
    /** Attempts after a failed one (retries) under way, and the most at once, per app. */
    const retrying = new Map<string, number>();
    const mostRetrying = new Map<string, number>();
    const { store, reactor, dispatchMany, dispatchTask } = reactorOnTempStore(async (context, command) => {
      attempts++;
      const retry = attempted.has(command.taskId);
      if (!retry) started.push(command.taskId);
      attempted.set(command.taskId, (attempted.get(command.taskId) ?? 0) + 1);
      const app = context.appId;
      if (retry) {
        retrying.set(app, (retrying.get(app) ?? 0) + 1);
        mostRetrying.set(app, Math.max(mostRetrying.get(app) ?? 0, retrying.get(app)!));
      }
      try {
        await gates.get(context.appId)?.promise;
        // A fault, not a domain error (a BatonError): the reactor retries it.
        if (failing.has(app)) {
          if (failAfterMs > 0) await new Promise((resolve) => setTimeout(resolve, failAfterMs));
          throw new TypeError(`fault in ${app}`);
        }
        carriedOut.push(command.taskId);
      } finally {
        if (retry) retrying.set(app, retrying.get(app)! - 1);
      }
    }, cleanup);
    return { store, reactor, failing, gate, open, started, carriedOut, attempted, mostRetrying, dispatchTask, dispatchMany, attempts: () => attempts };
  }

  it("carries out another app's effects while more effects of a failing app than there are slots back off; all are carried out once the fault is gone", async () => {
    const { store, reactor, failing, carriedOut, attempted, dispatchTask, attempts } = await setUp();
    // More than the 256 slots: before, each failing effect held its slot through its backoff, so
    // these held them all and the good app's effect never started.
    for (let i = 0; i < 300; i++) await dispatchTask('bad', `bad-${i}`);
    await dispatchTask('good', 'good-0');
    const before = (await store.headPosition())!;

    reactor.onApplicationBootstrap();
    await until(() => carriedOut.includes('good-0'), "the good app's effect carried out");
    expect(reactor.retries).toBeGreaterThan(0);
    expect(reactor.held).toBe(300);
    const byState = reactor.heldByState;
    expect(byState.queued + byState.running + byState.backingOff).toBe(300);
    expect(reactor.checkpoint).toBeLessThan(before);
    await dispatchTask('good', 'good-1');
    await until(() => carriedOut.includes('good-1'), "the good app's second effect carried out");
    const last = (await store.headPosition())!;

    failing.clear();
    await until(() => carriedOut.length === 302, 'every effect carried out', 20_000);
    expect(new Set(carriedOut).size).toBe(302);
    expect(reactor.held).toBe(0);
    expect(reactor.backingOff).toBe(0);
    await until(() => reactor.checkpoint === last, 'the checkpoint past the last effect');
    // Only the effects that failed were attempted more than once.
    expect(attempts() - 302).toBe(reactor.retries);
  }, 30_000);

  it("attempts at most 16 of a failing app's retries at once, however many failed together", async () => {
    const { reactor, failing, carriedOut, mostRetrying, dispatchTask } = await setUp(50);
    for (let i = 0; i < 300; i++) await dispatchTask('bad', `bad-${i}`);
    reactor.onApplicationBootstrap();
    // Up to 256 fail together in the first round; their retries come back within the same few
    // hundred milliseconds, and each takes 50 ms to fail again.
    await until(() => reactor.retries >= 400, '400 retries', 20_000);
    expect(mostRetrying.get('bad')).toBeLessThanOrEqual(16);
    expect(mostRetrying.get('bad')).toBeGreaterThan(1);
    await dispatchTask('good', 'good-0');
    await until(() => carriedOut.includes('good-0'), "the good app's effect carried out");
    failing.clear();
    await until(() => carriedOut.length === 301, 'every effect carried out', 20_000);
  }, 40_000);

  it("holds at most maxHeldPerApp of one app's effects: another app's effect recorded behind a backlog larger than the read-ahead is carried out while the backlog waits, and the backlog is read again from the log, carried out once each, in its order", async () => {
    const { store, reactor, gate, open, started, carriedOut, attempts, dispatchTask, dispatchMany } = await setUp();
    reactor.limits = { ...reactor.limits, maxHeldPerApp: 100, maxHeldEvents: 1_000 };
    gate('busy');
    await dispatchMany('busy', 'b', 3_000);
    await dispatchTask('good', 'good-0');
    reactor.onApplicationBootstrap();
    // Before, the read-ahead (here 1,000 events) filled with the busy app's backlog and the
    // subscription waited: the good app's effect was not even read until the backlog was done.
    await until(() => carriedOut.includes('good-0'), "the good app's effect carried out");
    expect(reactor.held).toBe(100);
    expect(reactor.appsOverBound).toBe(1);
    expect(reactor.checkpoint).toBeLessThan((await store.headPosition())!);

    open('busy');
    // More of the busy app's effects while its backlog is being read again.
    await dispatchMany('busy', 'b', 500, 3_000);
    await until(() => carriedOut.length === 3_501, 'every effect carried out', 30_000);
    expect(new Set(carriedOut).size).toBe(3_501);
    expect(attempts()).toBe(3_501);
    const busy = started.filter((id) => id.startsWith('b-')).map((id) => Number(id.slice(2)));
    expect(busy).toEqual(Array.from({ length: 3_500 }, (_, i) => i)); // the app's own order
    expect(reactor.refilled).toBeGreaterThan(0);
    expect(reactor.appsOverBound).toBe(0);
    const head = (await store.headPosition())!;
    await until(() => reactor.checkpoint === head, 'the checkpoint at the head');
  }, 60_000);

  it("keeps an app whose first effects fail for good from holding the others: its later effects wait in the log, other apps' go on", async () => {
    const { store, reactor, failing, carriedOut, dispatchTask, dispatchMany } = await setUp();
    // Retries at most 200 ms apart (10 s by default): the test waits for them once the fault is gone.
    reactor.limits = { ...reactor.limits, maxHeldPerApp: 50, maxHeldEvents: 500, maxBackoffMs: 200 };
    await dispatchMany('bad', 'bad', 2_000);
    await dispatchTask('good', 'good-0');
    reactor.onApplicationBootstrap();
    await until(() => carriedOut.includes('good-0'), "the good app's effect carried out");
    await until(() => reactor.backingOff === 50, 'the failing app at its bound, every held effect backing off');
    await dispatchTask('good', 'good-1');
    await until(() => carriedOut.includes('good-1'), "the good app's second effect carried out");
    expect(reactor.held).toBe(50);
    failing.clear();
    await until(() => carriedOut.length === 2_002, 'every effect carried out', 30_000);
    expect(new Set(carriedOut).size).toBe(2_002);
    const head = (await store.headPosition())!;
    await until(() => reactor.checkpoint === head, 'the checkpoint at the head');
  }, 60_000);

  it('carries out every effect once, each app in its own order, while several apps go past their bound and back, the read-ahead fills, and effects keep coming', async () => {
    // Eight sequences of appends, each on a fresh store (a few of them hit a page read again while
    // the subscription delivers newer events of the same app).
    for (let sequence = 1; sequence <= 8; sequence++) await severalApps(sequence);
  }, 90_000);

  async function severalApps(sequence: number): Promise<void> {
    const { store, reactor, gate, open, started, carriedOut, attempts, dispatchMany } = await setUp();
    reactor.limits = { ...reactor.limits, maxHeldPerApp: 30, maxHeldEvents: 100, maxInFlight: 8 };
    const apps = ['a', 'b', 'c', 'd', 'e'];
    const next = new Map(apps.map((app) => [app, 0]));
    let total = 0;
    // One append at a time, so that each app's task ids follow its log order.
    let appending = Promise.resolve();
    const more = (app: string, n: number) =>
      (appending = appending.then(async () => {
        await dispatchMany(app, app, n, next.get(app)!);
        next.set(app, next.get(app)! + n);
        total += n;
      }));
    // As over a network (EventStoreDB): a page read again is what the log held when the read
    // began, handed over later. When a read reached the end of the log (up to 50 times), newer
    // events of every app are written and delivered to the subscription meanwhile (passed over
    // there for an app past its bound): the read must go on after its page.
    const readAll = store.readAll.bind(store);
    let racing = 50;
    store.readAll = async (options) => {
      const page = await readAll(options);
      if (page.length < (options?.maxCount ?? Infinity) && racing-- > 0) {
        for (const app of apps) await more(app, 1);
        const head = (await store.headPosition())!;
        await until(() => (reactor as unknown as { read: bigint }).read >= head, 'the subscription at the head');
      }
      return page;
    };
    reactor.onApplicationBootstrap();
    let seed = sequence;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let round = 0; round < 40; round++) {
      const app = apps[Math.floor(random() * apps.length)];
      if (random() < 0.3) gate(app);
      await more(app, 1 + Math.floor(random() * 200));
      if (random() < 0.5) open(apps[Math.floor(random() * apps.length)]);
      // Let the reactor run a little between rounds, as it does between requests.
      await new Promise((resolve) => setImmediate(resolve));
    }
    for (const app of apps) open(app);
    await until(() => carriedOut.length === total, `every effect carried out (sequence ${sequence})`, 30_000);
    expect(new Set(carriedOut).size).toBe(total);
    expect(attempts()).toBe(total);
    for (const app of apps) {
      const order = started.filter((id) => id.startsWith(`${app}-`)).map((id) => Number(id.slice(app.length + 1)));
      expect(order).toEqual(Array.from({ length: next.get(app)! }, (_, i) => i));
    }
    const head = (await store.headPosition())!;
    await until(() => reactor.checkpoint === head, 'the checkpoint at the head');
    expect(reactor.appsOverBound).toBe(0);
    expect(reactor.refilled).toBeGreaterThan(0);
    await reactor.onApplicationShutdown();
  }
});
