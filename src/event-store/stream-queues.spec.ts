import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scheduleDecider } from '../schedules/domain/schedule.decider.js';
import { SchedulesReadModel } from '../schedules/schedules.read-model.js';
import { ConflictError } from '../shared/errors.js';
import { workflowDecider } from '../workflows/domain/workflow.decider.js';
import type { EventStore, ReadStreamOptions, RecordedEvent } from './event-store.port.js';
import { SqliteEventStore } from './sqlite/sqlite-event-store.js';
import { readLatestRun } from './read-run.js';
import { StreamQueues } from './stream-queues.js';

const context = { actor: 'test', appId: 'demo', environment: 'test', correlationId: 'c' };

/** The real SQLite store, counting the events every read returns and the appends. */
function countingStore(): { store: EventStore; read: () => number; appends: () => number; close: () => Promise<void> } {
  const inner = new SqliteEventStore(join(mkdtempSync(join(tmpdir(), 'baton-queues-')), 'q.db'));
  let read = 0;
  let appends = 0;
  const store = Object.create(inner) as EventStore;
  store.readStream = async (streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> => {
    const events = await inner.readStream(streamId, options);
    read += events.length;
    return events;
  };
  store.append = (...args: Parameters<EventStore['append']>) => {
    appends++;
    return inner.append(...args);
  };
  return { store, read: () => read, appends: () => appends, close: () => inner.close() };
}

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

const dispatch = (now: number) => ({
  type: 'DispatchWorkflow' as const,
  workflowId: '0190c4f4-0000-7000-8000-000000000001',
  appId: 'demo',
  environment: 'test',
  name: 'W',
  tag: null,
  input: [],
  now,
});

describe('StreamQueues', () => {
  it('decides commands that arrive together in one append, in order, each with its own outcome', async () => {
    const counting = countingStore();
    close = counting.close;
    const queues = new StreamQueues(counting.store);
    await queues.run('workflow-a', workflowDecider, dispatch(0), context);
    const before = counting.appends();
    const results = await Promise.allSettled([
      queues.run('workflow-a', workflowDecider, { type: 'PauseWorkflow' }, context),
      queues.run('workflow-a', workflowDecider, { type: 'PauseWorkflow' }, context),
      queues.run('workflow-a', workflowDecider, { type: 'StartDecision', decisionId: 'd', workerId: 'w', workflows: ['W'], now: 0, leaseMs: 1 }, context),
      queues.run('workflow-a', workflowDecider, { type: 'ResumeWorkflow' }, context),
    ]);
    // The first command started an append alone; the three that waited for it went in one more.
    expect(counting.appends() - before).toBeLessThanOrEqual(2);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value.events.map((e) => e.type) : (r.reason as Error).constructor.name))).toEqual([
      ['WorkflowPaused'],
      [],
      'ConflictError',
      ['WorkflowResumed'],
    ]);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
    const stored = await counting.store.readStream('workflow-a');
    expect(stored.map((e) => e.type)).toEqual(['WorkflowDispatched', 'WorkflowPaused', 'WorkflowResumed']);
  });

  it('reads only what another writer appended after its cached revision, then decides again', async () => {
    const counting = countingStore();
    close = counting.close;
    const queues = new StreamQueues(counting.store);
    const other = new StreamQueues(counting.store);
    await queues.run('workflow-b', workflowDecider, dispatch(0), context);
    for (let i = 0; i < 50; i++) await queues.run('workflow-b', workflowDecider, { type: 'DeliverEvent', name: 'e', data: [i] }, context);
    await other.run('workflow-b', workflowDecider, { type: 'PauseWorkflow' }, context);
    const read = counting.read();
    const result = await queues.run('workflow-b', workflowDecider, { type: 'ResumeWorkflow' }, context);
    expect(result.events.map((e) => e.type)).toEqual(['WorkflowResumed']);
    // One read, of the one event the other writer appended.
    expect(counting.read() - read).toBe(1);
  });

  it('fires a schedule every five minutes of a simulated week at a flat cost: no re-read of its history', async () => {
    const counting = countingStore();
    close = counting.close;
    const queues = new StreamQueues(counting.store);
    const start = Date.parse('2026-01-05T00:00:00Z');
    await queues.run(
      'schedule-s',
      scheduleDecider,
      {
        type: 'CreateSchedule',
        scheduleId: 's',
        appId: 'demo',
        environment: 'test',
        kind: 'workflow',
        name: 'W',
        input: [],
        tag: null,
        cron: '*/5 * * * *',
        timezone: null,
        overlapPolicy: 'allow',
        catchUpWindowMs: 60_000,
        now: start,
      } as never,
      context,
    );
    const costs: Array<{ read: number; appended: number }> = [];
    const firings = (7 * 24 * 60) / 5;
    for (let m = 1; m <= firings; m++) {
      const read = counting.read();
      const result = await queues.run('schedule-s', scheduleDecider, { type: 'FireDue', now: start + m * 300_000, previousRunning: false }, context);
      costs.push({ read: counting.read() - read, appended: result.events.length });
    }
    const firstDay = costs.slice(0, 500);
    const lastDay = costs.slice(-500);
    expect(firstDay.every((c) => c.read === 0 && c.appended === 1)).toBe(true);
    expect(lastDay.every((c) => c.read === 0 && c.appended === 1)).toBe(true);
    expect(queues.statistics.loads).toBe(1);
  }, 120_000);

  it('loads a schedule that fired thousands of times from its read-model snapshot: only the events after it are read', async () => {
    const counting = countingStore();
    close = counting.close;
    const writer = new StreamQueues(counting.store);
    const start = Date.parse('2026-01-05T00:00:00Z');
    const create = {
      type: 'CreateSchedule',
      scheduleId: 's',
      appId: 'demo',
      environment: 'test',
      kind: 'task',
      name: 'T',
      input: [],
      tag: null,
      cron: '* * * * *',
      timezone: null,
      overlapPolicy: 'allow',
      catchUpWindowMs: 60_000,
      now: start,
    };
    await writer.run('schedule-s', scheduleDecider, create as never, context);
    const firings = 3_000;
    for (let m = 1; m <= firings; m++) await writer.run('schedule-s', scheduleDecider, { type: 'FireDue', now: start + m * 60_000, previousRunning: false }, context);
    const history = await counting.store.readStream('schedule-s');
    expect(history).toHaveLength(firings + 1);
    // The read model as the service keeps it, folded up to `upTo` events of the stream.
    const modelUpTo = (upTo: number) => {
      const model = new SchedulesReadModel();
      for (const event of history.slice(0, upTo)) model.apply(event);
      return model;
    };
    const pause = { type: 'PauseSchedule' as const, scheduleId: 's', appId: 'demo', environment: 'test', now: start + (firings + 1) * 60_000 };

    // Without a snapshot, a cold load reads every firing.
    const plain = new StreamQueues(counting.store);
    let read = counting.read();
    const expected = await plain.run('schedule-s', scheduleDecider, { type: 'FireDue', now: start + firings * 60_000, previousRunning: false }, context);
    expect(expected.events).toEqual([]);
    expect(counting.read() - read).toBe(firings + 1);

    // From a snapshot at the head: nothing but the look after it (empty), and the same state.
    const cold = new StreamQueues(counting.store);
    const model = modelUpTo(history.length);
    cold.useSnapshots(scheduleDecider, (streamId) => {
      const view = model.getById(streamId.slice('schedule-'.length));
      return view && { state: view.state, revision: view.revision };
    });
    read = counting.read();
    const paused = await cold.run('schedule-s', scheduleDecider, pause, context);
    expect(paused.events.map((e) => e.type)).toEqual(['SchedulePaused']);
    expect(counting.read() - read).toBe(0);
    expect(paused.before).toEqual(expected.state);
    expect(cold.statistics).toMatchObject({ loads: 1, snapshotLoads: 1, eventsRead: 0 });

    // A snapshot that lags the store (its projection behind): the events after it are read and folded.
    const lagging = new StreamQueues(counting.store);
    const behind = modelUpTo(history.length - 10);
    lagging.useSnapshots(scheduleDecider, (streamId) => {
      const view = behind.getById(streamId.slice('schedule-'.length));
      return view && { state: view.state, revision: view.revision };
    });
    read = counting.read();
    const resumed = await lagging.run('schedule-s', scheduleDecider, { ...pause, type: 'ResumeSchedule', now: pause.now + 1 }, context);
    expect(resumed.events.map((e) => e.type)).toEqual(['ScheduleResumed']);
    // The ten firings it lacked and the pause, read once, when it loaded.
    expect(counting.read() - read).toBe(11);
    expect((resumed.before as { status: string; firedCount: number }).status).toBe('paused');
    expect((resumed.before as { firedCount: number }).firedCount).toBe(firings);
    expect((await counting.store.readStream('schedule-s')).map((e) => e.type).slice(-2)).toEqual(['SchedulePaused', 'ScheduleResumed']);
  }, 120_000);

  it('a dispatch assumed new reads nothing, and a stream that did exist is read once and decided again', async () => {
    const counting = countingStore();
    close = counting.close;
    const first = new StreamQueues(counting.store);
    const second = new StreamQueues(counting.store);
    const created = await first.run('workflow-d', workflowDecider, dispatch(0), context, { likelyNew: true });
    expect(created.events).toHaveLength(1);
    expect(counting.read()).toBe(0);
    const again = await second.run('workflow-d', workflowDecider, dispatch(1), context, { likelyNew: true });
    expect(again.events).toEqual([]);
    expect(counting.read()).toBe(1);
    expect(await counting.store.readStream('workflow-d')).toHaveLength(1);
  });

  it('skips events of a type it does not know when it loads a stream', async () => {
    const counting = countingStore();
    close = counting.close;
    await counting.store.append('workflow-c', [{ id: crypto.randomUUID(), type: 'WorkflowDispatched', data: { ...dispatch(0), dispatchedAt: new Date(0).toISOString(), parent: null, scheduleId: null } }], 'no_stream');
    await counting.store.append('workflow-c', [{ id: crypto.randomUUID(), type: 'FromTheFuture', data: {} }], 0n);
    const known = new Set(['WorkflowDispatched', 'WorkflowPaused']);
    const queues = new StreamQueues(counting.store, { prepare: (e) => (known.has(e.type) ? e : null) });
    const result = await queues.run('workflow-c', workflowDecider, { type: 'PauseWorkflow' }, context);
    expect(result.events.map((e) => e.type)).toEqual(['WorkflowPaused']);
    expect((await counting.store.readStream('workflow-c')).map((e) => e.revision)).toEqual([0n, 1n, 2n]);
  });
});

describe('readLatestRun', () => {
  const resets = new Set(['WorkflowContinuedAsNew']);
  const events = (type: string, n: number) => Array.from({ length: n }, () => ({ id: crypto.randomUUID(), type, data: {} }));

  it("reads a stream's last run from the end, a page at a time: what it reads is the run, not the history before it", async () => {
    const counting = countingStore();
    close = counting.close;
    const stream = 'workflow-runs';
    await counting.store.append(stream, [...events('WorkflowDispatched', 1), ...events('Filler', 1_500)]);
    await counting.store.append(stream, [...events('WorkflowContinuedAsNew', 1), ...events('Filler', 1_000)]);
    await counting.store.append(stream, [...events('WorkflowContinuedAsNew', 1), ...events('Filler', 700)]);
    const run = await readLatestRun(counting.store, stream, resets, 512);
    expect(run.map((e) => e.type)).toEqual(['WorkflowContinuedAsNew', ...Array(700).fill('Filler')]);
    expect(run.map((e) => Number(e.revision))).toEqual(Array.from({ length: 701 }, (_, i) => 2_502 + i));
    // Two pages of 512 reach the run's start (701 events): 1,024 events read of the stream's 3,203.
    expect(counting.read()).toBe(1_024);
  });

  it('reads a stream that never reset whole, and a missing one as empty', async () => {
    const counting = countingStore();
    close = counting.close;
    await counting.store.append('workflow-one', [...events('WorkflowDispatched', 1), ...events('Filler', 600)]);
    expect(await readLatestRun(counting.store, 'workflow-one', resets, 512)).toHaveLength(601);
    expect(await readLatestRun(counting.store, 'workflow-none', resets, 512)).toEqual([]);
  });
});
