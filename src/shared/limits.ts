import { BadUserInputError } from './errors.js';

/**
 * The one set of limits every JSON value a client or a worker sends must stay within: workflow and
 * task arguments, event data, schedule inputs, task results, decision commands. Each has a default,
 * an environment variable (validated in `config.ts`) and a row in the README's configuration table.
 * A value over a limit is `BAD_USER_INPUT` naming the field; nothing is stored.
 */
export interface InputLimits {
  /** Largest JSON string, in UTF-8 bytes (`MAX_PAYLOAD_BYTES`). */
  payloadBytes: number;
  /** Deepest nesting of arrays and objects (`MAX_JSON_DEPTH`). */
  jsonDepth: number;
  /** Most elements of one array or keys of one object (`MAX_JSON_ARRAY_LENGTH`). */
  arrayLength: number;
  /** Longest string value or object key, in characters (`MAX_JSON_STRING_LENGTH`). */
  stringLength: number;
  /** Most items in one worker report or heartbeat (`MAX_REPORT_ITEMS`). */
  reportItems: number;
  /**
   * Largest JSON of one decision's commands, in bytes (`MAX_DECISION_BYTES`): a decision that
   * starts 10,000 tasks at once is one report, bigger than any single argument.
   */
  decisionBytes: number;
  /** Most commands in one decision (`MAX_DECISION_COMMANDS`). */
  decisionCommands: number;
}

export const DEFAULT_LIMITS: InputLimits = {
  payloadBytes: 256 * 1024,
  jsonDepth: 64,
  arrayLength: 10_000,
  stringLength: 128 * 1024,
  reportItems: 1_000,
  decisionBytes: 960 * 1024,
  decisionCommands: 20_000,
};

/** Names, task names, tags and event names inside decision commands. */
export const MAX_NAME_LENGTH = 256;

/** Workflow, task and schedule ids where the API takes one (they are UUIDs: 36 characters). */
export const MAX_ID_LENGTH = 64;

/** An IANA time zone name (`TimezoneField`, and a workflow's `CreateSchedule` command). */
export const MAX_TIMEZONE_LENGTH = 64;

/** Picks the input limits out of the service configuration. */
export function inputLimits(config: {
  maxPayloadBytes: number;
  maxJsonDepth: number;
  maxJsonArrayLength: number;
  maxJsonStringLength: number;
  maxReportItems: number;
  maxDecisionBytes: number;
  maxDecisionCommands: number;
}): InputLimits {
  return {
    payloadBytes: config.maxPayloadBytes,
    jsonDepth: config.maxJsonDepth,
    arrayLength: config.maxJsonArrayLength,
    stringLength: config.maxJsonStringLength,
    reportItems: config.maxReportItems,
    decisionBytes: config.maxDecisionBytes,
    decisionCommands: config.maxDecisionCommands,
  };
}

/**
 * The nesting depth of a JSON text, measured without parsing it (no recursion, so a value nested
 * a million levels deep cannot overflow the stack). Stops counting past `stopAt`.
 */
export function jsonTextDepth(raw: string, stopAt = Infinity): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAt) return deepest;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}

/**
 * Parses a JSON string a client or worker sent and checks it against every limit: bytes, depth,
 * array and object sizes, string lengths. `shape: 'array'` also requires a JSON array (the API's
 * convention for arguments and event data).
 */
export function parseLimitedJson(field: string, raw: string, limits: InputLimits, shape: 'array' | 'object' | 'any' = 'any'): unknown {
  if (Buffer.byteLength(raw, 'utf8') > limits.payloadBytes) {
    throw new BadUserInputError(field, `must be at most ${limits.payloadBytes} bytes of JSON`);
  }
  if (jsonTextDepth(raw, limits.jsonDepth) > limits.jsonDepth) {
    throw new BadUserInputError(field, `is nested deeper than ${limits.jsonDepth} levels`);
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (error) {
    const what = shape === 'array' ? 'a string holding a JSON array' : 'JSON';
    throw new BadUserInputError(field, `must be ${what}; it is not valid JSON (${(error as Error).message})`);
  }
  if (shape === 'array' && !Array.isArray(value)) {
    throw new BadUserInputError(field, `must be a string holding a JSON array; it holds ${value === null ? 'null' : typeof value}`);
  }
  if (shape === 'object' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    throw new BadUserInputError(field, 'must be a string holding a JSON object');
  }
  checkJsonValue(field, value, limits);
  return value;
}

/**
 * Checks an already parsed value (e.g. part of a decision command) against the depth, size and
 * string limits. Recursion is safe: callers parse with `parseLimitedJson`, which bounds the depth first.
 */
export function checkJsonValue(field: string, value: unknown, limits: InputLimits, depth = 0): void {
  if (typeof value === 'string') {
    if (value.length > limits.stringLength) throw new BadUserInputError(field, `holds a string longer than ${limits.stringLength} characters`);
    return;
  }
  // `1e400` parses to Infinity, which JSON.stringify would store as null: refused instead.
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new BadUserInputError(field, 'holds a number beyond the range of a double (it would be stored as null)');
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  if (depth >= limits.jsonDepth) throw new BadUserInputError(field, `is nested deeper than ${limits.jsonDepth} levels`);
  if (Array.isArray(value)) {
    if (value.length > limits.arrayLength) throw new BadUserInputError(field, `holds an array of more than ${limits.arrayLength} elements`);
    for (const item of value) checkJsonValue(field, item, limits, depth + 1);
    return;
  }
  const keys = Object.keys(value);
  if (keys.length > limits.arrayLength) throw new BadUserInputError(field, `holds an object with more than ${limits.arrayLength} keys`);
  for (const key of keys) {
    if (key.length > limits.stringLength) throw new BadUserInputError(field, `holds a key longer than ${limits.stringLength} characters`);
    checkJsonValue(field, (value as Record<string, unknown>)[key], limits, depth + 1);
  }
}
