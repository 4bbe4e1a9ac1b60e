import { createHash } from 'node:crypto';

/**
 * The id of the task or workflow a schedule dispatches, derived from what is being dispatched so
 * that every instance, every retry and every recovery after a crash dispatches the same id (and
 * the dispatchers' deciders turn a second dispatch of an id into a no-op).
 *
 * Laid out as a UUID v7 whose 48-bit time field is the occurrence (or trigger) time and whose
 * other bits come from a SHA-256 of the parts: it sorts with the other ids by time, like every
 * id Baton hands out, and it is deterministic.
 */
export function derivedUuidV7(at: number, ...parts: string[]): string {
  const bytes = Buffer.alloc(16);
  createHash('sha256').update(parts.join('\u0000')).digest().copy(bytes, 0, 0, 16);
  const ms = BigInt(Math.max(0, Math.floor(at)));
  for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The dispatch of one cron occurrence (epoch ms) of a schedule. */
export const occurrenceDispatchId = (scheduleId: string, occurrence: number): string =>
  derivedUuidV7(occurrence, 'schedule-occurrence', scheduleId, new Date(occurrence).toISOString());

/** The dispatch of one manual trigger of a schedule. */
export const triggerDispatchId = (scheduleId: string, triggerId: string, at: number): string =>
  derivedUuidV7(at, 'schedule-trigger', scheduleId, triggerId);
