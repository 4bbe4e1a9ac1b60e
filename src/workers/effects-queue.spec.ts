import { describe, expect, it } from '@jest/globals';
import { EffectsQueue, HeldEffect } from './effects-queue.js';

const limits = { maxRunning: 4, maxHeldEvents: 100, maxHeldBytes: 1_000_000, maxFailingPerApp: 1_000 };

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

  it('starts no more effects of an app with maxFailingPerApp failed and unfinished until one is carried out; other apps go on', () => {
    const queue = new EffectsQueue<string>({ ...limits, maxRunning: 100, maxFailingPerApp: 2 });
    for (let i = 0; i < 5; i++) queue.add(BigInt(i), 'bad', false, 1, `bad${i}`);
    const started = drain(queue);
    expect(started).toHaveLength(5);
    queue.suspend(started[0]);
    queue.suspend(started[1]);
    for (let i = 5; i < 8; i++) queue.add(BigInt(i), 'bad', false, 1, `bad${i}`);
    queue.add(8n, 'good', false, 1, 'good0');
    expect(drain(queue).map((e) => e.item)).toEqual(['good0']); // bad5..7 wait
    queue.resume(started[0]);
    const [retry] = drain(queue);
    expect(retry).toBe(started[0]);
    expect(drain(queue)).toEqual([]); // one backing off, one retrying: still none of bad's queued
    queue.finish(retry); // carried out at last: one backing off now, under the cap
    expect(drain(queue).map((e) => e.item)).toEqual(['bad5', 'bad6', 'bad7']);
  });
});
