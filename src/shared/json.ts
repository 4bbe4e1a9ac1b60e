import { Json } from '../event-store/event-store.port.js';
import { InputLimits, parseLimitedJson } from './limits.js';

/**
 * Parses a GraphQL `input`/`data` string that must hold a JSON array (the original API's
 * convention for task arguments, workflow arguments and event data), within the input limits.
 */
export function parseJsonArray(field: string, raw: string, limits: InputLimits): Json[] {
  return parseLimitedJson(field, raw, limits, 'array') as Json[];
}
