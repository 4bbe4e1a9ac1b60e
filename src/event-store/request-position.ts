import { AsyncLocalStorage } from 'node:async_hooks';

/** The highest log position a request wrote or read to (sent back as `x-baton-position`). */
export const requestPosition = new AsyncLocalStorage<{ position: bigint }>();

/** Notes that the current request's answer reflects the log up to `position`. */
export function notePosition(position: bigint): void {
  const store = requestPosition.getStore();
  if (store && position > store.position) store.position = position;
}
