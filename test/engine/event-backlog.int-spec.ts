/**
 * A backlog of events (10,000 sent while a workflow is paused) is handed to the code in parts,
 * at most `EVENTS_PER_DECISION` new events a decision, with a real service and a real
 * `baton worker` process: before, the first decision after resume got all of them, its answer
 * (two timer commands per event) was over the decision limits, and the workflow never moved again.
 * A release (`WorkflowEventReceived { queuedAt }`) copies no data; workers get it with the queued
 * event's name and data put in.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { EVENTS_PER_DECISION } from '../../src/workflows/domain/workflow.decider.js';
import { ROOT, Service, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { FixtureWorker, startWorker } from '../support/worker.js';
import { Engine, HistoryEntry, sendInOrder } from './engine-helpers.js';

const ENV = 'event-backlog';
const MODULE = 'dist/test/support/fixtures/events-controls.js';

let service: Service;
let engine: Engine;
let worker: FixtureWorker;

beforeAll(async () => {
  // 10,000 events sent in a few seconds (each alias a root field) can pass the default 60,000 a
  // minute per token when the machine is fast, which answers RATE_LIMITED for the rate, not the backlog.
  service = await startService({ storeUrl: freshStoreUrl(), env: { RATE_LIMIT_PER_MINUTE: '0' } });
  engine = new Engine(service, ENV);
  worker = await startWorker({ url: service.url, token: service.token, environment: ENV, module: MODULE });
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await service?.stop();
});

/** `count` `update` events (data `[from + i]`) to workflow `id`, 200 aliased sends a request, in order, each recorded. */
const sendMany = (id: string, from: number, count: number, to: Service = service) => sendInOrder(to, ENV, id, from, count, { everyChanged: true });

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
    // The first EVENTS_PER_DECISION were received as sent; the rest queued, then released in order.
    expect(count(history, 'WorkflowEventQueued')).toBe(10_001 - EVENTS_PER_DECISION);
    expect(count(history, 'WorkflowEventReceived')).toBe(10_001);
    expect(count(history, 'DecisionFailed')).toBe(0);
    // A release points at its queued event (same stream) and holds no data of its own.
    const byRevision = new Map(history.map((e) => [e.revision, e]));
    const releases = history.filter((e) => e.type === 'WorkflowEventReceived' && e.data.queuedAt !== undefined);
    expect(releases).toHaveLength(10_001 - EVENTS_PER_DECISION);
    expect(releases.every((e) => e.data.data === undefined && byRevision.get(e.data.queuedAt)?.type === 'WorkflowEventQueued')).toBe(true);
    expect(new Set(releases.map((e) => e.data.queuedAt)).size).toBe(releases.length);
    const sent = (e: HistoryEntry) => (e.data.queuedAt !== undefined ? byRevision.get(e.data.queuedAt)!.data : e.data);
    const received = history.filter((e) => e.type === 'WorkflowEventReceived').map((e) => sent(e).data[0]);
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
    const resumedAt = history.find((x) => x.type === 'WorkflowResumed')!.revision;
    const after = history.filter((e) => e.revision > resumedAt);
    console.log(
      `backlog of 10,001 events: ${history.length} events in the stream, ${decisions} decisions (${count(after, 'DecisionStarted')} after resume, ` +
        `each a claim append and a completion append), event data: queued ${bytes('WorkflowEventQueued')} B, received ${bytes('WorkflowEventReceived')} B ` +
        `(of which releases ${releases.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e.data)), 0)} B)`,
    );
  }, 300_000);
});

describe('a backlog across a continue-as-new', () => {
  it('5,000 events sent while paused to a loop that continues as new every 1,500: the new runs release what the old ones kept back, by revision, in order, each once; baton replay replays the last run', async () => {
    const id = await engine.dispatch('BacklogBatches', [0]);
    await engine.waitForEventType(id, 'TimerStarted');
    expect((await engine.pause({ id })).changed).toBe(1);
    await sendMany(id, 0, 5_000);
    expect((await engine.send({ id }, 'update', 'stop')).changed).toBe(1);
    expect((await engine.resume({ id })).changed).toBe(1);
    const done = await engine.waitForState(id, 'COMPLETED', 240_000);
    expect(done.result).toBe(5_000);

    const history = await engine.history(id);
    const byRevision = new Map(history.map((e) => [e.revision, e]));
    const continued = history.filter((e) => e.type === 'WorkflowContinuedAsNew');
    expect(continued.length).toBe(3);
    // The first continue-as-new (at 1,500 taken) lists the events still kept back: numbers, no data.
    const carried = continued[0].data.queued as { at: number[]; bytes: number[] };
    expect(carried.at.length).toBeGreaterThan(0);
    expect(carried.bytes).toHaveLength(carried.at.length);
    expect(carried.at.every((r) => byRevision.get(r)?.type === 'WorkflowEventQueued' && r < continued[0].revision)).toBe(true);
    expect(count(history, 'WorkflowEventQueued')).toBe(5_001 - EVENTS_PER_DECISION);
    // Every queued event released exactly once, some of them in a later run than the one that queued them.
    const releases = history.filter((e) => e.type === 'WorkflowEventReceived' && e.data.queuedAt !== undefined);
    expect(releases).toHaveLength(5_001 - EVENTS_PER_DECISION);
    expect(new Set(releases.map((e) => e.data.queuedAt)).size).toBe(releases.length);
    expect(releases.filter((e) => e.revision > continued[0].revision && e.data.queuedAt < continued[0].revision).length).toBeGreaterThan(0);
    expect(count(history, 'DecisionFailed')).toBe(0);

    // The auditor's replay of the last run (its releases point into earlier runs) gets the code's result again.
    const replay = spawnSync(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), 'replay', MODULE, id], {
      cwd: ROOT,
      env: { ...process.env, EVENT_STORE_URL: service.storeUrl },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(replay.stderr).toBe('');
    expect(replay.stdout).toContain('OK: BacklogBatches replays');
    expect(replay.status).toBe(0);
  }, 300_000);
});

describe('what a worker gets of a backlog', () => {
  const scope = { appId: 'demo', environment: ENV };
  const POLL = `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref workflowId decisionId history historyFrom runFrom } }`;
  const REPORT = `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { ref code message } } }`;
  const HISTORY = `query($input: DecisionHistoryInput!) { decisionHistory(input: $input) }`;
  const ask = async (query: string, variables: Record<string, unknown>) => {
    const r = await service.gql(query, variables);
    expect(r.body.errors).toBeUndefined();
    return r.body.data;
  };
  type Item = { kind: string; ref: string; workflowId: string; decisionId: string; history: string | null; historyFrom: number | null; runFrom: number | null };
  const claim = (workerId: string, id: string): Promise<Item> =>
    waitFor(
      async () => {
        const items: Item[] = (await ask(POLL, { input: { ...scope, workerId, workflows: ['RawBacklog'], tasks: [], waitMs: 500 } })).pollWork;
        return items.find((i) => i.kind === 'DECISION' && i.workflowId === id);
      },
      { timeoutMs: 15_000, description: `a decision of ${id}` },
    );
  /** The run as the worker gets it: the claim's history, paged in with decisionHistory when it was left out. */
  const historyOf = async (workerId: string, item: Item) => {
    const events: Array<{ revision: number; type: string; data: any }> = JSON.parse(item.history ?? '[]');
    if (item.history === null || item.historyFrom !== item.runFrom) {
      events.length = 0;
      for (let from = item.runFrom!; ; ) {
        const page = JSON.parse((await ask(HISTORY, { input: { ...scope, workerId, ref: item.ref, decisionId: item.decisionId, fromRevision: from } })).decisionHistory);
        events.push(...page);
        const last = page[page.length - 1];
        if (!last || last.type === 'DecisionStarted') break;
        from = last.revision + 1;
      }
    }
    return events;
  };

  it('a decision claimed through the protocol gets at most EVENTS_PER_DECISION events and never a WorkflowEventQueued; the next one the rest', async () => {
    const id = await engine.dispatch('RawBacklog');
    const first = await claim('raw-1', id);
    expect((await ask(REPORT, { input: { ...scope, workerId: 'raw-1', decisions: [{ ref: first.ref, decisionId: first.decisionId, commands: '[]' }] } })).reportWork).toEqual({ accepted: 1, rejected: [] });
    await sendMany(id, 0, EVENTS_PER_DECISION + 50);

    // Another worker (the whole run): the first K events, nothing queued.
    const second = await claim('raw-2', id);
    const seen = await historyOf('raw-2', second);
    expect(seen.filter((e) => e.type === 'WorkflowEventQueued')).toEqual([]);
    expect(seen.filter((e) => e.type === 'WorkflowEventReceived').map((e) => e.data.data[0])).toEqual(Array.from({ length: EVENTS_PER_DECISION }, (_, i) => i));
    expect((await ask(REPORT, { input: { ...scope, workerId: 'raw-2', decisions: [{ ref: second.ref, decisionId: second.decisionId, commands: '[]' }] } })).reportWork).toEqual({ accepted: 1, rejected: [] });

    // The next decision: the 50 released with that report, after it.
    const third = await claim('raw-3', id);
    const all = await historyOf('raw-3', third);
    expect(all.filter((e) => e.type === 'WorkflowEventQueued')).toEqual([]);
    const received = all.filter((e) => e.type === 'WorkflowEventReceived');
    expect(received.map((e) => e.data.data[0])).toEqual(Array.from({ length: EVENTS_PER_DECISION + 50 }, (_, i) => i));
    const secondStart = all.filter((e) => e.type === 'DecisionStarted')[1].revision;
    const released = received.filter((e) => e.revision > secondStart);
    expect(released).toHaveLength(50);
    // The worker gets each release as the event it releases: its name and original data, no reference.
    expect(released.map((e) => e.data)).toEqual(Array.from({ length: 50 }, (_, i) => ({ name: 'update', data: [EVENTS_PER_DECISION + i] })));
    // In the stream those are references (no copy of the data) to the queued events.
    const stored = new Map((await engine.history(id)).map((e) => [e.revision, e]));
    for (const e of released) {
      const release = stored.get(e.revision)!;
      expect(release.data).toEqual({ queuedAt: expect.any(Number) });
      expect(stored.get(release.data.queuedAt)).toMatchObject({ type: 'WorkflowEventQueued', data: e.data });
    }
    // The same history, paged in with decisionHistory by the worker that holds the claim.
    expect(await historyOf('raw-3', { ...third, history: null })).toEqual(all);
    await engine.terminate({ id });
  }, 120_000);
});

describe('a full backlog', () => {
  // An instance whose bound is 2,000 (MAX_QUEUED_EVENTS, 100,000 by default): the same code path
  // as the default's, without sending 101,000 events.
  const MAX_QUEUED_EVENTS = 2_000;
  let capped: Service;
  beforeAll(async () => {
    capped = await startService({ storeUrl: freshStoreUrl(), env: { RATE_LIMIT_PER_MINUTE: '0', MAX_QUEUED_EVENTS: String(MAX_QUEUED_EVENTS) } });
  }, 60_000);
  afterAll(() => capped?.stop());
  const LENGTH = `query($id: ID!) { workflow(appId: "demo", environment: "${ENV}", id: $id) { historyLength } }`;
  const SEND = (selector: string) =>
    `mutation { sendEventToWorkflows(input: { appId: "demo", environment: "${ENV}", selector: ${selector}, name: "update", data: "[\\"over\\"]" }) { matched changed } }`;
  const lengthOf = async (id: string): Promise<number> => ((await capped.gql<{ workflow: { historyLength: number } }>(LENGTH, { id })).body.data!.workflow.historyLength);

  it(`refuses a send past MAX_QUEUED_EVENTS (${MAX_QUEUED_EVENTS}) kept back with RATE_LIMITED and records nothing; a { name, tag } send records it in the others and says which were refused`, async () => {
    // No worker runs CapBacklog: nothing is ever released.
    const cappedEngine = new Engine(capped, ENV);
    const full = await cappedEngine.dispatch('CapBacklog', [], 'cap');
    await sendMany(full, 0, EVENTS_PER_DECISION + MAX_QUEUED_EVENTS, capped);
    const length = await lengthOf(full);
    expect(length).toBe(1 + EVENTS_PER_DECISION + MAX_QUEUED_EVENTS);

    const byId = await capped.gql<{ sendEventToWorkflows: null }>(SEND(`{ id: "${full}" }`));
    expect(byId.body.data?.sendEventToWorkflows).toBeNull();
    expect(byId.body.errors).toHaveLength(1);
    expect(byId.body.errors![0].extensions).toEqual({ code: 'RATE_LIMITED', limit: 'MAX_QUEUED_EVENTS', workflowId: full });
    expect(byId.body.errors![0].message).toContain('MAX_QUEUED_EVENTS');
    expect(await lengthOf(full)).toBe(length);

    const other = await cappedEngine.dispatch('CapBacklog', [], 'cap');
    const byTag = await capped.gql<{ sendEventToWorkflows: null }>(SEND(`{ name: "CapBacklog", tag: "cap" }`));
    expect(byTag.body.errors![0].extensions).toEqual({ code: 'RATE_LIMITED', limit: 'MAX_QUEUED_EVENTS', workflowId: full, matched: 2, changed: 1, refused: 1 });
    expect(await lengthOf(full)).toBe(length);
    const received = (await cappedEngine.history(other)).filter((e) => e.type === 'WorkflowEventReceived');
    expect(received.map((e) => e.data)).toEqual([{ name: 'update', data: ['over'] }]);
    await cappedEngine.terminate({ name: 'CapBacklog', tag: 'cap' });
  }, 120_000);
});
