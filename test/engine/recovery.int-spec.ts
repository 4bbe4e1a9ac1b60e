/**
 * Changed code and crashes: non-determinism caught and recovered from, versions kept across a
 * deploy, a worker SIGKILLed mid-task, the service SIGKILLed mid-workflow and restarted on the
 * same store. Workers heartbeat every 200 ms against LEASE_MS=1000, so a lost worker is noticed
 * within about a second. Each test has its own environment, so its workers see only its work.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';
import { Engine, after, freshLogFile, ofType, portOf, readLog, unique } from './engine-helpers.js';

const LEASE = { LEASE_MS: '1000' };

describe('recovery (LEASE_MS=1000, heartbeats every 200 ms)', () => {
  let service: Service;
  const worker = (environment: string, env: Record<string, string> = {}) =>
    startWorker({ url: service.url, token: service.token, environment, heartbeatMs: 200, env });

  beforeAll(async () => {
    service = await startService({ env: LEASE });
  });
  afterEach(() => killAllWorkers());
  afterAll(() => service?.stop());

  it('reports changed code as a NON_DETERMINISTIC failed decision, keeps the workflow running, and completes it with the original code', async () => {
    const env = unique('nondet');
    const engine = new Engine(service, env);
    const original = await worker(env);
    const id = await engine.dispatch('Shape');
    // the first task is done and the workflow waits for 'continue'
    await engine.waitForHistory(id, (events) => ofType(after(events, 'TaskCompleted'), 'DecisionCompleted').length === 1, 'a decision after the first task');
    await original.stop();

    const changed = await worker(env, { FIXTURE_VARIANT: 'changed' });
    await engine.send({ id }, 'continue');
    const events = await engine.waitForEventType(id, 'DecisionFailed');
    await changed.kill();

    const failure = ofType(events, 'DecisionFailed')[0].data;
    const firstCompletion = ofType(events, 'DecisionCompleted')[0];
    expect(failure.code).toBe('NON_DETERMINISTIC');
    expect(failure.historyPosition).toBe(firstCompletion.revision);
    expect(failure.message).toContain(`revision ${firstCompletion.revision}`);
    expect(failure.message).toMatch(/ScheduleTask #0 \(add\).*ScheduleTask #0 \(echo\)/);
    expect((await engine.workflow(id)).state).toBe('RUNNING');
    expect(ofType(events, 'TaskScheduled')).toHaveLength(1);

    await worker(env);
    const done = await engine.waitForState(id, 'COMPLETED', 20_000);
    expect(done.result).toEqual({ first: 'original', second: 'second', variant: 'original' });
  });

  it('keeps a running workflow on the version it started with after v2 is deployed', async () => {
    const env = unique('versions');
    const engine = new Engine(service, env);
    const beforeV2 = await worker(env, { FIXTURE_NO_V2: '1' });
    const old = await engine.dispatch('Versioned');
    await engine.waitForHistory(old, (events) => ofType(after(events, 'TaskCompleted'), 'DecisionCompleted').length === 1, 'the v1 workflow waiting for go');
    expect((await engine.workflow(old)).version).toBe('Versioned_v1');
    await beforeV2.stop();

    const withV2 = await worker(env); // serves Versioned_v1 and Versioned_v2
    expect(await engine.send({ name: 'Versioned' }, 'go')).toMatchObject({ matched: 1, changed: 1 });
    expect((await engine.waitForState(old)).result).toEqual({ version: 'v1' });
    const decisions = ofType(await engine.history(old), 'DecisionStarted');
    expect(new Set(decisions.map((e) => e.data.version))).toEqual(new Set(['Versioned_v1']));
    expect(decisions.at(-1)!.data.workerId).toBe(withV2.workerId);
  });

  // Regression (found here, fixed in cd567a2): the long poll of a worker that had gone away stayed
  // parked on the server and still claimed work for it; a first decision claimed that way pinned
  // the workflow to the old worker's version, so right after a deploy of v2 a dispatch ran v1.
  it('runs a dispatch of Name on the highest version once the new version is deployed (no claims for a worker that is gone)', async () => {
    const env = unique('deploy');
    const engine = new Engine(service, env);
    const beforeV2 = await worker(env, { FIXTURE_NO_V2: '1' });
    await engine.barrier(); // beforeV2 is idle, long-polling
    await beforeV2.stop();
    const withV2 = await worker(env);

    const fresh = await engine.dispatch('Versioned');
    const events = await engine.waitForEventType(fresh, 'TaskCompleted');
    const claims = ofType(events, 'DecisionStarted').map((e) => [e.data.workerId, e.data.version]);
    expect(claims[0]).toEqual([withV2.workerId, 'Versioned_v2']);
    expect(claims.filter(([workerId]) => workerId !== withV2.workerId)).toEqual([]);
    expect((await engine.workflow(fresh)).version).toBe('Versioned_v2');
    await engine.send({ id: fresh }, 'go');
    expect((await engine.waitForState(fresh)).result).toEqual({ version: 'v2' });
  });

  it('finishes the workflow on another worker when the one running its task is SIGKILLed', async () => {
    const env = unique('kill');
    const engine = new Engine(service, env);
    const log = freshLogFile();
    const workers = [await worker(env, { FIXTURE_LOG: log }), await worker(env, { FIXTURE_LOG: log })];
    const id = await engine.dispatch('Recoverable', [1500, 100]);
    const started = await waitFor(() => readLog(log).find((e) => e.workflowId === id && e.task === 'nap' && e.phase === 'start'), {
      timeoutMs: 10_000,
      description: 'the slow task to start',
    });
    const doomed = workers.find((w) => w.process.pid === started.pid)!;
    const survivor = workers.find((w) => w !== doomed)!;
    await doomed.kill();

    const done = await engine.waitForState(id, 'COMPLETED', 20_000);
    expect(done.result).toEqual(['one', 'two', 'three']);
    const events = await engine.history(id);
    const lapsed = ofType(events, 'TaskAttemptFailed').filter((e) => e.data.seq === 1);
    expect(lapsed.map((e) => [e.data.attempt, e.data.reason])).toEqual([[1, 'lease_expired']]);
    expect(lapsed[0].data.error.message).toContain(doomed.workerId);
    // the killed worker's last poll claims nothing after its death: the retry goes to the survivor
    const napStarts = ofType(events, 'TaskStarted').filter((e) => e.data.seq === 1);
    expect(napStarts.map((e) => e.data.workerId)).toEqual([doomed.workerId, survivor.workerId]);
    const afterKill = ofType(after(events, 'TaskAttemptFailed'), 'DecisionStarted').concat(ofType(after(events, 'TaskAttemptFailed'), 'TaskStarted'));
    expect(afterKill.every((e) => e.data.workerId === survivor.workerId)).toBe(true);
    const runs = readLog(log).filter((e) => e.workflowId === id);
    expect(runs.filter((e) => e.task === 'echo').map((e) => e.args[0])).toEqual(['one', 'three']);
    expect(runs.filter((e) => e.task === 'nap' && e.phase === 'end').map((e) => e.pid)).toEqual([survivor.process.pid]);
  });
});

describe('the service SIGKILLed mid-workflow and restarted on the same store', () => {
  let service: Service | undefined;
  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  it('finishes the workflow without running any completed task body again', async () => {
    service = await startService({ env: LEASE });
    const { storeUrl, token } = service;
    const port = portOf(service);
    const env = unique('crash');
    const log = freshLogFile();
    await startWorker({ url: service.url, token, environment: env, heartbeatMs: 200, env: { FIXTURE_LOG: log } });
    const engine = new Engine(service, env);
    const id = await engine.dispatch('Recoverable', [800, 1000]);

    // crash while the slow task runs, after the first task completed
    await waitFor(() => readLog(log).some((e) => e.workflowId === id && e.task === 'nap' && e.phase === 'start'), { timeoutMs: 10_000, description: 'the slow task to start' });
    const beforeCrash = await engine.history(id);
    expect(ofType(beforeCrash, 'TaskCompleted').map((e) => e.data.seq)).toEqual([0]);
    await service.kill();

    service = await startService({ storeUrl, env: { ...LEASE, PORT: port } });
    expect(service.url).toContain(`:${port}`);
    // the restarted service rebuilt its read models from the log (fixed in 161f239): the old token
    // still works and no new bootstrap token is created
    expect(service.output()).not.toMatch(/BATON_BOOTSTRAP_TOKEN=/);
    const restarted = new Engine(service, env, token);
    const done = await restarted.waitForState(id, 'COMPLETED', 30_000);
    expect(done.result).toEqual(['one', 'two', 'three']);

    const runs = readLog(log).filter((e) => e.workflowId === id);
    expect(runs.filter((e) => e.task === 'echo').map((e) => e.args[0])).toEqual(['one', 'three']);
    const events = await restarted.history(id);
    expect(ofType(events, 'TaskCompleted').map((e) => e.data.seq)).toEqual([0, 1, 3]);
    expect(ofType(events, 'TimerFired')).toHaveLength(1);
    expect(events.slice(0, beforeCrash.length)).toEqual(beforeCrash);
  });
});
