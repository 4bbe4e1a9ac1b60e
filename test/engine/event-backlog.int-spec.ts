/**
 * A backlog of events (10,000 sent while a workflow is paused) is handed to the code in parts,
 * at most `EVENTS_PER_DECISION` new events a decision, with a real service and a real
 * `baton worker` process: before, the first decision after resume got all of them, its answer
 * (two timer commands per event) was over the decision limits, and the workflow never moved again.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
/** The engine's bound on new events a decision (`EVENTS_PER_DECISION` in workflow.decider.ts). */
const EVENTS_PER_DECISION = 1000;
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { FixtureWorker, startWorker } from '../support/worker.js';
import { Engine, HistoryEntry } from './engine-helpers.js';

const ENV = 'event-backlog';
const MODULE = 'dist/test/support/fixtures/events-controls.js';

let service: Service;
let engine: Engine;
let worker: FixtureWorker;

beforeAll(async () => {
  service = await startService({ storeUrl: freshStoreUrl() });
  engine = new Engine(service, ENV);
  worker = await startWorker({ url: service.url, token: service.token, environment: ENV, module: MODULE });
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await service?.stop();
});

/** `count` `update` events (data `[from + i]`) to workflow `id`, 200 aliased sends a request, in order. */
async function sendMany(id: string, from: number, count: number): Promise<void> {
  for (let i = 0; i < count; i += 200) {
    const n = Math.min(200, count - i);
    const fields = Array.from(
      { length: n },
      (_, j) => `e${j}: sendEventToWorkflows(input: { appId: "demo", environment: "${ENV}", selector: { id: "${id}" }, name: "update", data: "[${from + i + j}]" }) { changed }`,
    );
    const r = await service.gql<Record<string, { changed: number }>>(`mutation { ${fields.join('\n')} }`);
    expect(r.body.errors).toBeUndefined();
    expect(Object.values(r.body.data!).every((x) => x.changed === 1)).toBe(true);
  }
}

const count = (events: HistoryEntry[], type: string) => events.filter((e) => e.type === type).length;

describe('a backlog of events after a pause', () => {
  it('10,000 events sent while paused, then `stop`: after resume the loop takes them in parts and completes with 10,000', async () => {
    const id = await engine.dispatch('BacklogLoop');
    await engine.waitForEventType(id, 'TimerStarted');
    expect((await engine.pause({ id })).changed).toBe(1);
    await sendMany(id, 0, 10_000);
    expect((await engine.send({ id }, 'update', 'stop')).changed).toBe(1);
    expect((await engine.resume({ id })).changed).toBe(1);

    const done = await engine.waitForState(id, 'COMPLETED', 240_000);
    expect(done.result).toBe(10_000);

    const history = await engine.history(id);
    // Every event was queued while paused, then released in order, at most EVENTS_PER_DECISION a decision.
    expect(count(history, 'WorkflowEventQueued')).toBe(10_001);
    expect(count(history, 'WorkflowEventReceived')).toBe(10_001);
    expect(count(history, 'DecisionFailed')).toBe(0);
    const received = history.filter((e) => e.type === 'WorkflowEventReceived').map((e) => e.data.data[0]);
    expect(received).toEqual([...Array.from({ length: 10_000 }, (_, i) => i), 'stop']);
    let unseen = 0;
    let most = 0;
    for (const e of history) {
      if (e.type === 'WorkflowEventReceived') most = Math.max(most, ++unseen);
      if (e.type === 'DecisionStarted') unseen = 0;
    }
    expect(most).toBe(EVENTS_PER_DECISION);
    const decisions = count(history, 'DecisionCompleted');
    expect(decisions).toBeGreaterThanOrEqual(Math.ceil(10_001 / EVENTS_PER_DECISION) + 1);
    const bytes = (type: string) => history.filter((e) => e.type === type).reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e.data)), 0);
    console.log(
      `backlog of 10,001: ${history.length} events, ${decisions} decisions, queued ${bytes('WorkflowEventQueued')} B + received ${bytes('WorkflowEventReceived')} B of event data, ` +
        `appends after resume: ${new Set(history.filter((e) => e.revision > history.find((x) => x.type === 'WorkflowResumed')!.revision).map((e) => e.metadata.correlationId + '|' + e.recordedAt)).size}`,
    );
  }, 300_000);
});
