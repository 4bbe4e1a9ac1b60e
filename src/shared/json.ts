import { Json } from '../event-store/event-store.port.js';
import { BadUserInputError } from './errors.js';

/**
 * Parses a GraphQL `input`/`data` string that must hold a JSON array (the original API's
 * convention for task arguments, workflow arguments and event data).
 */
export function parseJsonArray(field: string, raw: string, maxBytes: number): Json[] {
  if (Buffer.byteLength(raw, 'utf8') > maxBytes) {
    throw new BadUserInputError(field, `must be at most ${maxBytes} bytes of JSON`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    throw new BadUserInputError(field, `must be a string holding a JSON array; it is not valid JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(value)) {
    throw new BadUserInputError(field, `must be a string holding a JSON array; it holds ${value === null ? 'null' : typeof value}`);
  }
  return value as Json[];
}
