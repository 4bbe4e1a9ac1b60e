/**
 * The worker's timing and cache options are checked where they are given. `baton worker
 * --heartbeat-ms 5s` (or BATON_HEARTBEAT_MS=5s) became NaN, which Node's setInterval takes as 1 ms:
 * while a task ran, the worker sent a heartbeat request every millisecond and spent the token's
 * rate limit. `--shutdown-grace-ms 30s` became NaN too, a grace of 1 ms: SIGTERM aborted every
 * running task at once. `--max-cached-workflows all` kept no run at all (every decision a full
 * replay). A value past 2^31 - 1 ms also fires at once in Node's timers. Now the CLI exits 2 naming
 * the flag, and `new Worker` throws a TypeError naming the option.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { Worker } from '../../src/sdk/index.js';

describe('new Worker refuses timing and cache options that cannot work', () => {
  it.each([
    [{ heartbeatIntervalMs: Number.NaN }, 'heartbeatIntervalMs'],
    [{ heartbeatIntervalMs: 0 }, 'heartbeatIntervalMs'],
    [{ heartbeatIntervalMs: 2 ** 31 }, 'heartbeatIntervalMs'],
    [{ shutdownGraceMs: Number.NaN }, 'shutdownGraceMs'],
    [{ shutdownGraceMs: -1 }, 'shutdownGraceMs'],
    [{ shutdownGraceMs: 2 ** 31 }, 'shutdownGraceMs'],
    [{ maxCachedWorkflows: Number.NaN }, 'maxCachedWorkflows'],
    [{ maxCachedWorkflows: -1 }, 'maxCachedWorkflows'],
    [{ pollWaitMs: Number.NaN }, 'pollWaitMs'],
    [{ pollWaitMs: -5 }, 'pollWaitMs'],
    // The service takes a poll's waitMs up to 60 s: past it, every poll was refused (BAD_USER_INPUT), for ever.
    [{ pollWaitMs: 60_001 }, 'pollWaitMs'],
    [{ pollWaitMs: 2 ** 31 - 1 }, 'pollWaitMs'],
  ])('%j, naming the option', (options, name) => {
    expect(() => new Worker({ url: 'http://localhost:1', token: 't', appId: 'demo', environment: 'x', ...options })).toThrow(TypeError);
    expect(() => new Worker({ url: 'http://localhost:1', token: 't', appId: 'demo', environment: 'x', ...options })).toThrow(name);
  });

  it('takes the longest poll wait the service allows (60 s)', () => {
    expect(() => new Worker({ url: 'http://localhost:1', token: 't', appId: 'demo', environment: 'x', pollWaitMs: 60_000 })).not.toThrow();
  });

  it('takes the documented defaults and edge values (no cache at all, no grace)', () => {
    expect(() => new Worker({ url: 'http://localhost:1', token: 't', appId: 'demo', environment: 'x', maxCachedWorkflows: 0, shutdownGraceMs: 0, heartbeatIntervalMs: 1, pollWaitMs: 0 })).not.toThrow();
  });
});

describe('baton worker refuses such flags before it polls', () => {
  const baton = (...args: string[]) =>
    spawnSync(process.execPath, [join(process.cwd(), 'dist/src/cli/baton.js'), 'worker', 'dist/test/support/fixtures/workflows.js', '--url', 'http://127.0.0.1:1', '--token', 't', '--app', 'demo', '--env', 'cli', ...args], {
      encoding: 'utf8',
      timeout: 20_000,
    });

  it.each([
    [['--heartbeat-ms', '5s'], '--heartbeat-ms'],
    [['--heartbeat-ms', '0'], '--heartbeat-ms'],
    [['--shutdown-grace-ms', '30s'], '--shutdown-grace-ms'],
    [['--max-cached-workflows', 'all'], '--max-cached-workflows'],
  ])('%j exits 2 naming the flag', (args, flag) => {
    const run = baton(...args);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`baton worker: ${flag} must be`);
  });
});

describe('baton worker on a module that defines nothing', () => {
  // A wrong path (a compiled file that re-exports nothing, the module's index) started a worker that
  // polled for nothing and said only "serving no workflows; tasks none", for ever.
  it('exits 2 saying the module exports no task or workflow definition', () => {
    const run = spawnSync(process.execPath, [join(process.cwd(), 'dist/src/cli/baton.js'), 'worker', 'dist/src/sdk/duration.js', '--url', 'http://127.0.0.1:1', '--token', 't', '--app', 'demo', '--env', 'cli'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('exports no task or workflow definition');
  });
});
