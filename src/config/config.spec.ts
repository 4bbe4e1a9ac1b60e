import { describe, expect, it } from '@jest/globals';
import { ConfigError, configWarnings, loadConfig } from './config.js';

describe('loadConfig', () => {
  it('defaults to port 3000, the embedded store and info logs', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 3000, eventStoreUrl: 'sqlite:./data/baton.db', logLevel: 'info', bodyLimitBytes: 1024 * 1024 });
  });

  it.each(['esdb://localhost:2113?tls=false', 'esdb+discover://cluster.local:2113', 'kurrentdb://localhost:2113'])('accepts %s as EVENT_STORE_URL', (url) => {
    expect(loadConfig({ EVENT_STORE_URL: url }).eventStoreUrl).toBe(url);
  });

  it('names every bad variable and what it accepts', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', EVENT_STORE_URL: 'postgres://x', LOG_LEVEL: 'loud', BATON_EXAMPLE_WORKER: 'maybe' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    expect(problems).toMatch(/PORT="eighty": expected a whole number from 0 to 65535/);
    expect(problems).toMatch(/EVENT_STORE_URL="postgres:\/\/x": expected sqlite:<file>/);
    expect(problems).toMatch(/LOG_LEVEL="loud": expected one of error, warn, info, debug/);
    expect(problems).toMatch(/BATON_EXAMPLE_WORKER="maybe": expected true or false/);
  });

  it('keeps idempotency keys for 24 hours unless IDEMPOTENCY_WINDOW_MS says otherwise', () => {
    expect(loadConfig({}).idempotencyWindowMs).toBe(86_400_000);
    expect(loadConfig({ IDEMPOTENCY_WINDOW_MS: '60000' }).idempotencyWindowMs).toBe(60_000);
    expect(() => loadConfig({ IDEMPOTENCY_WINDOW_MS: '10' })).toThrow(/IDEMPOTENCY_WINDOW_MS="10"/);
  });

  it('rejects a port out of range', () => {
    expect(() => loadConfig({ PORT: '70000' })).toThrow(/PORT="70000"/);
  });

  it('reads the operations settings: metrics token, shutdown timings, retention (off by default)', () => {
    expect(loadConfig({})).toMatchObject({ metricsToken: null, shutdownGraceMs: 25_000, shutdownDelayMs: 0, retentionDays: 0, retentionSweepMs: 3_600_000 });
    expect(loadConfig({ METRICS_TOKEN: ' s3cret ', RETENTION_DAYS: '0.5', SHUTDOWN_DELAY_MS: '5000' })).toMatchObject({
      metricsToken: 's3cret',
      retentionDays: 0.5,
      shutdownDelayMs: 5000,
    });
    expect(() => loadConfig({ RETENTION_DAYS: '-1' })).toThrow(/RETENTION_DAYS="-1": expected a number of days/);
    expect(() => loadConfig({ RETENTION_DAYS: 'week' })).toThrow(/RETENTION_DAYS/);
    expect(() => loadConfig({ SHUTDOWN_DELAY_MS: '30000', SHUTDOWN_GRACE_MS: '10000' })).toThrow(/SHUTDOWN_DELAY_MS=30000 must be less than SHUTDOWN_GRACE_MS=10000/);
  });
});

describe('configWarnings', () => {
  it('has nothing to say about the defaults', () => {
    expect(configWarnings(loadConfig({}))).toEqual([]);
  });

  it('warns when one stored decision could not be read back within MAX_RESPONSE_BYTES', () => {
    const [warning, ...rest] = configWarnings(loadConfig({ MAX_RESPONSE_BYTES: '1048576' }));
    expect(rest).toEqual([]);
    expect(warning).toContain('MAX_RESPONSE_BYTES=1048576');
    expect(warning).toContain('MAX_DECISION_BYTES=983040');
    expect(warning).toContain('cannot be read back');
  });

  it('names MAX_PAYLOAD_BYTES when it is the larger one', () => {
    expect(configWarnings(loadConfig({ MAX_RESPONSE_BYTES: '2097152', MAX_PAYLOAD_BYTES: '2000000' }))[0]).toContain('MAX_PAYLOAD_BYTES=2000000');
  });

  it('is satisfied by exactly twice the largest value plus the envelope', () => {
    expect(configWarnings({ maxResponseBytes: 2 * 100_000 + 16 * 1024, maxDecisionBytes: 100_000, maxPayloadBytes: 1_000 })).toEqual([]);
    expect(configWarnings({ maxResponseBytes: 2 * 100_000 + 16 * 1024 - 1, maxDecisionBytes: 100_000, maxPayloadBytes: 1_000 })).toHaveLength(1);
  });
});
