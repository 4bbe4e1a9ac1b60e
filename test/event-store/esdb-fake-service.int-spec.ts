/*
 * One real Baton process on the EventStoreDB adapter, against the FAKE EventStoreDB server run as
 * its own process (test/support/fake-esdb-server.ts: an in-memory model of the server's gRPC
 * Streams service, not EventStoreDB), with a real worker process: a workflow dispatched through
 * the API runs to completion, and a second instance (its own read models, as each EventStoreDB
 * instance keeps) rebuilds them from `$all` and finds it completed. With a child workflow, an
 * event and a timer as well, and the standard projections' link events in `$all`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { EsdbEventStore } from '../../src/event-store/esdb/esdb-event-store.js';
import { Engine, unique } from '../engine/engine-helpers.js';
import { FakeEsdbProcess, startFakeEsdb } from '../support/fake-esdb-process.js';
import { Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { killAllWorkers, startWorker } from '../support/worker.js';

const fakes: FakeEsdbProcess[] = [];
const services: Service[] = [];

afterAll(async () => {
  await killAllWorkers();
  for (const service of services) await service.stop();
  for (const fake of fakes) await fake.stop();
});

/** Starts the fake server process on a free port; resolves with its connection string. */
async function startFake(): Promise<string> {
  return (await startFakeProcess()).url;
}

async function startFakeProcess(): Promise<FakeEsdbProcess> {
  const fake = await startFakeEsdb({ statsPeriodMs: 200, standardProjections: true });
  fakes.push(fake);
  return fake;
}

const readModelPath = () => join(mkdtempSync(join(tmpdir(), 'baton-esdb-rm-')), 'read-models.db');

describe('Baton on a FAKE EventStoreDB server process (test/support/fake-esdb-server.ts), not EventStoreDB', () => {
  it('runs workflows dispatched through the API to completion with a real worker (tasks, a child, an event, a timer); a second instance rebuilds its read models from $all', async () => {
    const storeUrl = await startFake();
    expect(storeUrl).toMatch(/^esdb:\/\/127\.0\.0\.1:\d+\?tls=false$/);
    const service = await startService({ storeUrl, env: { READ_MODEL_PATH: readModelPath() } });
    services.push(service);
    expect(service.token).not.toBe('');
    const environment = unique('esdb-fake');
    await startWorker({ url: service.url, token: service.token, environment });
    const engine = new Engine(service, environment);

    const id = await engine.dispatch('Sequential', ['x']);
    const done = await engine.waitForState(id, 'COMPLETED', 30_000);
    expect(done.result).toEqual(['x', 3, 'x-3']);

    // A child workflow (the effects reactor dispatches it), an event sent to it, and a timer.
    const tag = unique('tree');
    const parentId = await engine.dispatch('Parent', [tag], tag);
    const sleeperId = await engine.dispatch('Sleeper', [200]);
    await waitFor(async () => (await engine.send({ name: 'Child', tag }, 'release', 'go')).changed === 1, { timeoutMs: 30_000, description: 'the child released' });
    const parent = await engine.waitForState(parentId, 'COMPLETED', 30_000);
    expect(parent.result).toMatchObject({ parentGot: { released: 'go' } });
    expect((await engine.waitForState(sleeperId, 'COMPLETED', 30_000)).state).toBe('COMPLETED');

    // Another instance on the same server, with read models of its own (an empty file).
    const second = await startService({ storeUrl, env: { READ_MODEL_PATH: readModelPath() } });
    services.push(second);
    // The first instance's token: stored in the log, not in a read model.
    const other = new Engine(second, environment, service.token);
    expect((await other.waitForState(id, 'COMPLETED', 30_000)).result).toEqual(['x', 3, 'x-3']);
    expect((await other.waitForState(parentId, 'COMPLETED', 30_000)).result).toEqual(parent.result);
  }, 120_000);

  it('retention (RETENTION_DAYS) tombstones the finished workflows on the server and forgets them, and keeps a running one', async () => {
    const storeUrl = await startFake();
    // 0.00003 days = 2.6 s; the job runs every 300 ms.
    const service = await startService({ storeUrl, env: { READ_MODEL_PATH: readModelPath(), RETENTION_DAYS: '0.00003', RETENTION_SWEEP_MS: '300' } });
    services.push(service);
    const environment = unique('esdb-retention');
    await startWorker({ url: service.url, token: service.token, environment });
    const engine = new Engine(service, environment);
    const finished = await Promise.all([0, 1, 2].map((i) => engine.dispatch('Sequential', [`r${i}`])));
    for (const id of finished) await engine.waitForState(id, 'COMPLETED', 30_000);
    const waiting = await engine.dispatch('Waiter', ['never', 600_000]);
    await engine.waitForHistory(waiting, (h) => h.some((e) => e.type === 'DecisionCompleted'), 'the waiter to park');

    await waitFor(async () => (await Promise.all(finished.map((id) => engine.client.workflow('demo', environment, id)))).every((w) => w === null), {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: 'the finished workflows to be gone from the read model',
    });
    const store = new EsdbEventStore(storeUrl, { callTimeoutMs: 5_000 });
    try {
      for (const id of finished) expect([await store.wasDeleted(`workflow-${id}`), await store.readStream(`workflow-${id}`)]).toEqual([true, []]);
      expect(await store.wasDeleted(`workflow-${waiting}`)).toBe(false);
    } finally {
      await store.close();
    }
    expect((await engine.workflow(waiting)).state).toBe('RUNNING');
  }, 120_000);

  it("with the server gone, a token the instance knows is still taken by viewer: the token check's read of the token's stream gives up and the read models' answer stands", async () => {
    const fake = await startFakeProcess();
    const service = await startService({ storeUrl: fake.url, env: { READ_MODEL_PATH: readModelPath() } });
    services.push(service);
    expect((await service.gql('{ viewer { role } }')).body).toEqual({ data: { viewer: { role: expect.any(String) } } });
    await fake.stop();
    const answer = await service.gql('{ viewer { role } }');
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: { data: { viewer: { role: expect.any(String) } } } });
    await service.logged(/token check: could not read token \S+'s stream/);
  }, 60_000);
});
