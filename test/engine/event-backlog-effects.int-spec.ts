/**
 * The event backlog, with a real service and a real `baton worker` process: the effects
 * of a workflow's `select()` meeting a workflow with events kept back.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EVENTS_PER_DECISION } from '../../src/workflows/domain/workflow.decider.js';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { FixtureWorker, startWorker } from '../support/worker.js';
import { Engine, HistoryEntry, sendInOrder } from './engine-helpers.js';

const ENV = 'backlog-effects';
const MODULE = 'dist/test/support/fixtures/backlog-effects.js';
const MAX_QUEUED = 200;

let service: Service;
let engine: Engine;
let worker: FixtureWorker;

beforeAll(async () => {
  // A backlog bound of MAX_QUEUED (100,000 by default): the cap is met with a few hundred sends.
  service = await startService({ storeUrl: freshStoreUrl(), env: { RATE_LIMIT_PER_MINUTE: '0', MAX_QUEUED_EVENTS: String(MAX_QUEUED) } });
  engine = new Engine(service, ENV);
  worker = await startWorker({ url: service.url, token: service.token, environment: ENV, module: MODULE });
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await service?.stop();
});

/** `count` `update` events (data `[from + i, pad]`) to workflow `id`, `perRequest` aliased sends a request, in order. */
const sendMany = (id: string, from: number, count: number, pad = '', perRequest = 200) => sendInOrder(service, ENV, id, from, count, { pad, perRequest });

const count = (events: HistoryEntry[], type: string) => events.filter((e) => e.type === type).length;
const releases = (events: HistoryEntry[]) => events.filter((e) => e.type === 'WorkflowEventReceived' && e.data.queuedAt !== undefined).length;

describe('a workflow resumed by another workflow (select().resume()) with events kept back', () => {
  it('is resumed (ControlApplied changed 1) with releases in the resume\'s append, and the loop takes every event', async () => {
    const BIG = 150;
    const id = await engine.dispatch('BacklogLoop');
    await engine.waitForEventType(id, 'TimerStarted');
    expect((await engine.pause({ id })).changed).toBe(1);
    // K small events reach the code; then big ones are kept back, each release taking one (RELEASE_BYTES).
    await sendMany(id, 0, EVENTS_PER_DECISION);
    await sendMany(id, EVENTS_PER_DECISION, BIG, 'x'.repeat(40_000), 10);
    expect((await engine.send({ id }, 'update', 'stop')).changed).toBe(1);
    expect(count(await engine.history(id), 'WorkflowEventQueued')).toBe(BIG + 1);
    expect((await engine.resume({ id })).changed).toBe(1);
    // Paused again once the backlog is being released: the run then has room, and events kept back.
    await engine.waitForHistory(id, (h) => releases(h) >= 1, 'a first release', 60_000);
    expect((await engine.pause({ id })).changed).toBe(1);
    const paused = await engine.history(id);
    expect(releases(paused)).toBeLessThan(BIG + 1);

    const resumer = await engine.dispatch('ReviewResumer', [id]);
    await engine.waitForState(resumer, 'COMPLETED');
    // The resume is one effect: WorkflowResumed and, in its append, releases of kept-back events.
    const resumerHistory = await engine.waitForHistory(resumer, (h) => count(h, 'ControlApplied') === 1, 'the resume applied', 30_000).catch((error: Error) => {
      throw new Error(`${error.message}\nservice log (effects):\n${service.messages().split('\n').filter((l) => /effect|UNIQUE|constraint/i.test(l)).slice(-5).join('\n')}`);
    });
    expect(resumerHistory.find((e) => e.type === 'ControlApplied')!.data).toMatchObject({ matched: 1, changed: 1 });
    const done = await engine.waitForState(id, 'COMPLETED', 120_000);
    expect(done.result).toBe(EVENTS_PER_DECISION + BIG);
  }, 240_000);
});

describe('a workflow\'s select({ name }).send meeting a full backlog in one of the workflows it picks', () => {
  it('records ControlApplied with what it did: matched 2, changed 1 (the other received the event)', async () => {
    const full = await engine.dispatch('BacklogLoop');
    const free = await engine.dispatch('BacklogLoop');
    await engine.waitForEventType(full, 'TimerStarted');
    await engine.waitForEventType(free, 'TimerStarted');
    expect((await engine.pause({ id: full })).changed).toBe(1);
    await sendMany(full, 0, EVENTS_PER_DECISION + MAX_QUEUED);
    expect(count(await engine.history(full), 'WorkflowEventQueued')).toBe(MAX_QUEUED);

    const sender = await engine.dispatch('ReviewSender', ['BacklogLoop', 0]);
    await engine.waitForState(sender, 'COMPLETED');
    const history = await engine.waitForHistory(sender, (h) => count(h, 'ControlApplied') === 1, 'the send applied', 30_000);
    // The free loop got it (its first `update`, [0]); the full one refused it.
    await engine.waitForHistory(free, (h) => count(h, 'WorkflowEventReceived') === 1, 'the event received', 15_000);
    expect(history.find((e) => e.type === 'ControlApplied')!.data).toMatchObject({ matched: 2, changed: 1 });
    await engine.terminate({ id: full });
    await engine.terminate({ id: free });
  }, 120_000);
});
