import { describe, expect, it } from '@jest/globals';
import { EffectsQueue, HeldEffect } from './effects-queue.js';

const limits = { maxRunning: 4, maxHeldEvents: 100, maxHeldBytes: 1_000_000, maxRetryingPerApp: 1_000 };

function drain<T>(queue: EffectsQueue<T>): HeldEffect<T>[] {
  const started: HeldEffect<T>[] = [];
  for (let e = queue.next(); e; e = queue.next()) started.push(e);
  return started;
}

describe('EffectsQueue', () => {
  it("starts effects round robin across apps, so one app's backlog does not hold another's", () => {
    const queue = new EffectsQueue<string>(limits);
    let position = 0n;
    for (let i = 0; i < 10; i++) queue.add(position++, 'b', false, 1, `b${i}`);
    queue.add(position++, 'a', false, 1, 'a0');
    queue.add(position++, 'c', false, 1, 'c0');
    const first = drain(queue).map((e) => e.item);
    expect(first).toEqual(['b0', 'a0', 'c0', 'b1']);
    expect(queue.running).toBe(4);
    expect(queue.next()).toBeUndefined();
  });

  it('starts no more than maxRunning at once, and one more as each finishes', () => {
    const queue = new EffectsQueue<number>(limits);
    for (let i = 0; i < 6; i++) queue.add(BigInt(i), 'a', false, 1, i);
    const started = drain(queue);
    expect(started.map((e) => e.item)).toEqual([0, 1, 2, 3]);
    queue.finish(started[2]);
    expect(queue.next()?.item).toBe(4);
    expect(queue.next()).toBeUndefined();
  });

  it("holds a barrier until its app's earlier effects finish, and its app's later ones until it finishes; other apps go on", () => {
    const queue = new EffectsQueue<string>({ ...limits, maxRunning: 10 });
    queue.add(0n, 'a', false, 1, 'a-child');
    queue.add(1n, 'a', true, 1, 'a-signal');
    queue.add(2n, 'a', false, 1, 'a-after');
    queue.add(3n, 'b', false, 1, 'b0');
    const [child, b0] = drain(queue);
    expect([child.item, b0.item]).toEqual(['a-child', 'b0']);
    queue.add(4n, 'b', false, 1, 'b1');
    expect(drain(queue).map((e) => e.item)).toEqual(['b1']);
    queue.finish(child);
    const [signal] = drain(queue);
    expect(signal.item).toBe('a-signal');
    queue.add(5n, 'b', true, 1, 'b-signal');
    expect(drain(queue)).toEqual([]); // b's barrier waits for b0 and b1; a's next waits for a-signal
    queue.finish(signal);
    expect(drain(queue).map((e) => e.item)).toEqual(['a-after']);
  });

  it('keeps the oldest effect not finished, queued or running, of any app, for the checkpoint', () => {
    const queue = new EffectsQueue<string>({ ...limits, maxRunning: 2 });
    queue.add(10n, 'a', false, 1, 'a0');
    queue.add(11n, 'b', false, 1, 'b0');
    queue.add(12n, 'a', false, 1, 'a1');
    expect(queue.oldestUnfinished()).toBe(10n);
    const [a0, b0] = drain(queue);
    queue.finish(b0);
    expect(queue.oldestUnfinished()).toBe(10n);
    queue.finish(a0);
    expect(queue.oldestUnfinished()).toBe(12n); // queued, not started
    queue.finish(queue.next()!);
    expect(queue.oldestUnfinished()).toBeUndefined();
    expect(queue.held).toBe(0);
  });

  it('is full past the held events or bytes, but always takes one event when empty', () => {
    const queue = new EffectsQueue<string>({ ...limits, maxRunning: 10, maxHeldEvents: 3, maxHeldBytes: 100 });
    expect(queue.full).toBe(false);
    const big = queue.add(0n, 'a', false, 500, 'big');
    expect(queue.full).toBe(true);
    queue.finish(queue.next()!);
    expect(big.finished).toBe(true);
    expect(queue.full).toBe(false);
    for (let i = 1; i <= 3; i++) queue.add(BigInt(i), 'a', false, 1, 'small');
    expect(queue.full).toBe(true);
    expect(queue.heldBytes).toBe(3);
  });

  it('carries a backlog of 200,000 effects of 1,000 apps (barriers among them) through to the end', () => {
    const queue = new EffectsQueue<number>({ ...limits, maxRunning: 256, maxHeldEvents: 1_000_000, maxHeldBytes: Number.MAX_SAFE_INTEGER });
    const n = 200_000;
    for (let i = 0; i < n; i++) queue.add(BigInt(i), `app${i % 1_000}`, i % 997 === 0, 1, i);
    const running: HeldEffect<number>[] = drain(queue);
    let finished = 0;
    while (running.length > 0) {
      queue.finish(running.shift()!);
      finished++;
      running.push(...drain(queue));
    }
    expect(finished).toBe(n);
    expect(queue.oldestUnfinished()).toBeUndefined();
  });

  it('forgets a finished effect at once, even behind one that is still running (what it holds stays bounded by the unfinished)', () => {
    const queue = new EffectsQueue<number>({ ...limits, maxRunning: 2 });
    queue.add(0n, 'stuck', false, 1, -1);
    const [stuck] = drain(queue);
    for (let i = 1; i <= 1000; i++) {
      queue.add(BigInt(i), 'other', false, 1, i);
      for (const e of drain(queue)) queue.finish(e);
    }
    expect(queue.held).toBe(1);
    expect(queue.oldestUnfinished()).toBe(0n);
    // Nothing links the stuck effect to the thousand finished after it.
    expect(stuck.newer).toBeUndefined();
    queue.finish(stuck);
    expect(queue.oldestUnfinished()).toBeUndefined();
    queue.add(2000n, 'other', false, 1, 2000);
    expect(queue.oldestUnfinished()).toBe(2000n);
  });

  it('frees the slot of an effect backing off, and gives it the next free slot once it resumes, before queued effects', () => {
    const queue = new EffectsQueue<string>({ ...limits, maxRunning: 2 });
    queue.add(0n, 'bad', false, 1, 'bad0');
    queue.add(1n, 'good', false, 1, 'good0');
    queue.add(2n, 'good', false, 1, 'good1');
    queue.add(3n, 'good', false, 1, 'good2');
    const [bad0, good0] = drain(queue);
    expect([bad0.item, good0.item]).toEqual(['bad0', 'good0']);
    queue.suspend(bad0);
    expect(bad0.attempts).toBe(1);
    expect(queue.backingOff).toBe(1);
    expect(queue.running).toBe(1);
    const [good1] = drain(queue); // bad0's slot
    expect(good1.item).toBe('good1');
    queue.resume(bad0);
    expect(queue.next()).toBeUndefined(); // both slots taken
    queue.finish(good0);
    expect(queue.next()).toBe(bad0); // before good2, queued
    expect(queue.backingOff).toBe(0);
    expect(queue.oldestUnfinished()).toBe(0n);
    queue.finish(bad0);
    expect(queue.next()?.item).toBe('good2');
    expect(queue.oldestUnfinished()).toBe(2n);
  });

  it("keeps an effect backing off in its place: the checkpoint stays before it, and its app's barrier waits for it", () => {
    const queue = new EffectsQueue<string>({ ...limits, maxRunning: 10 });
    queue.add(0n, 'a', false, 1, 'a-child');
    queue.add(1n, 'a', true, 1, 'a-signal');
    queue.add(2n, 'b', false, 1, 'b0');
    const [child, b0] = drain(queue);
    queue.suspend(child);
    queue.finish(b0);
    expect(drain(queue)).toEqual([]); // a-signal waits for a-child, backing off
    expect(queue.oldestUnfinished()).toBe(0n);
    queue.resume(child);
    expect(drain(queue)).toEqual([child]);
    queue.finish(child);
    expect(drain(queue).map((e) => e.item)).toEqual(['a-signal']);
  });

  it("attempts at most maxRetryingPerApp of an app's retries at once, the others in order as each ends; its other effects and other apps go on", () => {
    const queue = new EffectsQueue<string>({ ...limits, maxRunning: 100, maxRetryingPerApp: 2 });
    for (let i = 0; i < 5; i++) queue.add(BigInt(i), 'bad', false, 1, `bad${i}`);
    const failed = drain(queue);
    for (const e of failed) queue.suspend(e); // all five fail at once, and their delays end together
    for (const e of failed) queue.resume(e);
    const retries = drain(queue);
    expect(retries.map((e) => e.item)).toEqual(['bad0', 'bad1']);
    expect(queue.backingOff).toBe(3);
    // Effects of the same app recorded later, and of other apps, still start.
    queue.add(5n, 'bad', false, 1, 'bad5');
    queue.add(6n, 'good', false, 1, 'good0');
    expect(drain(queue).map((e) => e.item)).toEqual(['bad5', 'good0']);
    queue.suspend(retries[0]); // failed again: the next parked retry goes
    expect(drain(queue).map((e) => e.item)).toEqual(['bad2']);
    queue.finish(retries[1]); // carried out: the next one
    expect(drain(queue).map((e) => e.item)).toEqual(['bad3']);
    expect(queue.backingOff).toBe(2); // bad0 again, and bad4 parked
  });

  it('keeps an app with effects failing for good going: its later effects start and finish, and only the failing ones stay held', () => {
    const queue = new EffectsQueue<string>({ ...limits, maxRunning: 256, maxHeldEvents: 20, maxRetryingPerApp: 2 });
    const poison = [queue.add(0n, 'a', false, 1, 'poison0'), queue.add(1n, 'a', false, 1, 'poison1')];
    for (const e of drain(queue)) queue.suspend(e);
    for (let i = 2; i < 20; i++) queue.add(BigInt(i), 'a', false, 1, `a${i}`);
    for (const e of drain(queue)) queue.finish(e);
    expect(queue.held).toBe(2);
    expect(queue.full).toBe(false);
    expect(queue.oldestUnfinished()).toBe(0n);
    for (const e of poison) queue.resume(e);
    expect(drain(queue)).toEqual(poison);
  });

  it('keeps its counts, order, barriers and checkpoint right through any sequence of add, next, suspend, resume and finish (against a model)', () => {
    // A deterministic generator: 40 sequences of 400 random steps, each checked against a plain model.
    const random = (seed: number) => () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    type State = 'queued' | 'running' | 'backoff' | 'ready' | 'finished';
    for (let seed = 1; seed <= 40; seed++) {
      const r = random(seed);
      const maxRunning = 1 + Math.floor(r() * 5);
      const maxRetryingPerApp = 1 + Math.floor(r() * 3);
      const queue = new EffectsQueue<number>({ maxRunning, maxHeldEvents: 1e9, maxHeldBytes: 1e12, maxRetryingPerApp });
      const all: HeldEffect<number>[] = [];
      const state = new Map<HeldEffect<number>, State>();
      const inState = (s: State) => all.filter((e) => state.get(e) === s);
      /** Retries of `app` holding a slot (or handed one): what maxRetryingPerApp bounds. */
      const retrying = (app: string) => all.filter((e) => e.app === app && e.attempts > 0 && state.get(e) === 'running').length;
      /** May a queued effect start: FIFO per app, barriers both ways. */
      const mayStart = (e: HeldEffect<number>) => {
        const earlier = all.filter((x) => x.app === e.app && x.position < e.position);
        if (earlier.some((x) => state.get(x) === 'queued')) return false;
        if (earlier.some((x) => x.barrier && state.get(x) !== 'finished')) return false;
        return !e.barrier || earlier.every((x) => state.get(x) === 'finished');
      };
      let position = 0n;
      for (let step = 0; step < 400; step++) {
        const op = r();
        if (op < 0.3) {
          const e = queue.add(position++, ['a', 'b', 'c'][Math.floor(r() * 3)], r() < 0.2, 1, step);
          all.push(e);
          state.set(e, 'queued');
        } else if (op < 0.55) {
          const e = queue.next();
          if (e) {
            const was = state.get(e)!;
            expect(['queued', 'ready']).toContain(was);
            if (was === 'queued') {
              expect(mayStart(e)).toBe(true);
              // Retries go first: any still waiting belongs to an app at its cap.
              expect(inState('ready').filter((x) => retrying(x.app) < maxRetryingPerApp)).toEqual([]);
            } else {
              expect(retrying(e.app)).toBeLessThan(maxRetryingPerApp);
            }
            state.set(e, 'running');
          } else if (inState('running').length < maxRunning) {
            // Nothing left that may start: no retry whose app is under its cap, no startable queued effect.
            expect(inState('ready').filter((e) => retrying(e.app) < maxRetryingPerApp)).toEqual([]);
            expect(inState('queued').filter(mayStart)).toEqual([]);
          }
        } else {
          const running = inState('running');
          const backingOff = inState('backoff');
          if (op < 0.7 && running.length > 0) {
            const e = running[Math.floor(r() * running.length)];
            queue.suspend(e);
            state.set(e, 'backoff');
          } else if (op < 0.8 && backingOff.length > 0) {
            const e = backingOff[Math.floor(r() * backingOff.length)];
            queue.resume(e);
            state.set(e, 'ready');
          } else if (running.length > 0) {
            const e = running[Math.floor(r() * running.length)];
            queue.finish(e);
            state.set(e, 'finished');
          }
        }
        expect(queue.running).toBe(inState('running').length);
        expect(queue.backingOff).toBe(inState('backoff').length + inState('ready').length);
        expect(queue.held).toBe(all.length - inState('finished').length);
        expect(queue.oldestUnfinished()).toBe(all.find((e) => state.get(e) !== 'finished')?.position);
      }
    }
  });

  it('keeps the oldest unfinished position right when an app is added behind newer effects of other apps (read again from the log)', () => {
    const random = (seed: number) => () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let seed = 1; seed <= 50; seed++) {
      const r = random(seed);
      const queue = new EffectsQueue<number>({ maxRunning: 3, maxHeldEvents: 1e9, maxHeldBytes: 1e12, maxRetryingPerApp: 2 });
      // Each app's positions increase (the log's order); across apps any order (app i owns positions ≡ i mod 3).
      const nextOf = [0, 0, 0];
      const unfinished = new Set<HeldEffect<number>>();
      const running: HeldEffect<number>[] = [];
      for (let step = 0; step < 400; step++) {
        const op = r();
        if (op < 0.45) {
          const app = Math.floor(r() * 3);
          nextOf[app] += 1 + Math.floor(r() * 20);
          const e = queue.add(BigInt(nextOf[app] * 3 + app), String(app), false, 1, step);
          unfinished.add(e);
        } else if (op < 0.7) {
          const e = queue.next();
          if (e) running.push(e);
        } else if (running.length > 0) {
          const [e] = running.splice(Math.floor(r() * running.length), 1);
          queue.finish(e);
          unfinished.delete(e);
        }
        const min = [...unfinished].reduce<bigint | undefined>((m, e) => (m === undefined || e.position < m ? e.position : m), undefined);
        expect(queue.oldestUnfinished()).toBe(min);
      }
    }
  });

  it('keeps the whole held list in position order, with links consistent, through refills of several apps interleaved with finishes', () => {
    const random = (seed: number) => () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let seed = 1; seed <= 25; seed++) {
      const r = random(seed);
      const q = new EffectsQueue<number>({ maxRunning: 1 + Math.floor(r() * 6), maxHeldEvents: 1e9, maxHeldBytes: 1e12, maxRetryingPerApp: 2 });
      const apps = 2 + Math.floor(r() * 4);
      // Positions: a shared log; each app's next position only increases; apps may jump back behind others (refill).
      const next = Array.from({ length: apps }, () => 0);
      let head = 0;
      const live = new Set<HeldEffect<number>>();
      const running: HeldEffect<number>[] = [];
      const backing: HeldEffect<number>[] = [];
      const used = new Set<number>();
      for (let step = 0; step < 300; step++) {
        const op = r();
        if (op < 0.45) {
          const a = Math.floor(r() * apps);
          const burst = 1 + Math.floor(r() * 6);
          for (let k = 0; k < burst; k++) {
            // Either the tail of the log (subscription) or a position behind it (refill), above the app's last.
            let p = r() < 0.5 ? ++head * 7 + a : next[a] + 1 + Math.floor(r() * 15);
            while (used.has(p) || p % 7 !== a || p <= next[a]) p++;
            used.add(p);
            next[a] = p;
            head = Math.max(head, Math.ceil(p / 7));
            live.add(q.add(BigInt(p), String(a), r() < 0.1, 1, step));
          }
        } else if (op < 0.65) {
          const e = q.next();
          if (e) running.push(e);
        } else if (op < 0.75 && running.length) {
          const [e] = running.splice(Math.floor(r() * running.length), 1);
          q.suspend(e);
          backing.push(e);
        } else if (op < 0.82 && backing.length) {
          const [e] = backing.splice(Math.floor(r() * backing.length), 1);
          q.resume(e);
        } else if (running.length) {
          const [e] = running.splice(Math.floor(r() * running.length), 1);
          q.finish(e);
          live.delete(e);
        }
        const walk: bigint[] = [];
        const anyQ = q as unknown as { oldest?: HeldEffect<number>; newest?: HeldEffect<number> };
        let prev: HeldEffect<number> | undefined;
        for (let e = anyQ.oldest; e; e = e.newer) {
          if (e.older !== prev || e.finished) throw new Error(`broken link at ${e.position}`);
          walk.push(e.position);
          prev = e;
        }
        expect(anyQ.newest).toBe(prev);
        const expected = [...live].map((e) => e.position).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
        expect(walk).toEqual(expected);
        expect(q.held).toBe(live.size);
      }
    }
  });
});
