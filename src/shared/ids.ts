import { randomFillSync } from 'node:crypto';

/** Random bytes drawn from the OS in pages, not one system call per id (ids are made on every request). */
const pool = Buffer.alloc(16 * 256);
let offset = pool.length;

/** A UUID v7 (RFC 9562): 48 bits of Unix milliseconds, then random bits; sorts by creation time. */
export function uuidv7(now: number = Date.now()): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  // Written over the pool's own bytes, which are used once.
  const at = offset;
  offset += 16;
  pool.writeUIntBE(now, at, 6);
  pool[at + 6] = (pool[at + 6] & 0x0f) | 0x70;
  pool[at + 8] = (pool[at + 8] & 0x3f) | 0x80;
  const hex = pool.toString('hex', at, at + 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: string): boolean => UUID.test(value);

/**
 * An id as the API reads it: a UUID in either case (RFC 9562; a database column may give one back
 * in upper case) as the lower-case id Baton handed out; anything else as given.
 */
export const canonicalId = (value: string): string => (isUuid(value) ? value.toLowerCase() : value);

/**
 * A UUID derived from its parts (SHA-256, version 8): the same parts always give the same id,
 * which is what makes a repeated dispatch, firing or delivery idempotent. Defined with the worker
 * protocol, whose workers derive the ids of what their calls start the same way.
 */
export { derivedUuid } from '../protocol/decision-commands.js';

/** Whether `id` is a derived UUID (version 8: an idempotency key's generation, a child's call), not a fresh UUID v7. */
export const isDerivedId = (id: string): boolean => id.length === 36 && id[14] === '8';
