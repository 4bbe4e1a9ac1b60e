import { currentRequestContext } from '../shared/request-context.js';

/** Notes that the current request's answer reflects the log up to `position` (sent back as `x-baton-position`). */
export function notePosition(position: bigint): void {
  const context = currentRequestContext();
  if (context && position > context.position) context.position = position;
}
