/**
 * The auditor's and the deployer's CLI: `baton history` prints a workflow's stream from the store,
 * `baton replay` checks workflow code against a recorded history (OK for the code that made it,
 * NON_DETERMINISTIC for code that changed shape).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEventStore } from '../../src/event-store/create-event-store.js';
import { Engine, unique } from '../engine/engine-helpers.js';
import { ROOT, Service, startService } from '../support/service.js';
import { FIXTURES_MODULE, FixtureWorker, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';

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
  let looperId: string;

  beforeAll(async () => {
    service = await startService();
    const environment = unique('cli');
    worker = await startWorker({ url: service.url, token: service.token, environment });
    const engine = new Engine(service, environment);
    workflowId = await engine.dispatch('Shape');
    await engine.send({ id: workflowId }, 'continue');
    await engine.waitForState(workflowId);
    looperId = await engine.dispatch('Looper', [0, 3]);
    await engine.waitForState(looperId);
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

  it('replay checks the current run of a workflow that continued as new (read from its end)', () => {
    const history = baton(service.storeUrl, ['history', looperId]).stdout.trim().split('\n');
    const lastRun = history.length - history.findLastIndex((line) => /\bWorkflowContinuedAsNew\b/.test(line));
    const { code, stdout } = baton(service.storeUrl, ['replay', FIXTURES_MODULE, looperId]);
    expect({ code, stdout }).toEqual({ code: 0, stdout: expect.stringMatching(new RegExp(`^OK: Looper replays 2 recorded decisions of workflow ${looperId} \\(${lastRun} events\\)`)) });
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

/**
 * Reading a long stream and the whole log a page at a time (1,000 events): a store written through
 * the store's own API with 2,600 events, then `baton history` and `baton events` over it.
 */
describe('baton history and baton events over more than a page', () => {
  const dir = mkdtempSync(join(tmpdir(), 'baton-cli-events-'));
  const storeUrl = `sqlite:${join(dir, 'store.db')}`;
  const workflowId = '01a20000-0000-7000-8000-0000000000aa';
  const LONG = 2_100;

  beforeAll(async () => {
    const store = await createEventStore(storeUrl);
    try {
      const meta = { actor: 'test', appId: 'demo', environment: 'cli', correlationId: 'c' };
      await store.append(`workflow-${workflowId}`, [{ id: randomUUID(), type: 'WorkflowDispatched', data: { workflowId, name: 'Long' }, metadata: meta }]);
      for (let i = 1; i < LONG; i += 100) {
        const events = Array.from({ length: Math.min(100, LONG - i) }, (_, k) => ({ id: randomUUID(), type: 'TimerFired', data: { seq: i + k }, metadata: meta }));
        await store.append(`workflow-${workflowId}`, events);
        // Other streams in between, so the log interleaves.
        await store.append(`schedule-${randomUUID()}`, [{ id: randomUUID(), type: 'SchedulePaused', data: { pausedAt: new Date(0).toISOString() }, metadata: meta }]);
      }
      for (let i = 0; i < 479; i++) await store.append(`task-${randomUUID()}`, [{ id: randomUUID(), type: 'TaskDispatched', data: { n: i }, metadata: meta }]);
    } finally {
      await store.close();
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const lines = (stdout: string) => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { position: string; streamId: string; revision: number; type: string; data: { seq?: number } });

  it('history prints all 2,100 events of the stream, in order, past the first page', () => {
    const { code, stdout } = baton(storeUrl, ['history', workflowId, '--json']);
    expect(code).toBe(0);
    const events = lines(stdout);
    expect(events.map((e) => e.revision)).toEqual(Array.from({ length: LONG }, (_, i) => i));
    expect(events.at(-1)).toMatchObject({ type: 'TimerFired', data: { seq: LONG - 1 }, streamId: `workflow-${workflowId}` });
  });

  it('events prints the whole log (2,600 events) in position order, each with its stream, revision, data and metadata', () => {
    const { code, stdout, stderr } = baton(storeUrl, ['events']);
    expect(code).toBe(0);
    const events = lines(stdout);
    expect(events).toHaveLength(2_600);
    const positions = events.map((e) => BigInt(e.position));
    expect(positions.every((p, i) => i === 0 || p > positions[i - 1])).toBe(true);
    expect(events[0]).toMatchObject({ streamId: `workflow-${workflowId}`, revision: 0, type: 'WorkflowDispatched', metadata: { actor: 'test', appId: 'demo' } });
    expect(stderr).toMatch(new RegExp(`^2600 events printed of 2600 read; last position read: ${events.at(-1)!.position} `));
  });

  it('events filters by stream prefix and type, and --limit then --after resumes exactly where it stopped', () => {
    const workflow = lines(baton(storeUrl, ['events', '--stream', `workflow-${workflowId}`]).stdout);
    expect(workflow.map((e) => e.revision)).toEqual(Array.from({ length: LONG }, (_, i) => i));
    const others = lines(baton(storeUrl, ['events', '--stream', 'schedule-', 'task-', '--type', 'SchedulePaused']).stdout);
    expect(others).toHaveLength(21);
    expect(others.every((e) => e.streamId.startsWith('schedule-') && e.type === 'SchedulePaused')).toBe(true);

    const first = baton(storeUrl, ['events', '--type', 'TaskDispatched', '--limit', '300']);
    const resumeAt = /resume with --after (\d+)/.exec(first.stderr)![1];
    const rest = baton(storeUrl, ['events', '--type', 'TaskDispatched', '--after', resumeAt]);
    const all = lines(baton(storeUrl, ['events', '--type', 'TaskDispatched']).stdout);
    expect(all).toHaveLength(479);
    expect([...lines(first.stdout), ...lines(rest.stdout)]).toEqual(all);
  });

  it('a reader slower than the export still gets every line (the CLI hands its output over before it exits)', async () => {
    // About 70 KiB of lines: more than a pipe holds (64 KiB on Linux) and less than that plus the
    // stream's own buffer (16 KiB), so the export ends without waiting for the reader, with the
    // rest of its output still queued when it is done. Exiting then would drop that rest.
    const sizes = baton(storeUrl, ['events']).stdout.split('\n').filter(Boolean).map((line) => Buffer.byteLength(line) + 1);
    let limit = 0;
    for (let bytes = 0; bytes < 70 * 1024; limit++) bytes += sizes[limit];
    const child = spawn(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), 'events', '--limit', String(limit)], {
      cwd: ROOT,
      env: { ...process.env, EVENT_STORE_URL: storeUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Listened for from the start: the child may end before the test gets to wait for it.
    const closed = new Promise((resolve) => child.on('close', resolve));
    // Read nothing until the export says it is done. A 'readable' listener keeps the stream paused
    // and marks it as read: a stream nobody listens to is drained and its data dropped by Node
    // when the child exits (which it may, once its output fits in the pipe and the buffers).
    let reading = false;
    let stdout = '';
    const read = () => {
      if (!reading) return;
      for (let chunk = child.stdout.read(); chunk !== null; chunk = child.stdout.read()) stdout += chunk;
    };
    child.stdout.on('readable', read);
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    await waitFor(() => stderr.includes('events printed'), { timeoutMs: 30_000, description: 'the export to finish writing' });
    reading = true;
    read();
    const code = await closed;
    expect({ code, events: lines(stdout).length }).toEqual({ code: 0, events: limit });
  });

  it('a reader that stops early (as `| head` does) ends the export quietly, exit code 0', async () => {
    const child = spawn(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), 'events'], { cwd: ROOT, env: { ...process.env, EVENT_STORE_URL: storeUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });

  it('a bad --after or --limit is refused with a message, exit code 2', () => {
    for (const args of [['--after', 'yesterday'], ['--after', '-1'], ['--limit', '0'], ['--limit', 'all']]) {
      const { code, stdout, stderr } = baton(storeUrl, ['events', ...args]);
      expect({ args, code, stdout, stderr }).toEqual({ args, code: 2, stdout: '', stderr: expect.stringMatching(new RegExp(`^error: ${args[0]} takes`)) });
    }
  });
});
