/**
 * The auditor's and the deployer's CLI: `baton history` prints a workflow's stream from the store,
 * `baton replay` checks workflow code against a recorded history (OK for the code that made it,
 * NON_DETERMINISTIC for code that changed shape).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Engine, unique } from '../engine/engine-helpers.js';
import { ROOT, Service, startService } from '../support/service.js';
import { FIXTURES_MODULE, FixtureWorker, startWorker } from '../support/worker.js';

function baton(storeUrl: string, args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), ...args], {
    cwd: ROOT,
    env: { ...process.env, EVENT_STORE_URL: storeUrl, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('baton history and baton replay', () => {
  let service: Service;
  let worker: FixtureWorker;
  let workflowId: string;

  beforeAll(async () => {
    service = await startService();
    const environment = unique('cli');
    worker = await startWorker({ url: service.url, token: service.token, environment });
    const engine = new Engine(service, environment);
    workflowId = await engine.dispatch('Shape');
    await engine.send({ id: workflowId }, 'continue');
    await engine.waitForState(workflowId);
    await worker.stop();
    await service.stop();
  });
  afterAll(async () => {
    await worker?.stop();
    await service?.stop();
  });

  it('history prints every event of the stream, in order', () => {
    const { code, stdout } = baton(service.storeUrl, ['history', workflowId]);
    expect(code).toBe(0);
    const types = stdout.trim().split('\n').map((line) => line.trim().split(/\s+/)[2]);
    expect(types[0]).toBe('WorkflowDispatched');
    expect(types).toContain('WorkflowEventReceived');
    expect(types[types.length - 1]).toBe('WorkflowCompleted');
  });

  it('history --json prints one JSON event per line with its data and metadata', () => {
    const { code, stdout } = baton(service.storeUrl, ['history', workflowId, '--json']);
    expect(code).toBe(0);
    const first = JSON.parse(stdout.split('\n')[0]);
    expect(first).toMatchObject({ revision: 0, type: 'WorkflowDispatched', data: { workflowId, name: 'Shape' } });
    expect(first.metadata.actor).toMatch(/\S/);
  });

  it('replay accepts the code that made the history', () => {
    const { code, stdout } = baton(service.storeUrl, ['replay', FIXTURES_MODULE, workflowId]);
    expect({ code, stdout }).toEqual({ code: 0, stdout: expect.stringMatching(/^OK: Shape replays \d+ recorded decisions/) });
  });

  it('replay names the revision where changed code departs from the history', () => {
    const { code, stdout } = baton(service.storeUrl, ['replay', FIXTURES_MODULE, workflowId], { FIXTURE_VARIANT: 'changed' });
    expect(code).toBe(1);
    expect(stdout).toMatch(/^NON_DETERMINISTIC at revision \d+: .*ScheduleTask #0 \(add\).*ScheduleTask #0 \(echo\)/);
  });

  it('an unknown workflow id is an error, not an empty history', () => {
    const { code, stderr } = baton(service.storeUrl, ['history', '01a20000-0000-7000-8000-000000000000']);
    expect(code).toBe(1);
    expect(stderr).toMatch(/no workflow/);
  });
});
