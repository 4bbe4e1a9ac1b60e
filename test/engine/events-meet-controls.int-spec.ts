/**
 * Where events meet the other controls, with a real service (two instances on one
 * store) and a real `baton worker` process.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '../../src/sdk/index.js';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { FixtureWorker, startWorker } from '../support/worker.js';

const APP = 'demo';
const ENV = 'events-controls';
const MODULE = 'dist/test/support/fixtures/events-controls.js';

let a: Service;
let b: Service;
let onA: Client;
let onB: Client;
let worker: FixtureWorker;

beforeAll(async () => {
  const storeUrl = freshStoreUrl();
  a = await startService({ storeUrl });
  b = await startService({ storeUrl });
  onA = new Client({ url: a.url, token: a.token });
  onB = new Client({ url: b.url, token: a.token });
  worker = await startWorker({ url: a.url, token: a.token, environment: ENV, module: MODULE, concurrency: 50 });
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await Promise.all([a?.stop(), b?.stop()]);
});

const dispatch = (c: Client, name: string, input: unknown[] = [], tag?: string) => c.dispatchWorkflow({ appId: APP, environment: ENV, name, input, ...(tag ? { tag } : {}) });
const send = (c: Client, selector: Record<string, string>, name: string, data: unknown[] = []) =>
  c.sendEventToWorkflows({ appId: APP, environment: ENV, selector: selector as never, name, data });
const history = async (id: string) => onA.workflowHistory(APP, ENV, id);
const done = async (id: string, timeoutMs = 60_000) => {
  const w = await onA.awaitWorkflow(APP, ENV, id, { timeoutMs });
  return { state: w?.state, output: w?.output ? JSON.parse(w.output) : null, error: w?.error };
};
const started = (id: string) => waitFor(async () => (await history(id)).some((e) => e.type === 'DecisionCompleted'), { timeoutMs: 20_000, description: `${id} decided once` });

describe('continue-as-new under concurrent events', () => {
  it('50 `again` pokes sent at once through two instances each make one run: none lost', async () => {
    const id = await dispatch(onA, 'RevEntity', [0]);
    await started(id);
    const n = 50;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => send(i % 2 ? onA : onB, { id }, 'poke', ['again'])));
    expect(results.every((r) => r.changed === 1)).toBe(true);
    // Every poke counted: wait for the run that follows the last one.
    await waitFor(async () => (await history(id)).filter((e) => e.type === 'WorkflowContinuedAsNew').length >= n || null, { timeoutMs: 90_000, description: `${n} runs` });
    await send(onA, { id }, 'poke', ['end']);
    expect(await done(id)).toEqual({ state: 'COMPLETED', output: { runs: n, last: 'end' }, error: null });
  }, 150_000);
});

describe('continue-as-new in a loop while events arrive', () => {
  it('500 `add` events sent at once through two instances while a workflow loops (task, continue as new): all counted', async () => {
    const id = await dispatch(onA, 'RevAccum', [0, 0]);
    await started(id);
    const n = 500;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => send(i % 2 ? onA : onB, { id }, 'add', [1])));
    expect(results.filter((r) => r.changed !== 1)).toEqual([]);
    await send(onB, { id }, 'stop');
    const out = await done(id, 120_000);
    expect(out.state).toBe('COMPLETED');
    expect(out.output.total).toBe(n);
  }, 180_000);
});

describe('events in order while paused and resumed over and over', () => {
  it('300 items sent one by one (alternating instances) while pause/resume by name toggle on the other: taken in order across runs', async () => {
    const id = await dispatch(onA, 'RevOrderLoop', [0, []]);
    await started(id);
    let sending = true;
    const toggler = (async () => {
      let k = 0;
      while (sending) {
        await control(k % 2 ? onA : onB, k % 4 < 2 ? 'pauseWorkflows' : 'resumeWorkflows', { name: 'RevOrderLoop' });
        k++;
      }
    })();
    const n = 300;
    for (let i = 0; i < n; i++) expect(await send(i % 2 ? onA : onB, { id }, 'item', [i])).toMatchObject({ changed: 1 });
    sending = false;
    await toggler;
    await control(onA, 'resumeWorkflows', { id });
    await send(onB, { id }, 'stop');
    const out = await done(id, 120_000);
    expect(out.state).toBe('COMPLETED');
    expect(out.output).toEqual(Array.from({ length: n }, (_, i) => i));
  }, 180_000);
});

describe('many events to one workflow', () => {
  it('1,000 events sent at once through two instances (10 senders in order): each delivered once, in order per sender', async () => {
    const id = await dispatch(onA, 'RevCollect');
    await started(id);
    const senders = 10;
    const per = 100;
    const results = await Promise.all(
      Array.from({ length: senders }, async (_, s) => {
        const out = [];
        for (let i = 0; i < per; i++) out.push(await send(s % 2 ? onA : onB, { id }, 'item', [`${s}:${i}`]));
        return out;
      }),
    );
    expect(results.flat().filter((r) => r.changed !== 1)).toEqual([]);
    await send(onA, { id }, 'stop');
    const result = await done(id, 120_000);
    expect(result.state).toBe('COMPLETED');
    const items = result.output as string[];
    expect(items.length).toBe(senders * per);
    expect(new Set(items).size).toBe(senders * per);
    for (let s = 0; s < senders; s++) {
      const mine = items.filter((v) => v.startsWith(`${s}:`)).map((v) => Number(v.split(':')[1]));
      expect({ s, mine }).toEqual({ s, mine: Array.from({ length: per }, (_, i) => i) });
    }
  }, 180_000);
});

describe('1,000 events at once', () => {
  it('1,000 events sent all at once through two instances to one workflow: every request OK, each delivered once', async () => {
    const id = await dispatch(onA, 'RevCollect');
    await started(id);
    const n = 1000;
    const settled = await Promise.allSettled(Array.from({ length: n }, (_, i) => send(i % 2 ? onA : onB, { id }, 'item', [i])));
    const failed = settled.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason).slice(0, 200));
    expect({ failed: failed.length, sample: failed.slice(0, 3) }).toEqual({ failed: 0, sample: [] });
    expect(settled.filter((r) => r.status === 'fulfilled' && r.value.changed !== 1)).toEqual([]);
    await send(onA, { id }, 'stop');
    const out = await done(id, 120_000);
    expect(out.state).toBe('COMPLETED');
    expect([...(out.output as number[])].sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i));
  }, 180_000);
});

describe('sendEvent racing dispatch on the other instance', () => {
  it('200 dispatch + send pairs (by id, by name and tag, by id and name), alternating instances, 20 at a time: every workflow gets its event', async () => {
    const pairs = 200;
    const ids: string[] = [];
    for (let batch = 0; batch < pairs / 20; batch++) {
      const got = await Promise.all(
        Array.from({ length: 20 }, async (_, j) => {
          const i = batch * 20 + j;
          const [first, second] = i % 2 ? [onA, onB] : [onB, onA];
          const tag = `pair:${i}`;
          const id = await dispatch(first, 'RevWaitOnce', [], tag);
          const selector: Record<string, string> = [{ id }, { name: 'RevWaitOnce', tag }, { id, name: 'RevWaitOnce' }][i % 3];
          const r = await send(second, selector, 'go', [i]);
          return { id, r };
        }),
      );
      for (const { id, r } of got) {
        expect(r).toMatchObject({ matched: 1, changed: 1 });
        ids.push(id);
      }
    }
    const outcomes = await Promise.all(ids.map((id) => done(id, 120_000)));
    expect(outcomes.filter((o) => o.state !== 'COMPLETED')).toEqual([]);
    expect(outcomes.map((o) => o.output[0])).toEqual(ids.map((_, i) => i));
  }, 240_000);
});

const control = (c: Client, action: 'pauseWorkflows' | 'resumeWorkflows' | 'terminateWorkflows', selector: Record<string, string>) =>
  c[action]({ appId: APP, environment: ENV, selector: selector as never });
const types = async (id: string) => (await history(id)).map((e) => e.type);

describe('controls by name racing continue-as-new', () => {
  it('pause by name while 30 loops continue as new: all paused, no run starts while paused; resume; terminate by name ends all', async () => {
    const ids = await Promise.all(Array.from({ length: 30 }, (_, i) => dispatch(i % 2 ? onA : onB, 'RevLoop', [0])));
    await Promise.all(ids.map((id) => waitFor(async () => (await types(id)).filter((t) => t === 'WorkflowContinuedAsNew').length >= 3 || null, { timeoutMs: 60_000 })));
    const paused = await control(onB, 'pauseWorkflows', { name: 'RevLoop' });
    expect(paused).toMatchObject({ matched: 30, changed: 30 });
    const states = await Promise.all(ids.map(async (id) => (await onA.workflow(APP, ENV, id))?.state));
    expect(states).toEqual(ids.map(() => 'PAUSED'));
    const before = await Promise.all(ids.map(async (id) => (await types(id)).filter((t) => t === 'WorkflowContinuedAsNew').length));
    // A decision in flight at the pause is discarded; wait for the store to settle (no decision in flight), then compare.
    await waitFor(async () => (await Promise.all(ids.map(async (id) => { const t = await types(id); return t.lastIndexOf('DecisionStarted') < Math.max(t.lastIndexOf('DecisionCompleted'), t.lastIndexOf('DecisionDiscarded')); }))).every(Boolean) || null, { timeoutMs: 20_000 });
    const settled = await Promise.all(ids.map(async (id) => (await types(id)).filter((t) => t === 'WorkflowContinuedAsNew').length));
    expect(settled).toEqual(before);
    expect(await control(onA, 'resumeWorkflows', { name: 'RevLoop' })).toMatchObject({ matched: 30, changed: 30 });
    await Promise.all(ids.map((id, i) => waitFor(async () => (await types(id)).filter((t) => t === 'WorkflowContinuedAsNew').length >= settled[i] + 2 || null, { timeoutMs: 60_000 })));
    const terminated = await control(onB, 'terminateWorkflows', { name: 'RevLoop' });
    expect(terminated).toMatchObject({ matched: 30, changed: 30 });
    const ends = await Promise.all(ids.map(async (id) => (await onA.workflow(APP, ENV, id))?.state));
    expect(ends).toEqual(ids.map(() => 'TERMINATED'));
    expect(await control(onA, 'terminateWorkflows', { name: 'RevLoop' })).toMatchObject({ status: 'NO_MATCH', matched: 0 });
  }, 240_000);
});

describe('controls by name and tag racing a child completion', () => {
  it('parents paused by name+tag while their children are released: after resume each gets its child result once', async () => {
    const tag = 'batch:1';
    const parents = await Promise.all(Array.from({ length: 20 }, () => dispatch(onA, 'RevParent', [tag], tag)));
    await Promise.all(parents.map((id) => waitFor(async () => (await types(id)).includes('ChildWorkflowStarted') || null, { timeoutMs: 30_000 })));
    const childIds = await Promise.all(parents.map(async (id) => ((await history(id)).find((e) => e.type === 'ChildWorkflowStarted')!.data as { childId: string }).childId));
    await Promise.all(childIds.map((id) => started(id)));
    const [pause, release] = await Promise.all([control(onB, 'pauseWorkflows', { name: 'RevParent', tag }), send(onA, { name: 'RevChild', tag }, 'release', ['freed'])]);
    expect(pause).toMatchObject({ matched: 20, changed: 20 });
    expect(release).toMatchObject({ matched: 20, changed: 20 });
    await Promise.all(childIds.map(async (id) => expect(await done(id)).toMatchObject({ state: 'COMPLETED', output: 'freed' })));
    await Promise.all(parents.map((id) => waitFor(async () => (await types(id)).includes('ChildWorkflowCompleted') || null, { timeoutMs: 30_000 })));
    expect((await Promise.all(parents.map(async (id) => (await onA.workflow(APP, ENV, id))?.state)))).toEqual(parents.map(() => 'PAUSED'));
    expect(await control(onA, 'resumeWorkflows', { name: 'RevParent', tag })).toMatchObject({ matched: 20, changed: 20 });
    const outcomes = await Promise.all(parents.map((id) => done(id)));
    expect(outcomes).toEqual(parents.map(() => ({ state: 'COMPLETED', output: { got: 'freed' }, error: null })));
    for (const id of parents) expect((await types(id)).filter((t) => t === 'ChildWorkflowCompleted').length).toBe(1);
  }, 180_000);

  it('parents terminated by name+tag while their children complete: parents TERMINATED, children ended, nothing after the end', async () => {
    const tag = 'batch:2';
    const parents = await Promise.all(Array.from({ length: 20 }, () => dispatch(onA, 'RevParent', [tag], tag)));
    await Promise.all(parents.map((id) => waitFor(async () => (await types(id)).includes('ChildWorkflowStarted') || null, { timeoutMs: 30_000 })));
    const childIds = await Promise.all(parents.map(async (id) => ((await history(id)).find((e) => e.type === 'ChildWorkflowStarted')!.data as { childId: string }).childId));
    await Promise.all(childIds.map((id) => started(id)));
    const [term] = await Promise.all([control(onB, 'terminateWorkflows', { name: 'RevParent', tag }), send(onA, { name: 'RevChild', tag }, 'release', ['freed'])]);
    expect(term).toMatchObject({ matched: 20, changed: 20 });
    const children = await Promise.all(childIds.map((id) => done(id)));
    for (const c of children) expect(['COMPLETED', 'TERMINATED']).toContain(c.state);
    for (const id of parents) {
      const t = await types(id);
      expect((await onA.workflow(APP, ENV, id))?.state).toBe('TERMINATED');
      expect(t.slice(t.indexOf('WorkflowTerminated') + 1).filter((x) => !['ChildWorkflowCompleted', 'ChildWorkflowFailed', 'DecisionCompleted'].includes(x))).toEqual([]);
    }
  }, 180_000);
});

describe('an event racing a timer in Promise.race', () => {
  it('40 races at varying offsets: each completes, and the winner is what the history put first', async () => {
    const ms = 400;
    const ids = await Promise.all(Array.from({ length: 40 }, () => dispatch(onA, 'RevRace', [ms])));
    await Promise.all(ids.map((id) => started(id)));
    await Promise.all(ids.map(async (id, i) => {
      await new Promise((r) => setTimeout(r, (i * 20) % 800));
      await send(i % 2 ? onA : onB, { id }, 'go', [i]);
    }));
    for (const [i, id] of ids.entries()) {
      const out = await done(id);
      expect(out.state).toBe('COMPLETED');
      const t = await types(id);
      const firstEvent = t.indexOf('WorkflowEventReceived');
      const fired = t.indexOf('TimerFired');
      const expected = fired >= 0 && (firstEvent < 0 || fired < firstEvent) ? ['timer'] : ['event', i];
      expect({ i, out: out.output }).toEqual({ i, out: expected });
    }
  }, 120_000);
});

describe('event names with odd characters', () => {
  it('are delivered to a catch-all handler exactly as sent, in order', async () => {
    const names = ['a b', 'ünïcödé', '😀 emoji', '"quoted" \'single\'', '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'x'.repeat(256), '\u00a0nbsp', 'tab-less/slash\\back', '$where', '*x', 'item'];
    const id = await dispatch(onA, 'RevCatchAll');
    await started(id);
    for (const [i, name] of names.entries()) expect(await send(i % 2 ? onA : onB, { id }, name, [i])).toMatchObject({ changed: 1 });
    await send(onA, { id }, 'done');
    const out = await done(id);
    expect(out).toEqual({ state: 'COMPLETED', output: names.map((n, i) => [n, i]), error: null });
  }, 60_000);
});

describe('events in one request', () => {
  it('50 aliased sendEventToWorkflows in one mutation are delivered in alias order', async () => {
    const id = await dispatch(onA, 'RevCollect');
    await started(id);
    const fields = Array.from({ length: 50 }, (_, i) => `e${i}: sendEventToWorkflows(input: { appId: "${APP}", environment: "${ENV}", selector: { id: "${id}" }, name: "item", data: "[${i}]" }) { changed }`);
    const r = await b.gql(`mutation { ${fields.join("\n")} }`, undefined, a.token);
    expect(r.body.errors).toBeUndefined();
    await send(onA, { id }, 'stop');
    expect((await done(id)).output).toEqual(Array.from({ length: 50 }, (_, i) => i));
  }, 60_000);
});

describe('an event by name selecting thousands of workflows', () => {
  it('3,000 workflows: matched and changed 3,000, every id listed; a query on the same instance still answers meanwhile; terminate by name ends all', async () => {
    const n = 3000;
    const ids: string[] = [];
    for (let i = 0; i < n; i += 100) ids.push(...(await Promise.all(Array.from({ length: 100 }, () => dispatch(onA, 'RevUnserved', [], 'bulk')))));
    const t0 = Date.now();
    let slowest = 0;
    let finished = false;
    const action = send(onB, { name: 'RevUnserved', tag: 'bulk' }, 'hello', [{ big: 'x'.repeat(1000) }]).finally(() => (finished = true));
    while (!finished) {
      const q0 = Date.now();
      await onB.workflow(APP, ENV, ids[0]);
      slowest = Math.max(slowest, Date.now() - q0);
      await new Promise((r) => setTimeout(r, 50));
    }
    const result = await action;
    const took = Date.now() - t0;
    console.log(`send to ${n}: ${took} ms, slowest query meanwhile ${slowest} ms`);
    expect(result.matched).toBe(n);
    expect(result.changed).toBe(n);
    expect(new Set(result.workflowIds)).toEqual(new Set(ids));
    const r2 = await control(onA, 'terminateWorkflows', { name: 'RevUnserved' });
    expect(r2).toMatchObject({ matched: n, changed: n });
  }, 240_000);
});
