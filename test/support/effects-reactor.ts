/**
 * The effects reactor without Nest, for its unit specs: a temporary SQLite file is the store and
 * the reactor reads it through its own subscription, as in a Baton process; what a
 * `TaskDispatchRequested` effect does is the spec's own `TaskDispatcher`.
 */
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeciderRunner } from '../../src/event-store/decider-runner.js';
import { EventRegistry } from '../../src/event-store/event-registry.js';
import type { ProjectionRunner } from '../../src/event-store/projection-runner.js';
import { ReadModelDb } from '../../src/event-store/read-model-db.js';
import { SqliteEventStore } from '../../src/event-store/sqlite/sqlite-event-store.js';
import type { ScheduleCreator } from '../../src/schedules/commands/create-schedule.js';
import { uuidv7 } from '../../src/shared/ids.js';
import type { TaskDispatcher } from '../../src/tasks/commands/dispatch-task/dispatch-task.js';
import { EffectsReactor } from '../../src/workers/effects.reactor.js';
import type { WorkflowDispatcher } from '../../src/workflows/commands/dispatch-workflow/dispatch-workflow.js';
import type { SelectorActions } from '../../src/workflows/commands/selector-actions.js';
import { PendingChildren } from '../../src/workflows/pending-children.js';
import type { WorkflowsReadModel } from '../../src/workflows/workflows.read-model.js';
import { waitFor } from './wait-for.js';

/** What a task effect does in a spec: the effect's app and its command. */
export type TaskEffect = (context: { appId: string }, command: { taskId: string }) => Promise<void>;

/**
 * For a describe block: Nest's logger off (a warn line per failed attempt, hundreds in a spec),
 * and the steps each test pushes on the returned list run after it, last first.
 */
export function reactorSpecHooks(): Array<() => Promise<void> | void> {
  const cleanup: Array<() => Promise<void> | void> = [];
  beforeAll(() => Logger.overrideLogger(false));
  afterAll(() => Logger.overrideLogger(['log', 'error', 'warn', 'debug', 'verbose', 'fatal']));
  afterEach(async () => {
    for (const step of cleanup.reverse()) await step();
    cleanup.length = 0;
  });
  return cleanup;
}

/** Polls `check` every 10 ms until it holds; fails after `timeoutMs`. */
export async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  await waitFor(check, { timeoutMs, description: what });
}

/**
 * A reactor on a fresh store (not started: set its `limits`, then `onApplicationBootstrap()`).
 * Each step of taking it down is pushed on `cleanup`, to run in reverse order.
 */
export function reactorOnTempStore(effect: TaskEffect, cleanup: Array<() => Promise<void> | void>) {
  const dir = mkdtempSync(join(tmpdir(), 'baton-effects-spec-'));
  const store = new SqliteEventStore(join(dir, 'baton.db'));
  const rm = new ReadModelDb(join(dir, 'baton.rm.db'));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanup.push(() => void rm.db.close());
  cleanup.push(() => store.close());
  const tasks = { dispatch: effect } as unknown as TaskDispatcher;
  const children = new PendingChildren();
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
    children,
  );
  cleanup.push(() => reactor.onApplicationShutdown());
  /** `n` task effects of `appId` (task ids `${prefix}-${i}` from `from`), 500 events an append; `argBytes` of argument each. */
  const dispatchMany = async (appId: string, prefix: string, n: number, from = 0, argBytes = 0) => {
    for (let i = from; i < from + n; i += 500) {
      const events = Array.from({ length: Math.min(500, from + n - i) }, (_, k) => ({
        id: uuidv7(),
        type: 'TaskDispatchRequested',
        data: { seq: i + k, taskId: `${prefix}-${i + k}`, name: 'T', args: argBytes ? ['x'.repeat(argBytes)] : [] },
        metadata: { appId, environment: 'prod' },
      }));
      await store.append(`workflow-${uuidv7()}`, events);
    }
  };
  /** One task effect of `appId`, in an append of its own. */
  const dispatchTask = (appId: string, taskId: string) =>
    store.append(`workflow-${uuidv7()}`, [
      { id: uuidv7(), type: 'TaskDispatchRequested', data: { seq: 0, taskId, name: 'T', args: [] }, metadata: { appId, environment: 'prod' } },
    ]);
  return { store, rm, reactor, children, dispatchMany, dispatchTask };
}
