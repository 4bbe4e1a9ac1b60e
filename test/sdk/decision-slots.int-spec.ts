/**
 * A worker's decisions have slots of their own, apart from its task slots. Before, one pool of
 * `concurrency` slots held both: a worker whose slots were all taken by long tasks made no
 * decision at all until one of them ended, so every workflow it served stood still (a workflow
 * that only had to complete, or to schedule its next task, waited for someone else's hour-long
 * task). Now each kind is polled for and claimed apart (`pollWork`'s and the eager claim's
 * `maxDecisions` / `maxTasks`), and `decisionConcurrency` bounds decisions as `concurrency`
 * bounds tasks. A real service and in-process workers.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const quiet = { info() {}, warn() {}, error() {} };

/** Releases what `held` waits on, one at a time, in order. */
class Gate {
  private readonly waiting: Array<() => void> = [];
  running = 0;
  mostAtOnce = 0;
  async held<T>(value: T): Promise<T> {
    this.running++;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running--;
    return value;
  }
  get queued(): number {
    return this.waiting.length;
  }
  releaseOne(): void {
    this.waiting.shift()?.();
  }
  releaseAll(): void {
    while (this.waiting.length > 0) this.releaseOne();
  }
}

const tasksGate = new Gate();
const stepsGate = new Gate();
const long = defineTask('long', (_ctx, i: number) => tasksGate.held(i));
const holding = defineWorkflow('Holding', async (ctx, i: number) => ctx.run(long, i));
const quick = defineWorkflow('Quick', async () => 'done');
const stepping = defineWorkflow('Stepping', async (ctx, i: number) => ctx.step('held', () => stepsGate.held(i)));

let service: Service;
let client: Client;
beforeAll(async () => {
  service = await startService();
  client = new Client({ url: service.url, token: service.token });
});
afterAll(() => service?.stop());

function worker(environment: string, options: { concurrency?: number; decisionConcurrency?: number }) {
  return new Worker({ url: service.url, token: service.token, appId: APP, environment, tasks: [long], workflows: [holding, quick, stepping], logger: quiet, pollWaitMs: 2_000, ...options });
}

describe('decision slots apart from task slots', () => {
  it('a worker whose every task slot holds a long task still makes decisions: a workflow dispatched meanwhile completes', async () => {
    const environment = 'slots-busy';
    const w = worker(environment, { concurrency: 2 });
    const running = w.run();
    try {
      const holders = await Promise.all([0, 1].map((i) => client.dispatchWorkflow({ appId: APP, environment, name: 'Holding', input: [i] })));
      await waitFor(() => tasksGate.running === 2, { timeoutMs: 15_000, description: 'both task slots held by long tasks' });
      const id = await client.dispatchWorkflow({ appId: APP, environment, name: 'Quick', input: [] });
      expect(await client.awaitWorkflow(APP, environment, id, { timeoutMs: 15_000 })).toMatchObject({ state: 'COMPLETED' });
      // Decided while both long tasks were still running.
      expect(tasksGate.running).toBe(2);
      tasksGate.releaseAll();
      for (const holder of holders) expect(await client.awaitWorkflow(APP, environment, holder, { timeoutMs: 15_000 })).toMatchObject({ state: 'COMPLETED' });
    } finally {
      tasksGate.releaseAll();
      await w.shutdown();
      await running;
    }
  });

  it('decisionConcurrency bounds the decisions running at once: three claimable, one slot, one at a time', async () => {
    const environment = 'slots-one-decision';
    // Dispatched before the worker starts: its first poll finds all three decisions claimable.
    const ids = await Promise.all([0, 1, 2].map((i) => client.dispatchWorkflow({ appId: APP, environment, name: 'Stepping', input: [i] })));
    const w = worker(environment, { concurrency: 10, decisionConcurrency: 1 });
    const running = w.run();
    try {
      for (let released = 0; released < 3; released++) {
        await waitFor(() => stepsGate.queued === 1, { timeoutMs: 15_000, description: `decision ${released + 1} running its step` });
        stepsGate.releaseOne();
      }
      for (const id of ids) expect(await client.awaitWorkflow(APP, environment, id, { timeoutMs: 15_000 })).toMatchObject({ state: 'COMPLETED' });
      expect(stepsGate.mostAtOnce).toBe(1);
    } finally {
      stepsGate.releaseAll();
      await w.shutdown();
      await running;
    }
  });

  it('without decisionConcurrency the three decisions run side by side (the bound above is the option, not chance)', async () => {
    const environment = 'slots-default';
    const ids = await Promise.all([0, 1, 2].map((i) => client.dispatchWorkflow({ appId: APP, environment, name: 'Stepping', input: [i] })));
    stepsGate.mostAtOnce = 0;
    const w = worker(environment, { concurrency: 10 });
    const running = w.run();
    try {
      await waitFor(() => stepsGate.queued === 3, { timeoutMs: 15_000, description: 'three decisions running their steps at once' });
      stepsGate.releaseAll();
      for (const id of ids) expect(await client.awaitWorkflow(APP, environment, id, { timeoutMs: 15_000 })).toMatchObject({ state: 'COMPLETED' });
      expect(stepsGate.mostAtOnce).toBe(3);
    } finally {
      stepsGate.releaseAll();
      await w.shutdown();
      await running;
    }
  });
});

describe('slot options', () => {
  it.each([
    [{ concurrency: 0 }, 'concurrency'],
    [{ decisionConcurrency: 0 }, 'decisionConcurrency'],
    [{ decisionConcurrency: 2.5 }, 'decisionConcurrency'],
    [{ concurrency: Number.NaN }, 'concurrency'],
  ])('a Worker with %j is refused at construction, naming the option', (options, name) => {
    expect(() => new Worker({ url: 'http://localhost:1', token: 't', appId: APP, environment: 'x', ...options })).toThrow(new TypeError(`${name} must be a whole number of at least 1, not ${String(Object.values(options)[0])}`));
  });
});

describe('baton worker --decision-concurrency', () => {
  const baton = (...args: string[]) =>
    spawnSync(process.execPath, [join(process.cwd(), 'dist/src/cli/baton.js'), 'worker', 'dist/test/support/fixtures/workflows.js', '--url', service.url, '--token', service.token, '--app', APP, '--env', 'cli', ...args], {
      encoding: 'utf8',
      timeout: 20_000,
    });

  it.each([
    [['--decision-concurrency', '0'], '--decision-concurrency'],
    [['--concurrency', 'ten'], '--concurrency'],
    [['--decision-concurrency', '2.5'], '--decision-concurrency'],
  ])('%j exits 2 naming the flag, before it polls', (args, flag) => {
    const run = baton(...args);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(`baton worker: ${flag} must be a whole number`);
  });
});
