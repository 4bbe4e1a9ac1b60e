import { describe, expect, it } from '@jest/globals';
import { ConflictError } from './errors.js';
import { FirstDispatch, IdempotencyScope, dispatchOnce, idempotentId } from './idempotency.js';

const scope: IdempotencyScope = { kind: 'workflow', appId: 'demo', environment: 'dev', key: 'order-42' };
const WINDOW = 1000;

/** A store of first dispatches by id, as the streams would hold them. */
function store() {
  const streams = new Map<string, FirstDispatch>();
  /** Streams retention deleted (and the store remembers deleted). */
  const deleted = new Set<string>();
  let dispatches = 0;
  const run = (name: string, now: number) =>
    dispatchOnce({
      scope,
      name,
      now,
      windowMs: WINDOW,
      read: async (id) => streams.get(id),
      deleted: async (id) => deleted.has(id),
      dispatch: async (id) => {
        dispatches++;
        if (streams.has(id)) return false;
        streams.set(id, { name, dispatchedAt: now });
        return true;
      },
    });
  /** Retention deletes a stream (past its window). */
  const expire = (id: string) => {
    streams.delete(id);
    deleted.add(id);
  };
  return { run, streams, expire, dispatched: () => dispatches };
}

describe('dispatchOnce', () => {
  it('dispatches under the id derived from the key, once within the window', async () => {
    const s = store();
    expect(await s.run('Checkout', 0)).toEqual({ id: idempotentId(scope, 0), created: true });
    expect(await s.run('Checkout', WINDOW - 1)).toEqual({ id: idempotentId(scope, 0), created: false });
    expect(s.streams.size).toBe(1);
    expect(s.dispatched()).toBe(1);
  });

  it('after the window, the next generation; its retries answer it', async () => {
    const s = store();
    await s.run('Checkout', 0);
    expect(await s.run('Checkout', WINDOW)).toEqual({ id: idempotentId(scope, 1), created: true });
    expect(await s.run('Checkout', WINDOW + 10)).toEqual({ id: idempotentId(scope, 1), created: false });
    expect(await s.run('Checkout', 5 * WINDOW)).toEqual({ id: idempotentId(scope, 2), created: true });
  });

  it('walks past a generation retention deleted: a retry of a later one within its window answers it, and starts nothing again', async () => {
    const s = store();
    await s.run('Checkout', 0);
    const second = await s.run('Checkout', WINDOW + 1);
    expect(second).toEqual({ id: idempotentId(scope, 1), created: true });
    s.expire(idempotentId(scope, 0));
    expect(await s.run('Checkout', WINDOW + 500)).toEqual({ id: idempotentId(scope, 1), created: false });
    expect(s.streams.has(idempotentId(scope, 0))).toBe(false);
    // And past every generation deleted, the next free one.
    s.expire(idempotentId(scope, 1));
    expect(await s.run('Checkout', 3 * WINDOW)).toEqual({ id: idempotentId(scope, 2), created: true });
    expect(s.dispatched()).toBe(3);
  });

  it('a racing dispatch that lost answers the winner', async () => {
    const streams = new Map<string, FirstDispatch>();
    const winner = idempotentId(scope, 0);
    const result = await dispatchOnce({
      scope,
      name: 'Checkout',
      now: 5,
      windowMs: WINDOW,
      read: async (id) => streams.get(id),
      dispatch: async (id) => {
        streams.set(id, { name: 'Checkout', dispatchedAt: 4 }); // another instance appended first
        return false;
      },
    });
    expect(result).toEqual({ id: winner, created: false });
  });

  it('a dispatch refused as existing by a stale cache (the stream was deleted) forgets the cache and dispatches again', async () => {
    const streams = new Map<string, FirstDispatch>();
    const cached = new Set([idempotentId(scope, 0)]); // retention deleted it; this instance still caches it
    const forgotten: string[] = [];
    const result = await dispatchOnce({
      scope,
      name: 'Checkout',
      now: 5,
      windowMs: WINDOW,
      read: async (id) => streams.get(id),
      dispatch: async (id) => {
        if (cached.has(id) || streams.has(id)) return false;
        streams.set(id, { name: 'Checkout', dispatchedAt: 5 });
        return true;
      },
      forget: (id) => {
        forgotten.push(id);
        cached.delete(id);
      },
    });
    expect(result).toEqual({ id: idempotentId(scope, 0), created: true });
    expect(forgotten).toEqual([idempotentId(scope, 0)]);
  });

  it('a key reused for another name within the window is a conflict', async () => {
    const s = store();
    await s.run('Checkout', 0);
    await expect(s.run('Refund', 10)).rejects.toBeInstanceOf(ConflictError);
  });

  it('ids differ by kind, app, environment and key', () => {
    const ids = [
      idempotentId(scope, 0),
      idempotentId({ ...scope, kind: 'task' }, 0),
      idempotentId({ ...scope, appId: 'other' }, 0),
      idempotentId({ ...scope, environment: 'prod' }, 0),
      idempotentId({ ...scope, key: 'order-43' }, 0),
      idempotentId(scope, 1),
    ];
    expect(new Set(ids).size).toBe(ids.length);
    expect(idempotentId(scope, 0)).toBe(idempotentId({ ...scope }, 0));
  });
});
