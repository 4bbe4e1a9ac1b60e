/**
 * The scheduler's timing logic without Nest: a ManualClock drives time, a temporary SQLite file
 * is the store, the real deciders dispatch. Each "instance" has its own read model fed by its
 * own subscription, as a Baton process does.
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CommandContext, decideAndAppend } from '../event-store/decider-runner.js';
import type { EventStore, RecordedEvent, Subscription } from '../event-store/event-store.port.js';
import { SqliteEventStore } from '../event-store/sqlite/sqlite-event-store.js';
import { ManualClock } from '../shared/clock.js';
import { uuidv7 } from '../shared/ids.js';
import { taskDecider } from '../tasks/domain/task.decider.js';
import { workflowDecider } from '../workflows/domain/workflow.decider.js';
import { occurrenceDispatchId } from './domain/dispatch-id.js';
import { OverlapPolicy, ScheduleKind, ScheduleSpec, scheduleDecider } from './domain/schedule.decider.js';
import { Scheduler } from './scheduler.js';
import { SchedulesReadModel } from './schedules.read-model.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-scheduler-spec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const T0 = Date.parse('2026-01-01T00:00:00.300Z');
const context: CommandContext = { actor: 'test', appId: 'demo', environment: 'prod', correlationId: 'c' };
const iso = (ms: number) => new Date(ms).toISOString();

/** Yields to the event loop (no timer): lets pending I/O callbacks and immediates run. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

interface Options {
  /** Fails the dispatch while it returns true. */
  failDispatch?: (dispatchId: string) => boolean;
  recoverAfterMs?: number;
}

/** One Baton "process": a read model fed from the store's log, and a scheduler over it. */
class Instance {
  readonly model = new SchedulesReadModel();
  readonly scheduler: Scheduler;
  readonly dispatched: string[] = [];
  private subscription: Subscription | undefined;
  private position = -1n;

  constructor(
    readonly store: EventStore,
    readonly clock: ManualClock,
    readonly world: World,
    options: Options = {},
  ) {
    this.scheduler = new Scheduler({
      clock,
      decide: (streamId, decider, command, ctx) => decideAndAppend(store, streamId, decider, command, ctx),
      model: this.model,
      recoverAfterMs: options.recoverAfterMs,
      dispatch: async (spec, dispatchId, ctx) => {
        if (options.failDispatch?.(dispatchId)) throw new Error('dispatch failed (test)');
        this.dispatched.push(dispatchId);
        await dispatchFor(store, spec, dispatchId, ctx, clock.now());
        if (spec.kind === 'workflow') world.running.add(dispatchId);
      },
      isRunning: (_spec, workflowId) => world.running.has(workflowId),
      caughtUp: (position) => this.caughtUp(position),
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.subscription = this.store.subscribe(
        (event: RecordedEvent) => {
          this.model.apply(event);
          this.position = event.position;
        },
        { onCaughtUp: resolve, onError: reject },
      );
    });
    this.scheduler.start();
  }

  async caughtUp(position: bigint): Promise<void> {
    while (this.position < position) await turn();
  }

  async stop(): Promise<void> {
    this.scheduler.stop();
    await this.subscription?.close();
  }
}

/** What the test controls: which workflow instances are still running. */
class World {
  readonly running = new Set<string>();
}

async function dispatchFor(store: EventStore, spec: ScheduleSpec, id: string, ctx: CommandContext, now: number): Promise<void> {
  const base = { appId: spec.appId, environment: spec.environment, name: spec.name, scheduleId: spec.scheduleId, now };
  if (spec.kind === 'task') {
    await decideAndAppend(store, `task-${id}`, taskDecider, { type: 'DispatchTask', taskId: id, args: spec.input, ...base }, ctx);
  } else {
    await decideAndAppend(store, `workflow-${id}`, workflowDecider, { type: 'DispatchWorkflow', workflowId: id, input: spec.input, tag: spec.tag, ...base }, ctx);
  }
}

let stores: EventStore[] = [];
let instances: Instance[] = [];

afterEach(async () => {
  for (const instance of instances) await instance.stop();
  for (const store of stores) await store.close();
  instances = [];
  stores = [];
});

function openStore(file: string): EventStore {
  const store = new SqliteEventStore(file, { pollIntervalMs: 5 });
  stores.push(store);
  return store;
}

async function startInstance(store: EventStore, clock: ManualClock, world: World, options?: Options): Promise<Instance> {
  const instance = new Instance(store, clock, world, options);
  instances.push(instance);
  await instance.start();
  return instance;
}

async function createSchedule(
  store: EventStore,
  clock: ManualClock,
  fields: { cron: string; kind?: ScheduleKind; overlapPolicy?: OverlapPolicy; catchUpWindowMs?: number; timezone?: string },
): Promise<string> {
  const scheduleId = uuidv7(clock.now());
  await decideAndAppend(
    store,
    `schedule-${scheduleId}`,
    scheduleDecider,
    {
      type: 'CreateSchedule',
      scheduleId,
      appId: 'demo',
      environment: 'prod',
      kind: fields.kind ?? 'task',
      name: 'Report',
      input: ['weekly'],
      tag: null,
      cron: fields.cron,
      timezone: fields.timezone ?? 'UTC',
      overlapPolicy: fields.overlapPolicy ?? 'allow',
      catchUpWindowMs: fields.catchUpWindowMs ?? 60_000,
      now: clock.now(),
    },
    context,
  );
  return scheduleId;
}

/** Until every instance is idle and has read the whole log, and that stays so for a turn. */
async function settle(...group: Instance[]): Promise<void> {
  const store = group[0].store;
  for (let stable = 0; stable < 3; ) {
    const head = (await store.headPosition()) ?? -1n;
    await Promise.all(group.map((i) => i.scheduler.whenIdle()));
    await Promise.all(group.map((i) => i.caughtUp(head)));
    await turn();
    stable = ((await store.headPosition()) ?? -1n) === head ? stable + 1 : 0;
  }
}

async function step(clock: ManualClock, ms: number, ...group: Instance[]): Promise<void> {
  clock.advance(ms);
  await settle(...group);
}

async function history(store: EventStore, scheduleId: string): Promise<Array<{ type: string; data: any }>> {
  return (await store.readStream(`schedule-${scheduleId}`)).map((e) => ({ type: e.type, data: e.data as any }));
}

/** Dispatches (TaskDispatched / WorkflowDispatched) in the log, by id. */
async function dispatches(store: EventStore): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (let after: bigint | undefined; ; ) {
    const page = await store.readAll({ after, maxCount: 1000 });
    if (page.length === 0) return counts;
    for (const e of page) {
      if (e.type === 'TaskDispatched' || e.type === 'WorkflowDispatched') {
        const id = e.streamId.slice(e.streamId.indexOf('-') + 1);
        counts.set(id, (counts.get(id) ?? 0) + 1);
      }
    }
    after = page[page.length - 1].position;
  }
}

const firedOccurrences = (events: Array<{ type: string; data: any }>) => events.filter((e) => e.type === 'ScheduleFired').map((e) => e.data.occurrence);

describe('Scheduler', () => {
  it('fires every occurrence once, at its time, with the id derived from the occurrence', async () => {
    const store = openStore(join(dir, 'basic.db'));
    const clock = new ManualClock(T0);
    const a = await startInstance(store, clock, new World());
    const id = await createSchedule(store, clock, { cron: '*/1 * * * * * *' });
    await settle(a);
    expect(a.scheduler.dueAt(id)).toBe(Date.parse('2026-01-01T00:00:01Z'));

    await step(clock, 699, a);
    expect(a.dispatched).toEqual([]);
    for (let i = 0; i < 5; i++) await step(clock, 1000, a);

    const expected = [1, 2, 3, 4, 5].map((s) => Date.parse(`2026-01-01T00:00:0${s}Z`));
    expect(firedOccurrences(await history(store, id))).toEqual(expected.map(iso));
    expect(a.dispatched).toEqual(expected.map((occurrence) => occurrenceDispatchId(id, occurrence)));
    expect([...(await dispatches(store)).values()]).toEqual([1, 1, 1, 1, 1]);
    expect([...a.model.awaiting()]).toEqual([]);
  });

  it('after a downtime, fires the most recent missed occurrence within the window once, and records the older ones as one skip', async () => {
    const file = join(dir, 'catch-up.db');
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:30Z'));
    const world = new World();
    const first = await startInstance(openStore(file), clock, world);
    const id = await createSchedule(first.store, clock, { cron: '* * * * *', catchUpWindowMs: 120_000 });
    await step(clock, 60_000, first);
    expect(firedOccurrences(await history(first.store, id))).toEqual(['2026-01-01T00:01:00.000Z']);
    await first.stop();

    // Down from 00:01:30 to 00:06:30: occurrences 00:02 … 00:06 are missed.
    clock.advance(5 * 60_000);
    const second = await startInstance(openStore(file), clock, world);
    await settle(second);
    const events = await history(second.store, id);
    expect(events.slice(2)).toEqual([
      {
        type: 'ScheduleOccurrenceSkipped',
        data: {
          occurrence: '2026-01-01T00:05:00.000Z',
          reason: 'missed',
          count: 4,
          countCapped: false,
          firstOccurrence: '2026-01-01T00:02:00.000Z',
          skippedAt: '2026-01-01T00:06:30.000Z',
        },
      },
      {
        type: 'ScheduleFired',
        data: { occurrence: '2026-01-01T00:06:00.000Z', dispatchId: occurrenceDispatchId(id, Date.parse('2026-01-01T00:06:00Z')), firedAt: '2026-01-01T00:06:30.000Z' },
      },
    ]);
    expect(second.dispatched).toHaveLength(1);

    // And then on time again.
    await step(clock, 30_000, second);
    expect(firedOccurrences(await history(second.store, id)).slice(-1)).toEqual(['2026-01-01T00:07:00.000Z']);
  });

  it('outside the window, every missed occurrence is skipped and none fires', async () => {
    const file = join(dir, 'outside-window.db');
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:30Z'));
    const world = new World();
    const first = await startInstance(openStore(file), clock, world);
    const id = await createSchedule(first.store, clock, { cron: '* * * * *', catchUpWindowMs: 30_000 });
    await first.stop();

    clock.advance(3 * 60_000 + 15_000); // 00:03:45: the latest missed (00:03) is 45 s old
    const second = await startInstance(openStore(file), clock, world);
    await settle(second);
    expect((await history(second.store, id)).slice(1)).toEqual([
      {
        type: 'ScheduleOccurrenceSkipped',
        data: {
          occurrence: '2026-01-01T00:03:00.000Z',
          reason: 'missed',
          count: 3,
          countCapped: false,
          firstOccurrence: '2026-01-01T00:01:00.000Z',
          skippedAt: '2026-01-01T00:03:45.000Z',
        },
      },
    ]);
    expect(second.dispatched).toEqual([]);
  });

  it('SKIP: an occurrence is skipped while the previous workflow runs, and fires again once it ended', async () => {
    const store = openStore(join(dir, 'skip.db'));
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:30Z'));
    const world = new World();
    const a = await startInstance(store, clock, world);
    const id = await createSchedule(store, clock, { cron: '* * * * *', kind: 'workflow', overlapPolicy: 'skip' });
    await step(clock, 60_000, a); // 00:01:30: fired 00:01, still running
    await step(clock, 60_000, a); // 00:02: skipped
    const [running] = a.dispatched;
    world.running.delete(running);
    await store.append(`workflow-${running}`, [{ id: uuidv7(), type: 'WorkflowCompleted', data: { result: null } }]);
    await step(clock, 60_000, a); // 00:03: fires

    const events = await history(store, id);
    expect(events.slice(1).map((e) => [e.type, e.data.occurrence, e.data.reason])).toEqual([
      ['ScheduleFired', '2026-01-01T00:01:00.000Z', undefined],
      ['ScheduleOccurrenceSkipped', '2026-01-01T00:02:00.000Z', 'overlap'],
      ['ScheduleFired', '2026-01-01T00:03:00.000Z', undefined],
    ]);
  });

  it('BUFFER_ONE: keeps one occurrence while the previous workflow runs and fires it as soon as that one ends', async () => {
    const store = openStore(join(dir, 'buffer.db'));
    const clock = new ManualClock(Date.parse('2026-01-01T00:00:30Z'));
    const world = new World();
    const a = await startInstance(store, clock, world);
    const id = await createSchedule(store, clock, { cron: '* * * * *', kind: 'workflow', overlapPolicy: 'buffer_one' });
    await step(clock, 60_000, a); // 00:01:30: fired 00:01
    await step(clock, 60_000, a); // 00:02:30: 00:02 kept
    await step(clock, 60_000, a); // 00:03:30: 00:03 skipped, the buffer is full
    expect(a.scheduler.dueAt(id)).toBe(Date.parse('2026-01-01T00:04:00Z'));

    // The 00:01 instance ends at 00:03:30: the kept 00:02 occurrence fires at once, no clock step needed.
    const [running] = a.dispatched;
    world.running.delete(running);
    await store.append(`workflow-${running}`, [{ id: uuidv7(), type: 'WorkflowCompleted', data: { result: null } }]);
    await settle(a);

    const events = await history(store, id);
    expect(events.slice(1).map((e) => [e.type, e.data.occurrence, e.data.reason ?? null, e.data.firedAt ?? null])).toEqual([
      ['ScheduleFired', '2026-01-01T00:01:00.000Z', null, '2026-01-01T00:01:00.000Z'],
      ['ScheduleOccurrenceBuffered', '2026-01-01T00:02:00.000Z', null, null],
      ['ScheduleOccurrenceSkipped', '2026-01-01T00:03:00.000Z', 'overlap', null],
      ['ScheduleFired', '2026-01-01T00:02:00.000Z', null, '2026-01-01T00:03:30.000Z'],
    ]);
    expect(a.dispatched).toEqual([
      occurrenceDispatchId(id, Date.parse('2026-01-01T00:01:00Z')),
      occurrenceDispatchId(id, Date.parse('2026-01-01T00:02:00Z')),
    ]);
  });

  it('two instances racing on one store fire and dispatch every occurrence exactly once', async () => {
    const file = join(dir, 'race.db');
    const clock = new ManualClock(T0);
    const world = new World();
    const a = await startInstance(openStore(file), clock, world);
    const b = await startInstance(openStore(file), clock, world);
    const ids = [await createSchedule(a.store, clock, { cron: '*/1 * * * * * *' }), await createSchedule(b.store, clock, { cron: '*/2 * * * * * *' })];
    await settle(a, b);
    for (let i = 0; i < 30; i++) await step(clock, 1000, a, b);

    const counts = await dispatches(a.store);
    for (const [id, every] of [
      [ids[0], 1],
      [ids[1], 2],
    ] as const) {
      const occurrences = firedOccurrences(await history(a.store, id));
      expect(occurrences).toHaveLength(30 / every);
      expect(new Set(occurrences).size).toBe(occurrences.length);
      for (const occurrence of occurrences) expect(counts.get(occurrenceDispatchId(id, Date.parse(occurrence)))).toBe(1);
    }
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    // Both instances tried every occurrence; the store let one of them record each.
    expect(a.dispatched.length + b.dispatched.length).toBe(45);
    expect(new Set([...a.dispatched, ...b.dispatched]).size).toBe(45);
  });

  it('a fired occurrence whose dispatch was lost is dispatched again, with the same id: at the next start, or later by a live instance', async () => {
    const file = join(dir, 'recovery.db');
    const clock = new ManualClock(T0);
    const world = new World();
    let failing = true;
    const a = await startInstance(openStore(file), clock, world, { failDispatch: () => failing, recoverAfterMs: 10_000 });
    const id = await createSchedule(a.store, clock, { cron: '*/1 * * * * * *' });
    await step(clock, 1000, a);
    const occurrence = Date.parse('2026-01-01T00:00:01Z');
    expect(firedOccurrences(await history(a.store, id))).toEqual([iso(occurrence)]);
    expect((await dispatches(a.store)).size).toBe(0);
    await a.stop();

    // A new instance dispatches it at start.
    const b = await startInstance(openStore(file), clock, world);
    await settle(b);
    expect(b.dispatched).toEqual([occurrenceDispatchId(id, occurrence)]);
    expect([...(await dispatches(b.store)).entries()]).toEqual([[occurrenceDispatchId(id, occurrence), 1]]);
    await b.stop();

    // A live instance whose dispatch fails retries after recoverAfterMs.
    const c = await startInstance(openStore(file), clock, world, { failDispatch: () => failing, recoverAfterMs: 10_000 });
    await step(clock, 1000, c);
    const lost = firedOccurrences(await history(c.store, id)).at(-1)!;
    expect((await dispatches(c.store)).has(occurrenceDispatchId(id, Date.parse(lost)))).toBe(false);
    failing = false;
    for (let i = 0; i < 10; i++) await step(clock, 1000, c);
    const counts = await dispatches(c.store);
    expect(counts.get(occurrenceDispatchId(id, Date.parse(lost)))).toBe(1);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
  });

  it('a fired occurrence whose dispatch was lost is dispatched even once its schedule is deleted (which leaves memory)', async () => {
    const file = join(dir, 'recovery-deleted.db');
    const clock = new ManualClock(T0);
    const world = new World();
    let failing = true;
    const a = await startInstance(openStore(file), clock, world, { failDispatch: () => failing, recoverAfterMs: 10_000 });
    const id = await createSchedule(a.store, clock, { cron: '*/1 * * * * * *' });
    await step(clock, 1000, a);
    const lost = occurrenceDispatchId(id, Date.parse('2026-01-01T00:00:01Z'));
    await decideAndAppend(a.store, `schedule-${id}`, scheduleDecider, { type: 'DeleteSchedule', scheduleId: id, appId: 'demo', environment: 'prod', now: clock.now() }, context);
    await settle(a);
    expect(a.model.getById(id)).toBeUndefined();
    expect([...a.model.all()]).toEqual([]);
    expect([...a.model.awaiting()].map((e) => e.dispatchId)).toEqual([lost]);
    await a.stop();

    // At the next start.
    failing = false;
    const b = await startInstance(openStore(file), clock, world);
    await settle(b);
    expect(b.dispatched).toEqual([lost]);
    expect(b.model.held).toEqual({ schedules: 0, awaiting: 0, running: 0, nextFireAt: 0 });
    expect([...(await dispatches(b.store)).entries()]).toEqual([[lost, 1]]);
    expect(firedOccurrences(await history(b.store, id))).toHaveLength(1);
  });

  it('a paused schedule is not armed; a deleted one is dropped', async () => {
    const store = openStore(join(dir, 'pause.db'));
    const clock = new ManualClock(T0);
    const a = await startInstance(store, clock, new World());
    const id = await createSchedule(store, clock, { cron: '*/1 * * * * * *' });
    await settle(a);
    const ref = { scheduleId: id, appId: 'demo', environment: 'prod' };
    await decideAndAppend(store, `schedule-${id}`, scheduleDecider, { type: 'PauseSchedule', ...ref, now: clock.now() }, context);
    await settle(a);
    expect(a.scheduler.dueAt(id)).toBeUndefined();
    await step(clock, 3000, a);
    expect(a.dispatched).toEqual([]);
    await decideAndAppend(store, `schedule-${id}`, scheduleDecider, { type: 'ResumeSchedule', ...ref, now: clock.now() }, context);
    await settle(a);
    expect(a.scheduler.dueAt(id)).toBe(Date.parse('2026-01-01T00:00:04Z'));
    await step(clock, 1000, a);
    expect(a.dispatched).toHaveLength(1);
    await decideAndAppend(store, `schedule-${id}`, scheduleDecider, { type: 'DeleteSchedule', ...ref, now: clock.now() }, context);
    await settle(a);
    expect(a.scheduler.dueAt(id)).toBeUndefined();
    await step(clock, 3000, a);
    expect(a.dispatched).toHaveLength(1);
    expect(a.model.getById(id)).toBeUndefined();
    expect(a.model.held).toEqual({ schedules: 0, awaiting: 0, running: 0, nextFireAt: 0 });
  });
});
