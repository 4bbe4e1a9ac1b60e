/**
 * The read side after retention and `baton rebuild`: a rebuild folds the log as it is after
 * retention deleted streams, and must leave the read models (and what an instance does with them
 * at start) as the live projection left them.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, Service, startService } from '../support/service.js';
import { readModelRows } from '../support/read-model-rows.js';
import { waitFor } from '../support/wait-for.js';
import { Schedules, unique } from '../schedules/schedule-helpers.js';
import { Engine } from '../engine/engine-helpers.js';
import { freshStoreUrl } from '../support/service.js';
import { FixtureWorker, startWorker } from '../support/worker.js';

function baton(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('baton rebuild after retention', () => {
  const running: Service[] = [];
  afterAll(async () => {
    for (const s of running.reverse()) await s.stop();
  });

  it("leaves a schedule's earlier dispatch, deleted by retention, done: the next start does not run it again", async () => {
    // 0.00003 days = 2.6 s, swept every 300 ms.
    const service = await startService({ env: { RETENTION_DAYS: '0.00003', RETENTION_SWEEP_MS: '300' } });
    running.push(service);
    const api = new Schedules(service, unique('rebuild-retention'));
    // Never fires by itself within the test: triggered by hand.
    const schedule = await api.scheduleWorkflow({ name: unique('Report'), cron: '0 0 1 1 *' });
    const first = (await api.trigger(schedule)).id;
    await waitFor(async () => (await api.workflows({ scheduleId: schedule })).some((w) => w.id === first), { description: 'the first triggered workflow' });
    await api.terminate(first);
    // A second dispatch: the first is no longer the schedule's last, so retention may delete it.
    const second = (await api.trigger(schedule)).id;
    await waitFor(async () => (await api.workflows({ scheduleId: schedule })).some((w) => w.id === second), { description: 'the second triggered workflow' });
    await waitFor(async () => !(await api.workflows({ scheduleId: schedule })).some((w) => w.id === first), {
      timeoutMs: 20_000,
      intervalMs: 200,
      description: 'retention to delete the first workflow',
    });
    await service.stop();

    const live = readModelRows(service.storeUrl);
    expect(baton(['rebuild'], { EVENT_STORE_URL: service.storeUrl })).toMatchObject({ code: 0, stderr: '' });
    const rebuilt = readModelRows(service.storeUrl);
    // The schedule's row as the live projection left it: no dispatch of it awaited.
    expect(rebuilt.rm_schedules).toEqual(live.rm_schedules);

    // Started on the rebuilt read models (retention off), the instance must not dispatch the
    // deleted occurrence again: the workflow list of the schedule stays [second].
    const again = await startService({ storeUrl: service.storeUrl, env: { LOG_LEVEL: 'info' } });
    running.push(again);
    const after = new Schedules(again, api.environment, api.appId, service.token);
    const third = (await after.trigger(schedule)).id;
    await waitFor(async () => (await after.workflows({ scheduleId: schedule })).some((w) => w.id === third), { description: 'the third triggered workflow' });
    expect((await after.workflows({ scheduleId: schedule })).map((w) => w.id).sort()).toEqual([second, third].sort());
    expect(again.messages()).not.toMatch(/left undispatched by a previous run/);
  }, 90_000);

  it("answers the same audit log after a rebuild: the API actions on workflows retention deleted go with them, live and rebuilt alike", async () => {
    const service = await startService({ env: { RETENTION_DAYS: '0.00003', RETENTION_SWEEP_MS: '300' } });
    running.push(service);
    const api = new Schedules(service, unique('rebuild-audit'));
    const dispatched = await api.gql('mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', {
      input: { appId: api.appId, environment: api.environment, name: unique('Audited'), input: '[]' },
    });
    const id = dispatched.body.data.dispatchWorkflow.id as string;
    await api.terminate(id);
    const audit = async (s: Service) =>
      (
        await s.gql('query($filter: AuditFilterInput!) { auditLog(filter: $filter, first: 100) { totalCount nodes { id actor action streamId } } }', {
          filter: { appId: api.appId, environment: api.environment },
        }, service.token)
      ).body.data.auditLog;
    // Before retention: the dispatch and the termination.
    expect((await audit(service)).nodes.map((n: { action: string }) => n.action)).toEqual(['WorkflowTerminated', 'WorkflowDispatched']);
    await waitFor(async () => (await api.workflows({})).length === 0, { timeoutMs: 20_000, intervalMs: 200, description: 'retention to delete the workflow' });
    const live = await audit(service);
    await service.stop();
    expect(baton(['rebuild'], { EVENT_STORE_URL: service.storeUrl })).toMatchObject({ code: 0, stderr: '' });
    const again = await startService({ storeUrl: service.storeUrl });
    running.push(again);
    // The audit log is the event log: the actions went with the workflow's events, live as in
    // the rebuild (the live read model used to keep them, and a rebuild lost them).
    expect(live).toEqual({ totalCount: 0, nodes: [] });
    expect(await audit(again)).toEqual(live);
  }, 60_000);

  it('two live instances folding one file, then a rebuild: every read-model row the same, over a mix of what the engine records', async () => {
    const storeUrl = freshStoreUrl();
    const a = await startService({ storeUrl });
    const b = await startService({ storeUrl });
    running.push(a, b);
    const token = a.token;
    const environment = unique('rebuild-mix');
    const workers: FixtureWorker[] = [];
    try {
      workers.push(await startWorker({ url: a.url, token, environment }), await startWorker({ url: b.url, token, environment }));
      const onA = new Engine(a, environment, token);
      const onB = new Engine(b, environment, token);
      const done = await Promise.all([onB.dispatch('Looper', [0, 3]), onA.dispatch('Sequential', ['s1'], 'tag:1'), onA.dispatch('Exhausted', ['boom'])]);
      const parent = await onA.dispatch('Parent', ['p1']);
      const versioned = await onB.dispatch('Versioned');
      const child = await onA.childOf(parent);
      await onB.waitForEventType(child, 'DecisionCompleted');
      await onB.send({ id: child }, 'release', 'now');
      done.push(parent, child);
      await onA.waitForHistory(versioned, (h) => h.filter((e) => e.type === 'DecisionCompleted').length >= 2, 'the versioned workflow waiting');
      await onA.send({ id: versioned }, 'go');
      done.push(versioned);
      const charge = await onB.dispatch('ChargeOrder', [unique('key')]);
      const queried = await onA.dispatch('Queried');
      const entity = await onB.dispatch('Entity', [0]);
      for (const id of done) await onA.waitForState(id);
      await onA.waitForState(charge, 'FAILED');
      expect(await onB.client.request('mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { changed } }', { input: { appId: 'demo', environment, selector: { id: charge } } })).toEqual({ retryWorkflows: { changed: 1 } });
      // Retried: completes on the worker that failed it once, fails again on the other (its fixture remembers keys per process).
      await onA.waitForHistory(charge, (h) => h.findLastIndex((e) => e.type === 'WorkflowRetried') < h.findLastIndex((e) => e.type === 'WorkflowCompleted' || e.type === 'WorkflowFailed'), 'the retried run to end');
      await onA.waitForEventType(queried, 'DecisionCompleted');
      await onB.send({ id: queried }, 'go');
      await onA.waitForState(queried);
      await onA.waitForEventType(entity, 'DecisionCompleted');
      await onA.send({ id: entity }, 'poke', 'again');
      await onB.waitForHistory(entity, (h) => h.some((e) => e.type === 'WorkflowContinuedAsNew'), 'a continue-as-new');
      await onB.pause({ id: entity });
      await onA.resume({ id: entity });
      await onB.terminate({ id: entity });
      const task = await onA.client.dispatchTask({ appId: 'demo', environment, name: 'alwaysFails', input: ['t'], tag: 'tag:t' });
      const taskState = async (s: Service) =>
        (await s.gql('query($e: String!, $id: ID!) { task(appId: "demo", environment: $e, id: $id) { state } }', { e: environment, id: task }, token)).body.data?.task?.state;
      await waitFor(async () => (await taskState(b)) === 'FAILED', { timeoutMs: 20_000, description: 'the task to fail' });
      await onB.client.request('mutation($input: RetryTaskInput!) { retryTask(input: $input) { state } }', { input: { appId: 'demo', environment, id: task } });
      await waitFor(async () => (await taskState(a)) === 'FAILED' && (await onA.client.request<any>('query($e: String!, $id: ID!) { task(appId: "demo", environment: $e, id: $id) { attempts } }', { e: environment, id: task })).task.attempts === 3, {
        timeoutMs: 20_000,
        description: 'the retried task to fail again',
      });
      const schedules = new Schedules(b, environment, 'demo', token);
      const schedule = await schedules.scheduleTask({ name: 'echo', cron: '0 0 1 1 *', input: '["s"]' });
      await new Schedules(a, environment, 'demo', token).trigger(schedule);
      await schedules.act('pause', schedule);
      await schedules.act('delete', schedule);
      await onA.barrier();
      await onB.barrier();
    } finally {
      for (const w of workers) await w.stop();
    }
    await a.stop();
    await b.stop();

    const live = readModelRows(storeUrl);
    expect(live.rm_workflows.length).toBeGreaterThan(8);
    expect(baton(['rebuild'], { EVENT_STORE_URL: storeUrl })).toMatchObject({ code: 0, stderr: '' });
    const rebuilt = readModelRows(storeUrl);
    for (const table of Object.keys(live)) expect({ table, rows: rebuilt[table] }).toEqual({ table, rows: live[table] });
  }, 120_000);

  it('read models started anew (a separate READ_MODEL_PATH deleted, as a restore says): a child retention deleted is not started again', async () => {
    const storeUrl = freshStoreUrl();
    const rmFile = join(mkdtempSync(join(tmpdir(), 'baton-rm-')), 'read-models.db');
    const service = await startService({ storeUrl, env: { READ_MODEL_PATH: rmFile, RETENTION_DAYS: '0.00003', RETENTION_SWEEP_MS: '300', IDEMPOTENCY_WINDOW_MS: '1000' } });
    running.push(service);
    const token = service.token;
    const environment = unique('fresh-read-models');
    let worker = await startWorker({ url: service.url, token, environment });
    const engine = new Engine(service, environment, token);
    let parent: string;
    let child: string;
    try {
      // The parent runs on (waits for an event that never comes); its detached child is released
      // and completes, and retention deletes it (a child's derived id is kept IDEMPOTENCY_WINDOW_MS).
      parent = await engine.dispatch('DispatchThenWait', ['c1']);
      child = await engine.childOf(parent);
      await engine.waitForEventType(child, 'DecisionCompleted');
      await engine.send({ id: child }, 'release', 'once');
      await engine.waitForState(child);
      await waitFor(async () => (await engine.client.workflow('demo', environment, child)) === null, {
        timeoutMs: 20_000,
        intervalMs: 200,
        description: 'retention to delete the finished child',
      });
    } finally {
      await worker.stop();
    }
    await service.stop();
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${rmFile}${suffix}`, { force: true });

    const again = await startService({ storeUrl, env: { READ_MODEL_PATH: rmFile } });
    running.push(again);
    worker = await startWorker({ url: again.url, token, environment });
    try {
      const after = new Engine(again, environment, token);
      // Effects are carried out in log order: once a later parent's child exists, the first
      // parent's ChildWorkflowStarted has been handled too.
      const later = await after.dispatch('DispatchThenWait', ['c2']);
      const laterChild = await after.childOf(later);
      await waitFor(async () => (await after.client.workflow('demo', environment, laterChild)) !== null, { description: 'the later child' });
      await after.effectsCaughtUp();
      expect(await after.client.workflow('demo', environment, child)).toBeNull();
      expect((await after.workflow(parent)).state).toBe('RUNNING');
    } finally {
      await worker.stop();
    }
  }, 90_000);
});
