/**
 * Durable, checkpointed read models and a checkpointed effects reactor, through the real
 * service: a restart resumes from its checkpoint (no full replay), an unknown event type in the
 * log is skipped with a warning, a projection subscription that dies is restarted while
 * /health says not ready, and a cross-stream effect that hits a transient store fault
 * (injected with the test-only BATON_FAULTS switch) is retried and applied once.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT, Service, freshStoreUrl, startService } from '../support/service.js';
import { startWorker, FixtureWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';
import { Engine } from '../engine/engine-helpers.js';
import { Client, unique } from './api-helpers.js';

async function health(service: Service): Promise<{ status: number; body: any }> {
  const response = await fetch(`${service.url}/health`);
  return { status: response.status, body: await response.json() };
}

async function appendRaw(storeUrl: string, streamId: string, type: string, data: unknown): Promise<void> {
  const { SqliteEventStore } = await import(pathToFileURL(join(ROOT, 'dist/src/event-store/sqlite/sqlite-event-store.js')).href);
  const store = new SqliteEventStore(storeUrl.slice('sqlite:'.length));
  try {
    await store.append(streamId, [{ id: crypto.randomUUID(), type, data, metadata: {} }]);
  } finally {
    await store.close();
  }
}

describe('durable read models', () => {
  const services: Service[] = [];
  const workers: FixtureWorker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await Promise.all(services.splice(0).map((s) => s.stop()));
  });

  it('a restart resumes from its checkpoint: no replay of what was already folded, same answers', async () => {
    const storeUrl = freshStoreUrl();
    const first = await startService({ storeUrl });
    services.push(first);
    const api = new Client(first, 'demo', 'dev');
    const name = unique('Durable');
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await api.dispatchWorkflow(name, { tag: `n:${i % 3}`, input: `[${i}]` }));
    await api.act('pause', { name, tag: 'n:1' });
    const before = await api.workflows({ name }, { first: 7 });
    const fresh = await health(first);
    expect(fresh.body.details.projections.resumedFrom).toBe('-1');
    await first.stop();
    services.length = 0;

    const second = await startService({ storeUrl });
    services.push(second);
    const { body } = await health(second);
    expect(BigInt(body.details.projections.resumedFrom)).toBeGreaterThanOrEqual(41n);
    // Only what happened after the last batch of the first run (its shutdown) is folded again.
    expect(body.details.projections.replayedEvents).toBeLessThanOrEqual(2);
    const api2 = new Client({ ...second, token: first.token } as Service, 'demo', 'dev');
    expect(await api2.workflows({ name }, { first: 7 })).toEqual(before);
    expect((await api2.workflows({ name, state: 'PAUSED' }, { first: 500 })).totalCount).toBe(10);
    expect(await api2.act('send', { name, tag: 'n:2' }, { name: 'Go', data: '[]' })).toMatchObject({ matched: 10, changed: 10 });
  });

  it('an unknown event type in the log is skipped with a warning, never fatal', async () => {
    const storeUrl = freshStoreUrl();
    const first = await startService({ storeUrl });
    services.push(first);
    const api = new Client(first, 'demo', 'dev');
    const before = await api.dispatchWorkflow(unique('Before'));
    // Written by "a newer Baton" while this one runs, and present at the next start.
    await appendRaw(storeUrl, `workflow-${before}`, 'WorkflowFromTheFuture', { hello: 'world' });
    const after = await api.dispatchWorkflow(unique('After'));
    expect(await api.state(after)).toBe('RUNNING');
    await first.logged(/skipping events of unknown type WorkflowFromTheFuture/);
    await first.stop();
    services.length = 0;
    const second = await startService({ storeUrl, env: { READ_MODEL_PATH: join(storeUrl.slice('sqlite:'.length), '..', 'elsewhere.db') } });
    services.push(second);
    await second.logged(/skipping events of unknown type WorkflowFromTheFuture/);
    expect((await health(second)).status).toBe(200);
    expect(await new Client({ ...second, token: first.token } as Service, 'demo', 'dev').state(after)).toBe('RUNNING');
  });

  it('a projection subscription that dies is restarted with backoff; /health is 503 with the reason meanwhile', async () => {
    const service = await startService({ env: { BATON_FAULTS: 'projection-drop:WorkflowPaused:4000', LOG_LEVEL: 'info' } });
    // Down for 4 s: on a loaded machine a 1.5 s window closed before the scrape between two 503s below.
    services.push(service);
    const api = new Client(service, 'demo', 'dev');
    const id = await api.dispatchWorkflow(unique('Dropped'));
    expect((await health(service)).status).toBe(200);
    const paused = api.act('pause', { id });
    const down = await waitFor(async () => {
      const h = await health(service);
      return h.status === 503 ? h : null;
    }, { timeoutMs: 15_000, description: '/health 503' });
    expect(down.body.details.projections.reason).toMatch(/projection subscription stopped at position \d+: injected fault/);
    // baton_ready says the same as /health/ready: a scrape taken while it answers 503 (before and after).
    const readyWhileDown = await waitFor(async () => {
      if ((await health(service)).status !== 503) return null;
      const text = await (await fetch(`${service.url}/metrics`)).text();
      return (await health(service)).status === 503 ? /^baton_ready (\S+)$/m.exec(text)?.[1] : null;
    }, { timeoutMs: 15_000, description: 'a scrape while /health is 503' });
    expect(readyWhileDown).toBe('0');
    await waitFor(async () => (await health(service)).status === 200, { timeoutMs: 20_000, description: '/health 200 again' });
    expect(await paused).toMatchObject({ matched: 1, changed: 1 });
    expect(await api.state(id)).toBe('PAUSED');
    await service.logged(/projection subscription restarted at position \d+/);
  });

  it('a cross-stream effect that hits a transient store fault is retried and applied once', async () => {
    const service = await startService({ env: { BATON_FAULTS: 'append-unavailable:ChildWorkflowCompleted:2', LOG_LEVEL: 'info' } });
    services.push(service);
    const environment = unique('faults');
    workers.push(await startWorker({ url: service.url, token: service.token, environment }));
    const engine = new Engine(service, environment);
    const parent = await engine.dispatch('Parent', ['kid:faulty']);
    await engine.waitForEventType(parent, 'ChildWorkflowStarted');
    await waitFor(async () => (await engine.send({ name: 'Child', tag: 'kid:faulty' }, 'release', 7)).matched === 1, { timeoutMs: 10_000, description: 'the child' });
    const done = await engine.waitForState(parent);
    expect(done.result.parentGot.released).toBe(7);
    expect((await engine.history(parent)).filter((e) => e.type === 'ChildWorkflowCompleted')).toHaveLength(1);
    await service.logged(/effect of WorkflowCompleted at \d+ .* failed \(attempt 1\), retrying in \d+ ms: injected fault/);
    expect((await health(service)).body.details.effects.retries).toBe(2);
  }, 30_000);
});
