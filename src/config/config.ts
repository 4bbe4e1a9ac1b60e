import { W_OK } from 'node:constants';
import { accessSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, resolve } from 'node:path';
import { DEFAULT_LIMITS } from '../shared/limits.js';
import { PRINTABLE } from '../shared/printable.js';

/**
 * Baton's configuration: environment variables only, validated once at start-up. A bad value
 * stops the service with a message that names the variable and what it accepts.
 */
export interface BatonConfig {
  port: number;
  host: string;
  eventStoreUrl: string;
  logLevel: 'error' | 'warn' | 'info' | 'debug';
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
  /** Most bytes of request bodies and answers this instance's GraphQL requests may hold at once (0: no bound). */
  maxBytesInFlight: number;
  /** Requests per token per minute; 0 turns the limit off. */
  rateLimitPerMinute: number;
  /** Deepest GraphQL selection accepted. */
  maxQueryDepth: number;
  /** Most fields one GraphQL operation may select (a simple cost limit). */
  maxQueryCost: number;
  /** Run the example worker inside `npm start`. */
  exampleWorker: boolean;
  /** Environments of app `demo` the example worker serves. */
  exampleEnvironments: string[];
  /** Largest JSON `input`/`data`/result/commands string, in bytes (public and worker inputs). */
  maxPayloadBytes: number;
  /** Deepest nesting of arrays and objects in a JSON input. */
  maxJsonDepth: number;
  /** Most elements of one array (or keys of one object) in a JSON input. */
  maxJsonArrayLength: number;
  /** Longest string (or object key) in a JSON input, in characters. */
  maxJsonStringLength: number;
  /** Most items in one worker report (decisions plus tasks) or heartbeat. */
  maxReportItems: number;
  /** Largest JSON of one decision's commands (a worker report), in bytes. */
  maxDecisionBytes: number;
  /** Most commands in one decision. */
  maxDecisionCommands: number;
  /** Estimated values an answer may hold: fields times the list sizes they sit under. */
  maxQueryComplexity: number;
  /** Largest GraphQL answer, in bytes of JSON; a bigger one is replaced by PAYLOAD_TOO_LARGE. */
  maxResponseBytes: number;
  /** Most pollWork requests one token may have waiting at once. */
  maxPollsPerToken: number;
  /** Most awaitWorkflow fields one token may have waiting at once (every alias counts). */
  maxAwaitsPerToken: number;
  /** Most schedules that can still fire (active or paused) one app may have, over its environments; 0: no bound. */
  maxSchedulesPerApp: number;
  /** MAX_QUEUED_EVENTS: the most events one workflow keeps back (a backlog its code has not taken); one more sent to it is refused. */
  maxQueuedEvents: number;
  /** How long a claimed decision or task attempt may go without a heartbeat. */
  leaseMs: number;
  /** Most missed schedule time that is still fired on start. */
  scheduleCatchUpMs: number;
  /** How long a dispatch's idempotency key keeps answering with the first dispatch's id. */
  idempotencyWindowMs: number;
  /** A worker not seen (poll, report, heartbeat) for this long is listed as disconnected. */
  workerGoneMs: number;
  /** Most workers (worker ids) one token's polls are remembered for on an instance (the `workers` query). */
  maxWorkersPerToken: number;
  /** Create a token for app `demo` on a store that has none. */
  bootstrapToken: boolean;
  /** Most streams whose folded state an instance keeps (LRU) for the write path. */
  streamCacheSize: number;
  /** SQLite file of the durable read models: the store's own file for the embedded store, one per instance next to EventStoreDB. */
  readModelPath: string;
  /** Bearer token `/metrics` asks for; null leaves it open. */
  metricsToken: string | null;
  /** How often the scheduled job samples the projection lag. */
  metricsSampleMs: number;
  /** Longest a SIGTERM shutdown may take before the process exits anyway (code 1). */
  shutdownGraceMs: number;
  /** How long to stay up, answering not ready, before the listener closes (lets load balancers notice). */
  shutdownDelayMs: number;
  /** Finished workflows older than this many days are deleted; 0 keeps everything. */
  retentionDays: number;
  /** How often the retention job looks for expired workflows. */
  retentionSweepMs: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
const STORE_SCHEMES = ['sqlite:', 'esdb://', 'esdb+discover://', 'kurrentdb://', 'kurrentdb+discover://', 'kurrent://'];

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env = process.env): BatonConfig {
  const problems: string[] = [];

  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
      problems.push(`${name}=${JSON.stringify(raw)}: expected a whole number from ${min} to ${max}`);
      return fallback;
    }
    return value;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const v = raw.trim().toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(v)) return true;
    if (['0', 'false', 'no', 'off'].includes(v)) return false;
    problems.push(`${name}=${JSON.stringify(raw)}: expected true or false`);
    return fallback;
  };

  const days = (name: string): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return 0;
    const value = Number(raw);
    if (!/^\d+(\.\d+)?$/.test(raw.trim()) || !Number.isFinite(value) || value > 36_500) {
      problems.push(`${name}=${JSON.stringify(raw)}: expected a number of days from 0 (off) to 36500, decimals allowed`);
      return 0;
    }
    return value;
  };

  const eventStoreUrl = env.EVENT_STORE_URL?.trim() || 'sqlite:./data/baton.db';
  if (!STORE_SCHEMES.some((s) => eventStoreUrl.startsWith(s)) || eventStoreUrl === 'sqlite:') {
    problems.push(
      `EVENT_STORE_URL=${JSON.stringify(eventStoreUrl)}: expected sqlite:<file> (e.g. sqlite:./data/baton.db) or esdb://, esdb+discover://, kurrentdb:// <host:port>`,
    );
  }

  const logLevel = (env.LOG_LEVEL?.trim().toLowerCase() || 'info') as BatonConfig['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    problems.push(`LOG_LEVEL=${JSON.stringify(env.LOG_LEVEL)}: expected one of ${LOG_LEVELS.join(', ')}`);
  }

  const config: BatonConfig = {
    port: int('PORT', 3000, 0, 65535),
    host: env.HOST?.trim() || '0.0.0.0',
    eventStoreUrl,
    logLevel: LOG_LEVELS.includes(logLevel) ? logLevel : 'info',
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    maxBytesInFlight: int('MAX_BYTES_IN_FLIGHT', 256 * 1024 * 1024, 0, 2 ** 40),
    rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', 60_000, 0, 10_000_000),
    maxQueryDepth: int('MAX_QUERY_DEPTH', 10, 2, 100),
    maxQueryCost: int('MAX_QUERY_COST', 500, 10, 100_000),
    exampleWorker: bool('BATON_EXAMPLE_WORKER', true),
    exampleEnvironments: (env.BATON_EXAMPLE_ENVIRONMENTS ?? 'dev')
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e.length > 0),
    maxPayloadBytes: int('MAX_PAYLOAD_BYTES', DEFAULT_LIMITS.payloadBytes, 2, 16 * 1024 * 1024),
    maxJsonDepth: int('MAX_JSON_DEPTH', DEFAULT_LIMITS.jsonDepth, 1, 1_000),
    maxJsonArrayLength: int('MAX_JSON_ARRAY_LENGTH', DEFAULT_LIMITS.arrayLength, 1, 10_000_000),
    maxJsonStringLength: int('MAX_JSON_STRING_LENGTH', DEFAULT_LIMITS.stringLength, 1, 16 * 1024 * 1024),
    maxReportItems: int('MAX_REPORT_ITEMS', DEFAULT_LIMITS.reportItems, 1, 100_000),
    maxDecisionBytes: int('MAX_DECISION_BYTES', DEFAULT_LIMITS.decisionBytes, 1024, 64 * 1024 * 1024),
    maxDecisionCommands: int('MAX_DECISION_COMMANDS', DEFAULT_LIMITS.decisionCommands, 1, 1_000_000),
    maxQueryComplexity: int('MAX_QUERY_COMPLEXITY', 100_000, 10, 100_000_000),
    maxResponseBytes: int('MAX_RESPONSE_BYTES', 16 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxPollsPerToken: int('MAX_POLLS_PER_TOKEN', 128, 1, 100_000),
    maxAwaitsPerToken: int('MAX_AWAITS_PER_TOKEN', 10_000, 1, 10_000_000),
    maxSchedulesPerApp: int('MAX_SCHEDULES_PER_APP', 10_000, 0, 100_000_000),
    maxQueuedEvents: int('MAX_QUEUED_EVENTS', 100_000, 1, 10_000_000),
    leaseMs: int('LEASE_MS', 30_000, 100, 3_600_000),
    scheduleCatchUpMs: int('SCHEDULE_CATCH_UP_MS', 60_000, 0, 7 * 24 * 3_600_000),
    idempotencyWindowMs: int('IDEMPOTENCY_WINDOW_MS', 24 * 3_600_000, 1000, 30 * 24 * 3_600_000),
    workerGoneMs: int('WORKER_GONE_MS', 30_000, 100, 3_600_000),
    maxWorkersPerToken: int('MAX_WORKERS_PER_TOKEN', 1_000, 1, 1_000_000),
    bootstrapToken: bool('BATON_BOOTSTRAP_TOKEN', true),
    streamCacheSize: int('STREAM_CACHE_SIZE', 10_000, 1, 10_000_000),
    readModelPath: readModelPath(eventStoreUrl, env),
    metricsToken: env.METRICS_TOKEN?.trim() || null,
    metricsSampleMs: int('METRICS_SAMPLE_MS', 5_000, 100, 3_600_000),
    shutdownGraceMs: int('SHUTDOWN_GRACE_MS', 25_000, 100, 3_600_000),
    shutdownDelayMs: int('SHUTDOWN_DELAY_MS', 0, 0, 600_000),
    retentionDays: days('RETENTION_DAYS'),
    retentionSweepMs: int('RETENTION_SWEEP_MS', 3_600_000, 100, 7 * 24 * 3_600_000),
  };
  // Each is the environment of a worker's polls: one the API refuses would be refused for ever.
  const badEnvironment = config.exampleEnvironments.find((e) => e.length > 128 || !PRINTABLE.test(e));
  if (badEnvironment !== undefined) {
    problems.push(`BATON_EXAMPLE_ENVIRONMENTS: ${JSON.stringify(badEnvironment)} is not an environment (1 to 128 characters, no control characters)`);
  } else if (config.exampleWorker && config.exampleEnvironments.length === 0) {
    problems.push('BATON_EXAMPLE_ENVIRONMENTS: expected one or more comma-separated environments (or BATON_EXAMPLE_WORKER=false)');
  }
  // /metrics reads `Authorization: Bearer <token>` with the token one run of non-space characters.
  if (config.metricsToken !== null && /\s/.test(config.metricsToken)) {
    problems.push(`METRICS_TOKEN: expected the token alone, without spaces (the scraper sends it as "Authorization: Bearer <token>")`);
  }
  // One request of the largest body must fit on its own (else it is admitted only while nothing else is held).
  if (config.maxBytesInFlight > 0 && config.maxBytesInFlight < config.bodyLimitBytes) {
    problems.push(`MAX_BYTES_IN_FLIGHT=${config.maxBytesInFlight} must be 0 (no bound) or at least BODY_LIMIT_BYTES=${config.bodyLimitBytes}`);
  }
  if (config.shutdownDelayMs >= config.shutdownGraceMs) {
    problems.push(`SHUTDOWN_DELAY_MS=${config.shutdownDelayMs} must be less than SHUTDOWN_GRACE_MS=${config.shutdownGraceMs}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/**
 * Settings that are valid one by one but work against each other; the service starts and logs
 * each at `warn`. One stored value (a decision's commands, a task's result) must fit an answer on
 * its own, escaped once more as a string field (up to twice its size): a worker reads a run a
 * page of at least one event at a time (`decisionHistory`), and `workflowHistory` likewise.
 */
export function configWarnings(config: Pick<BatonConfig, 'maxResponseBytes' | 'maxDecisionBytes' | 'maxPayloadBytes'> & Partial<Pick<BatonConfig, 'bodyLimitBytes'>>): string[] {
  const warnings: string[] = [];
  const largest = Math.max(config.maxDecisionBytes, config.maxPayloadBytes);
  const needed = 2 * largest + RESPONSE_ENVELOPE_BYTES;
  if (config.maxResponseBytes < needed) {
    const which = config.maxDecisionBytes >= config.maxPayloadBytes ? `MAX_DECISION_BYTES=${config.maxDecisionBytes}` : `MAX_PAYLOAD_BYTES=${config.maxPayloadBytes}`;
    warnings.push(
      `MAX_RESPONSE_BYTES=${config.maxResponseBytes} is less than twice ${which} plus ${RESPONSE_ENVELOPE_BYTES} (${needed}): ` +
        'a stored event that large cannot be read back (a worker replaying its run, workflowHistory), and its workflow stops moving; raise MAX_RESPONSE_BYTES or lower the other',
    );
  }
  // A payload (an `input`, an event's `data`, a task's result) travels as a string field of a JSON
  // body, escaped once more (up to twice its size): past the body limit it is refused with 413.
  const bodyNeeded = 2 * config.maxPayloadBytes + RESPONSE_ENVELOPE_BYTES;
  if (config.bodyLimitBytes !== undefined && config.bodyLimitBytes < bodyNeeded) {
    warnings.push(
      `BODY_LIMIT_BYTES=${config.bodyLimitBytes} is less than twice MAX_PAYLOAD_BYTES=${config.maxPayloadBytes} plus ${RESPONSE_ENVELOPE_BYTES} (${bodyNeeded}): ` +
        'a payload the payload bound allows can be refused with HTTP 413 (request body too large) before it is read; raise BODY_LIMIT_BYTES or lower MAX_PAYLOAD_BYTES',
    );
  }
  return warnings;
}

/** Room an answer needs besides one escaped event (field names, the other fields of a page). */
const RESPONSE_ENVELOPE_BYTES = 16 * 1024;

/** Where the durable read models live for a store URL (see `ReadModelDb`). */
export function readModelPath(eventStoreUrl: string, env: Record<string, string | undefined> = process.env): string {
  const explicit = env.READ_MODEL_PATH?.trim();
  if (explicit) return explicit;
  if (eventStoreUrl.startsWith('sqlite:')) {
    return eventStoreUrl.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '') || './data/baton.db';
  }
  return `./data/read-models-${hostname().replace(/[^A-Za-z0-9_.-]/g, '_')}.db`;
}

/**
 * What stops SQLite from opening the store's file or the read models' (checked at start-up, so
 * that the message names the variable and the path instead of SQLite's `unable to open database
 * file` under a stack trace): the path is a directory, a parent is a file, or the directory it
 * would be created in cannot be written.
 */
export function storePathProblems(config: Pick<BatonConfig, 'eventStoreUrl' | 'readModelPath'>, env: Env = process.env): string[] {
  const problems: string[] = [];
  const check = (setting: string, file: string) => {
    if (file === ':memory:') return;
    const full = resolve(file);
    const stat = statOrNull(full);
    if (stat) {
      if (!stat.isFile()) problems.push(`${setting}: ${full} is a directory, not a database file`);
      return;
    }
    for (let dir = dirname(full); ; dir = dirname(dir)) {
      const parent = statOrNull(dir);
      if (parent && !parent.isDirectory()) {
        problems.push(`${setting}: cannot create ${full}: ${dir} is not a directory`);
        return;
      }
      if (parent) {
        try {
          accessSync(dir, W_OK);
        } catch {
          problems.push(`${setting}: cannot create ${full}: ${dir} is not writable`);
        }
        return;
      }
      if (dir === dirname(dir)) return;
    }
  };
  const storeFile = config.eventStoreUrl.startsWith('sqlite:') ? config.eventStoreUrl.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '') || './data/baton.db' : null;
  if (storeFile !== null) check(`EVENT_STORE_URL=${config.eventStoreUrl}`, storeFile);
  if (storeFile === null || resolve(config.readModelPath) !== resolve(storeFile)) {
    check(`READ_MODEL_PATH=${env.READ_MODEL_PATH?.trim() ? config.readModelPath : `${config.readModelPath} (its default)`}`, config.readModelPath);
  }
  return problems;
}

function statOrNull(path: string): ReturnType<typeof statSync> | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

export const BATON_CONFIG = Symbol('BATON_CONFIG');
