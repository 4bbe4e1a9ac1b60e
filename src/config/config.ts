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
  /** Largest JSON `input`/`data` string, in bytes. */
  maxPayloadBytes: number;
  /** How long a claimed decision or task attempt may go without a heartbeat. */
  leaseMs: number;
  /** Most missed schedule time that is still fired on start. */
  scheduleCatchUpMs: number;
  /** A worker not seen (poll, report, heartbeat) for this long is listed as disconnected. */
  workerGoneMs: number;
  /** Create a token for app `demo` on a store that has none. */
  bootstrapToken: boolean;
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
    rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', 60_000, 0, 10_000_000),
    maxQueryDepth: int('MAX_QUERY_DEPTH', 10, 2, 100),
    maxQueryCost: int('MAX_QUERY_COST', 500, 10, 100_000),
    exampleWorker: bool('BATON_EXAMPLE_WORKER', true),
    exampleEnvironments: (env.BATON_EXAMPLE_ENVIRONMENTS ?? 'dev')
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e.length > 0),
    maxPayloadBytes: int('MAX_PAYLOAD_BYTES', 256 * 1024, 2, 16 * 1024 * 1024),
    leaseMs: int('LEASE_MS', 30_000, 100, 3_600_000),
    scheduleCatchUpMs: int('SCHEDULE_CATCH_UP_MS', 60_000, 0, 7 * 24 * 3_600_000),
    workerGoneMs: int('WORKER_GONE_MS', 30_000, 100, 3_600_000),
    bootstrapToken: bool('BATON_BOOTSTRAP_TOKEN', true),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

export const BATON_CONFIG = Symbol('BATON_CONFIG');
