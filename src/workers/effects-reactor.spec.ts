/**
 * The effects reactor when effects keep failing: a temporary SQLite file is the store and the
 * reactor reads it through its own subscription, as in a Baton process; what an effect does is
 * replaced by a dispatcher that fails for one app (a fault that is not a domain error, retried).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeciderRunner } from '../event-store/decider-runner.js';
import { EventRegistry } from '../event-store/event-registry.js';
import type { ProjectionRunner } from '../event-store/projection-runner.js';
import { ReadModelDb } from '../event-store/read-model-db.js';
import { SqliteEventStore } from '../event-store/sqlite/sqlite-event-store.js';
import type { ScheduleCreator } from '../schedules/commands/create-schedule.js';
import { uuidv7 } from '../shared/ids.js';
import type { TaskDispatcher } from '../tasks/commands/dispatch-task/dispatch-task.js';
import type { WorkflowDispatcher } from '../workflows/commands/dispatch-workflow/dispatch-workflow.js';
import type { SelectorActions } from '../workflows/commands/selector-actions.js';
import type { WorkflowsReadModel } from '../workflows/workflows.read-model.js';
import { EffectsReactor } from './effects.reactor.js';

/** Polls `check` every 10 ms until it holds; fails after `timeoutMs`. */
async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('EffectsReactor, effects that keep failing', () => {
  // A warn line per failed attempt: hundreds here.
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn', 'debug', 'verbose', 'fatal']));
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const step of cleanup.reverse()) await step();
    cleanup.length = 0;
  });

  /** `failAfterMs`: how long a failing attempt takes before it throws. */
  async function setUp(failAfterMs = 0) {
    const dir = mkdtempSync(join(tmpdir(), 'baton-effects-spec-'));
    const store = new SqliteEventStore(join(dir, 'baton.db'));
    const rm = new ReadModelDb(join(dir, 'baton.rm.db'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    cleanup.push(() => void rm.db.close());
    cleanup.push(() => store.close());
    const failing = new Set<string>(['bad']);
    const carriedOut: string[] = [];
    const attempted = new Map<string, number>();
    let attempts = 0;
    /** Attempts after a failed one (retries) under way, and the most at once, per app. */
    const retrying = new Map<string, number>();
    const mostRetrying = new Map<string, number>();
    const tasks = {
      dispatch: async (context: { appId: string }, command: { taskId: string }) => {
        attempts++;
        const retry = attempted.has(command.taskId);
        attempted.set(command.taskId, (attempted.get(command.taskId) ?? 0) + 1);
        const app = context.appId;
        if (retry) {
          retrying.set(app, (retrying.get(app) ?? 0) + 1);
          mostRetrying.set(app, Math.max(mostRetrying.get(app) ?? 0, retrying.get(app)!));
        }
        try {
          // A fault, not a domain error (a BatonError): the reactor retries it.
          if (failing.has(app)) {
            if (failAfterMs > 0) await new Promise((resolve) => setTimeout(resolve, failAfterMs));
            throw new TypeError(`fault in ${app}`);
          }
          carriedOut.push(command.taskId);
        } finally {
          if (retry) retrying.set(app, retrying.get(app)! - 1);
        }
      },
    } as unknown as TaskDispatcher;
    const projections = { onLive: (listener: () => void) => listener(), waitFor: async () => {} } as unknown as ProjectionRunner;
    const reactor = new EffectsReactor(
      {} as DeciderRunner,
      {} as WorkflowDispatcher,
      tasks,
      {} as SelectorActions,
      projections,
      {} as WorkflowsReadModel,
      new EventRegistry(),
      store,
      rm,
      {} as ScheduleCreator,
    );
    cleanup.push(() => reactor.onApplicationShutdown());
    const dispatchTask = (appId: string, taskId: string) =>
      store.append(`workflow-${uuidv7()}`, [
        { id: uuidv7(), type: 'TaskDispatchRequested', data: { seq: 0, taskId, name: 'T', args: [] }, metadata: { appId, environment: 'prod' } },
      ]);
    return { store, reactor, failing, carriedOut, attempted, mostRetrying, dispatchTask, attempts: () => attempts };
  }

  it("carries out another app's effects while more effects of a failing app than there are slots back off; all are carried out once the fault is gone", async () => {
    const { store, reactor, failing, carriedOut, attempted, dispatchTask, attempts } = await setUp();
    // More than the 256 slots: before, each failing effect held its slot through its backoff, so
    // these held them all and the good app's effect never started.
    for (let i = 0; i < 300; i++) await dispatchTask('bad', `bad-${i}`);
    await dispatchTask('good', 'good-0');
    const before = (await store.headPosition())!;

    reactor.onApplicationBootstrap();
    await until(() => carriedOut.includes('good-0'), "the good app's effect carried out");
    expect(reactor.retries).toBeGreaterThan(0);
    expect(reactor.held).toBe(300);
    const byState = reactor.heldByState;
    expect(byState.queued + byState.running + byState.backingOff).toBe(300);
    expect(reactor.checkpoint).toBeLessThan(before);
    await dispatchTask('good', 'good-1');
    await until(() => carriedOut.includes('good-1'), "the good app's second effect carried out");
    const last = (await store.headPosition())!;

    failing.clear();
    await until(() => carriedOut.length === 302, 'every effect carried out', 20_000);
    expect(new Set(carriedOut).size).toBe(302);
    expect(reactor.held).toBe(0);
    expect(reactor.backingOff).toBe(0);
    await until(() => reactor.checkpoint === last, 'the checkpoint past the last effect');
    // Only the effects that failed were attempted more than once.
    expect(attempts() - 302).toBe(reactor.retries);
  }, 30_000);

  it("attempts at most 16 of a failing app's retries at once, however many failed together", async () => {
    const { reactor, failing, carriedOut, mostRetrying, dispatchTask } = await setUp(50);
    for (let i = 0; i < 300; i++) await dispatchTask('bad', `bad-${i}`);
    reactor.onApplicationBootstrap();
    // Up to 256 fail together in the first round; their retries come back within the same few
    // hundred milliseconds, and each takes 50 ms to fail again.
    await until(() => reactor.retries >= 1_000, 'a thousand retries', 20_000);
    expect(mostRetrying.get('bad')).toBeLessThanOrEqual(16);
    expect(mostRetrying.get('bad')).toBeGreaterThan(1);
    await dispatchTask('good', 'good-0');
    await until(() => carriedOut.includes('good-0'), "the good app's effect carried out");
    failing.clear();
    await until(() => carriedOut.length === 301, 'every effect carried out', 20_000);
  }, 40_000);
});
