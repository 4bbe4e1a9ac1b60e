import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import Database from '../../src/event-store/sqlite/better-sqlite3.js';
import { Engine, unique } from '../engine/engine-helpers.js';
import { Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { FixtureWorker, startWorker } from '../support/worker.js';
import { Schedules } from '../schedules/schedule-helpers.js';
import { expectData, gql } from '../api/api-helpers.js';

const rowsOf = (storeUrl: string, workflowId: string): number => {
  const db = new Database(storeUrl.slice('sqlite:'.length), { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM events WHERE stream_id = ?').get(`workflow-${workflowId}`) as { n: number }).n;
  } finally {
    db.close();
  }
};

/**
 * One instance as started by default (retention off), for the tests that need no more of it: each
 * works in its own environment and counts only there, and none deletes anything through retention.
 * Started by the first test that asks for it; the two describes that use it come first, and the
 * second stops it.
 */
let defaultInstance: Promise<Service> | undefined;
const defaultService = (): Promise<Service> => (defaultInstance ??= startService({ env: { LOG_LEVEL: 'info' } }));
const stopDefaultService = async (): Promise<void> => {
  const started = defaultInstance;
  defaultInstance = undefined;
  await (await started?.catch(() => undefined))?.stop();
};
afterAll(stopDefaultService);

describe('retention (RETENTION_DAYS)', () => {
  const running: Array<Service | FixtureWorker> = [];
  afterAll(async () => {
    for (const r of running.reverse()) await r.stop();
  });

  it('deletes finished workflows past the age from the store and the read models, and keeps running ones', async () => {
    // 0.00003 days = 2.6 s; the job runs every 300 ms.
    const env = { RETENTION_DAYS: '0.00003', RETENTION_SWEEP_MS: '300', LOG_LEVEL: 'info' };
    const service = await startService({ env });
    running.push(service);
    const environment = unique('retention');
    const worker = await startWorker({ url: service.url, token: service.token, environment });
    running.push(worker);
    const engine = new Engine(service, environment);
    const finished = await Promise.all(Array.from({ length: 4 }, (_, i) => engine.dispatch('Sequential', [`r${i}`])));
    for (const id of finished) await engine.waitForState(id);
    const waiting = await engine.dispatch('Waiter', ['never', 600_000]);
    await engine.waitForHistory(waiting, (h) => h.some((e) => e.type === 'DecisionCompleted'), 'the waiter to park');
    expect(rowsOf(service.storeUrl, finished[0])).toBeGreaterThan(0);

    await waitFor(async () => (await Promise.all(finished.map((id) => engine.client.workflow('demo', environment, id)))).every((w) => w === null), {
      timeoutMs: 20_000,
      intervalMs: 200,
      description: 'the finished workflows to be gone from the read model',
    });
    for (const id of finished) expect(rowsOf(service.storeUrl, id)).toBe(0);
    expect((await engine.workflow(waiting)).state).toBe('RUNNING');
    expect(rowsOf(service.storeUrl, waiting)).toBeGreaterThan(0);
    const list = await service.gql<{ workflows: { totalCount: number } }>(
      'query($e: String!) { workflows(filter: { appId: "demo", environment: $e }) { totalCount } }',
      { e: environment },
    );
    expect(list.body.data?.workflows.totalCount).toBe(1);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/^baton_retention_workflows_deleted_total [4-9]/m);
    await waitFor(() => /deleting finished workflows older than 0.00003 days/.test(service.output()), { description: 'the retention log line' });

    // After a restart (retention off) they stay gone, and the running one is still there.
    await worker.stop();
    await service.stop();
    const again = await startService({ storeUrl: service.storeUrl });
    running.push(again);
    const after = new Engine(again, environment, service.token);
    for (const id of finished) expect(await after.client.workflow('demo', environment, id)).toBeNull();
    expect((await after.workflow(waiting)).state).toBe('RUNNING');
  });

  it('is off by default', async () => {
    const service = await defaultService();
    await waitFor(() => /listening on/.test(service.output()), { description: 'the start-up log' });
    expect(service.output()).not.toMatch(/deleting finished workflows/);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/^baton_retention_workflows_deleted_total 0$/m);
  });
});

describe('retryWorkflows while another instance is deleting the workflows it lists', () => {
  let service: Service | undefined;
  let worker: FixtureWorker | undefined;
  afterAll(async () => {
    await worker?.stop();
    // The last to use the default instance: it does not sit idle while the describes below run.
    await stopDefaultService();
  });

  it('skips a workflow whose stream is gone and retries the others: no error after retrying part of them', async () => {
    // A sweep on another instance deletes the streams one statement at a time and records
    // WorkflowsExpired after: meanwhile this instance's read model still lists them as FAILED.
    // Deleting one stream's rows here is that moment. Retrying the gone workflow failed the whole
    // request (INTERNAL_SERVER_ERROR, or NOT_FOUND) after the workflows before it were retried.
    service = await defaultService();
    const environment = unique('swept');
    worker = await startWorker({ url: service.url, token: service.token, environment });
    const engine = new Engine(service, environment);
    const ids = await Promise.all(Array.from({ length: 6 }, () => engine.dispatch('Thrower', ['boom'])));
    for (const id of ids) await engine.waitForState(id, 'FAILED');
    await worker.stop(); // retried workflows stay RUNNING
    const gone = ids[3];
    const db = new Database(service.storeUrl.slice('sqlite:'.length));
    try {
      db.pragma('busy_timeout = 10000');
      db.prepare('DELETE FROM events WHERE stream_id = ?').run(`workflow-${gone}`);
    } finally {
      db.close();
    }
    const retry = (selector: Record<string, string>) =>
      gql(service!, 'mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { status matched changed } }', { input: { appId: 'demo', environment, selector } });
    expect(expectData(await retry({ name: 'Thrower' })).retryWorkflows).toEqual({ status: 'OK', matched: 6, changed: 5 });
    for (const id of ids.filter((id) => id !== gone)) expect((await engine.workflow(id)).state).toBe('RUNNING');
    expect(expectData(await retry({ id: gone })).retryWorkflows).toEqual({ status: 'OK', matched: 1, changed: 0 });
  });
});

describe('retention (RETENTION_DAYS) and what still reads a finished workflow', () => {
  // 0.00001 days = 0.86 s, swept every 100 ms.
  let service: Service;
  let worker: FixtureWorker;
  const environment = unique('retained');
  beforeAll(async () => {
    service = await startService({ env: { RETENTION_DAYS: '0.00001', RETENTION_SWEEP_MS: '100' } });
    worker = await startWorker({ url: service.url, token: service.token, environment });
  });
  afterAll(async () => {
    await worker?.stop();
    await service?.stop();
  });

  it('keeps a SKIP schedule firing: the last workflow it dispatched is kept, the earlier ones deleted', async () => {
    // Each run, finished at once, is past the age well before the next occurrence, 2 s later. The
    // overlap policy reads the last run's state; a deleted run read as unknown, which counts as
    // still running, and SKIP skipped every occurrence from then on, for good.
    const api = new Schedules(service, environment);
    const id = await api.scheduleWorkflow({ name: 'Noop', cron: '*/2 * * * * * *', overlapPolicy: 'SKIP' });
    const history = await waitFor(
      async () => {
        const events = await api.history(id);
        const fired = events.filter((e) => e.type === 'ScheduleFired').length;
        return fired >= 3 || events.some((e) => e.type === 'ScheduleOccurrenceSkipped') ? events : null;
      },
      { timeoutMs: 15_000, intervalMs: 100, description: 'three firings or a skipped occurrence' },
    );
    await api.act('delete', id);
    expect(history.filter((e) => e.type === 'ScheduleOccurrenceSkipped').map((e) => e.data)).toEqual([]);
    // Retention still deletes the runs before the last one.
    const [first] = history.filter((e) => e.type === 'ScheduleFired').map((e) => e.data.dispatchId as string);
    await waitFor(async () => (await api.workflows({ scheduleId: id })).every((w) => w.id !== first), {
      timeoutMs: 10_000,
      intervalMs: 100,
      description: 'the first run to be deleted',
    });
  });

  it('keeps a workflow dispatched with an idempotency key for the key\'s window: a retry answers it and runs nothing again', async () => {
    // IDEMPOTENCY_WINDOW_MS is 24 h here. The key's id is derived from the key, and a retry
    // dispatches into that id when its stream does not exist: once retention had deleted the
    // finished workflow, a retry within the window started it again, under the same id.
    const engine = new Engine(service, environment);
    const key = unique('charge');
    const dispatch = async () =>
      expectData(
        await gql(service, 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', {
          input: { appId: 'demo', environment, name: 'Sequential', input: '["once"]', idempotencyKey: key },
        }),
      ).dispatchWorkflow.id as string;
    const id = await dispatch();
    await engine.waitForState(id);
    const before = await engine.history(id);
    // A workflow without a key, finished after it, deleted: the sweeps went past the keyed one's age.
    const plain = await engine.dispatch('Noop');
    await engine.waitForState(plain);
    await waitFor(async () => (await engine.client.workflow('demo', environment, plain)) === null, {
      timeoutMs: 10_000,
      intervalMs: 100,
      description: 'the workflow without a key to be deleted',
    });
    expect(await dispatch()).toBe(id);
    expect((await engine.workflow(id)).state).toBe('COMPLETED');
    expect(await engine.history(id)).toEqual(before);
  });
});

describe('retention past an idempotency key window (IDEMPOTENCY_WINDOW_MS=1000)', () => {
  let service: Service;
  let worker: FixtureWorker;
  const environment = unique('rewindowed');
  beforeAll(async () => {
    service = await startService({ env: { RETENTION_DAYS: '0.00001', RETENTION_SWEEP_MS: '100', IDEMPOTENCY_WINDOW_MS: '1000' } });
    worker = await startWorker({ url: service.url, token: service.token, environment });
  });
  afterAll(async () => {
    await worker?.stop();
    await service?.stop();
  });

  it('a retry with the key after its workflow was deleted starts a new one, as after any window', async () => {
    // The deleted workflow's state stayed in the instance's stream cache: dispatching into its id
    // decided nothing ("already exists"), the store had no such stream, and the retry answered
    // INTERNAL_SERVER_ERROR.
    const engine = new Engine(service, environment);
    const key = unique('nightly');
    const dispatch = () =>
      gql(service, 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', {
        input: { appId: 'demo', environment, name: 'Noop', input: '[]', idempotencyKey: key },
      });
    const first = expectData(await dispatch()).dispatchWorkflow.id as string;
    await engine.waitForState(first);
    await waitFor(async () => (await engine.client.workflow('demo', environment, first)) === null, {
      timeoutMs: 10_000,
      intervalMs: 100,
      description: 'the keyed workflow to be deleted once its window and age passed',
    });
    const again = expectData(await dispatch()).dispatchWorkflow.id as string;
    await engine.waitForState(again);
    expect(expectData(await dispatch()).dispatchWorkflow.id).toBe(again);
  });
});

describe('retention deleting an earlier generation of a key reused after its window (IDEMPOTENCY_WINDOW_MS=6000, age 9 s)', () => {
  let service: Service;
  let worker: FixtureWorker;
  const environment = unique('generations');
  beforeAll(async () => {
    // The age (9 s) between one window and two: the first generation outlives its window, a
    // reuse starts the second beside it, and retention deletes the first within the second's window.
    service = await startService({ env: { RETENTION_DAYS: String(9 / 86_400), RETENTION_SWEEP_MS: '100', IDEMPOTENCY_WINDOW_MS: '6000' } });
    worker = await startWorker({ url: service.url, token: service.token, environment });
  });
  afterAll(async () => {
    await worker?.stop();
    await service?.stop();
  });

  it('a retry of the later generation within its window answers it: the deleted one is not started again under its old id', async () => {
    const engine = new Engine(service, environment);
    const key = unique('weekly');
    const dispatch = async () =>
      expectData(
        await gql(service, 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', {
          input: { appId: 'demo', environment, name: 'Noop', input: '[]', idempotencyKey: key },
        }),
      ).dispatchWorkflow.id as string;
    const first = await dispatch();
    const firstAt = Date.now();
    await engine.waitForState(first);
    await waitFor(() => Date.now() - firstAt > 6_200, { timeoutMs: 10_000, intervalMs: 50, description: 'the first window to pass' });
    const second = await dispatch();
    const secondAt = Date.now();
    expect(second).not.toBe(first);
    await waitFor(async () => (await engine.client.workflow('demo', environment, first)) === null, {
      timeoutMs: 15_000,
      intervalMs: 50,
      description: 'retention to delete the first generation',
    });
    const retried = await dispatch();
    // Within the second generation's window (the margin is seconds; a machine too slow for it says so).
    expect({ withinWindow: Date.now() - secondAt < 6_000 }).toEqual({ withinWindow: true });
    expect(retried).toBe(second);
    expect(await engine.client.workflow('demo', environment, first)).toBeNull();
    const listed = await gql(service, 'query($environment: String!) { workflows(filter: { appId: "demo", environment: $environment }) { totalCount } }', { environment });
    expect(expectData(listed).workflows.totalCount).toBe(1);
  });
});

describe('what retention remembers of the streams it deletes (deleted_streams)', () => {
  let service: Service;
  let worker: FixtureWorker;
  const environment = unique('remembered');
  beforeAll(async () => {
    service = await startService({ env: { RETENTION_DAYS: String(2 / 86_400), RETENTION_SWEEP_MS: '100', IDEMPOTENCY_WINDOW_MS: '1000' } });
    worker = await startWorker({ url: service.url, token: service.token, environment });
  });
  afterAll(async () => {
    await worker?.stop();
    await service?.stop();
  });

  const remembered = (): string[] => {
    const db = new Database(service.storeUrl.slice('sqlite:'.length), { readonly: true });
    try {
      return (db.prepare('SELECT stream_id FROM deleted_streams').all() as Array<{ stream_id: string }>).map((r) => r.stream_id);
    } finally {
      db.close();
    }
  };

  const rememberedFor = (owner: string): string[] => {
    const db = new Database(service.storeUrl.slice('sqlite:'.length), { readonly: true });
    try {
      return (db.prepare('SELECT stream_id FROM deleted_owned_streams WHERE owner = ?').all(owner) as Array<{ stream_id: string }>).map((r) => r.stream_id);
    } finally {
      db.close();
    }
  };

  it("an idempotency key's generation, which a dispatch walks past, and a child's id only while its parent is stored (a replay of its creation asks): the table does not grow with every child ever deleted", async () => {
    const engine = new Engine(service, environment);
    const keyed = expectData(
      await gql(service, 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', {
        input: { appId: 'demo', environment, name: 'ManyChildren', input: '[2]', idempotencyKey: unique('key') },
      }),
    ).dispatchWorkflow.id as string;
    await engine.waitForState(keyed);
    const listed = await gql(service, 'query($environment: String!, $parentId: ID) { workflows(filter: { appId: "demo", environment: $environment, parentId: $parentId }) { nodes { id } } }', {
      environment,
      parentId: keyed,
    });
    const children = (expectData(listed).workflows.nodes as Array<{ id: string }>).map((n) => n.id);
    expect(children).toHaveLength(2);
    await waitFor(async () => (await Promise.all([keyed, ...children].map((id) => engine.client.workflow('demo', environment, id)))).every((w) => w === null), {
      timeoutMs: 20_000,
      intervalMs: 50,
      description: 'retention to delete the parent and its children',
    });
    const rows = remembered();
    expect(rows).toContain(`workflow-${keyed}`);
    for (const id of children) expect(rows).not.toContain(`workflow-${id}`);
    // Nor kept for the parent: deleted, its log can no longer replay the children's creation.
    expect(rememberedFor(`workflow-${keyed}`)).toEqual([]);
  });
});
