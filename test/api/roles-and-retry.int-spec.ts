import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Service, createTokenViaCli, startService } from '../support/service.js';
import { FixtureLogEntry } from '../support/fixtures/workflows.js';
import { FixtureWorker, killAllWorkers, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';

/**
 * Token roles on every operation, retryWorkflows / retryTask, and the queries the dashboard reads
 * (counts, failures, activity, workers, audit), against the real service and a real worker.
 */
const ENV = 'roles';
const scope = { appId: 'demo', environment: ENV };

const DISPATCH = 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }';
const WORKFLOW = 'query($id: ID!) { workflow(appId: "demo", environment: "roles", id: $id) { id state error output } }';

describe('roles, retry and dashboard queries', () => {
  let service: Service;
  let worker: FixtureWorker | undefined;
  const tokens: Record<string, string> = {};
  const log = join(mkdtempSync(join(tmpdir(), 'baton-retry-')), 'fixture.log');
  const entries = (): FixtureLogEntry[] => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);

  beforeAll(async () => {
    service = await startService({ env: { WORKER_GONE_MS: '500' } });
    // Issued together (each is a CLI process of its own), as issueTokens does.
    [tokens.operator, tokens['read-only'], tokens.worker, tokens.admin] = await Promise.all([
      ...['operator', 'read-only', 'worker'].map((role) => createTokenViaCli(service.storeUrl, ['demo'], [], role)),
      createTokenViaCli(service.storeUrl, ['demo']),
    ]);
    // The service reads them from the log: each accepted before the tests use it.
    for (const token of Object.values(tokens)) {
      await waitFor(async () => (await service.gql('{ __typename }', {}, token)).status === 200, { timeoutMs: 15_000, description: 'the service to accept a token made by the CLI' });
    }
  });
  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  const state = async (id: string) => (await service.gql(WORKFLOW, { id })).body.data?.workflow;

  it('tells each token its role; a token created without --role is admin', async () => {
    for (const role of ['admin', 'operator', 'read-only', 'worker']) {
      const res = await service.gql('{ viewer { role capabilities apps } }', {}, tokens[role]);
      expect(res.body.data.viewer.role).toBe(role);
    }
    expect((await service.gql('{ viewer { role } }')).body.data.viewer.role).toBe('admin');
  });

  it('refuses, with FORBIDDEN, every operation outside the role and does nothing', async () => {
    const dispatch = (token: string) => service.gql(DISPATCH, { input: { ...scope, name: 'Noop', input: '[]' } }, token);
    const list = (token: string) => service.gql('query($f: WorkflowFilterInput!) { workflows(filter: $f) { totalCount } }', { f: scope }, token);
    const poll = (token: string) =>
      service.gql('mutation($input: PollWorkInput!) { pollWork(input: $input) { ref } }', { input: { ...scope, workerId: 'probe', workflows: [], tasks: [], waitMs: 0 } }, token);

    const readOnlyDispatch = await dispatch(tokens['read-only']);
    expect(readOnlyDispatch.body.errors?.[0].extensions?.code).toBe('FORBIDDEN');
    expect(readOnlyDispatch.body.errors?.[0].message).toMatch(/read-only token may not call dispatchWorkflow/);
    expect((await list(tokens['read-only'])).body.data.workflows.totalCount).toBe(0);
    expect((await poll(tokens['read-only'])).body.errors?.[0].extensions?.code).toBe('FORBIDDEN');

    expect((await dispatch(tokens.worker)).body.errors?.[0].extensions?.code).toBe('FORBIDDEN');
    expect((await list(tokens.worker)).body.errors?.[0].extensions?.code).toBe('FORBIDDEN');
    expect((await poll(tokens.worker)).body.data.pollWork).toEqual([]);

    expect((await dispatch(tokens.operator)).body.data.dispatchWorkflow.id).toBeDefined();
    expect((await poll(tokens.operator)).body.errors?.[0].extensions?.code).toBe('FORBIDDEN');
    const retry = await service.gql('mutation($input: RetryTaskInput!) { retryTask(input: $input) { id } }', { input: { ...scope, id: '00000000-0000-7000-8000-000000000000' } }, tokens['read-only']);
    expect(retry.body.errors?.[0].extensions?.code).toBe('FORBIDDEN');
    expect((await list(tokens.admin)).body.data.workflows.totalCount).toBe(1);
  });

  it('retries a failed workflow from its last successful step, not from the start', async () => {
    worker = await startWorker({ url: service.url, token: tokens.worker, environment: ENV, env: { FIXTURE_LOG: log } });
    const id = (await service.gql(DISPATCH, { input: { ...scope, name: 'ChargeOrder', input: '["A-1"]', tag: 'order:A-1' } })).body.data.dispatchWorkflow.id;
    const failed = await waitFor(async () => ((await state(id))?.state === 'FAILED' ? state(id) : null), { timeoutMs: 20_000, description: 'ChargeOrder to fail' });
    expect(failed.error).toBe('payment gateway refused A-1');

    const failures = await service.gql('query { failures(appId: "demo", environment: "roles") { kind name error count ids capped } }');
    expect(failures.body.data.failures).toEqual([{ kind: 'WORKFLOW', name: 'ChargeOrder', error: 'payment gateway refused A-1', count: 1, ids: [id], capped: false }]);
    const counts = await service.gql('query($f: WorkflowFilterInput!) { workflowCounts(filter: $f) { state count } }', { f: { ...scope, name: 'ChargeOrder' } });
    expect(counts.body.data.workflowCounts).toContainEqual({ state: 'FAILED', count: 1 });

    const refused = await service.gql('mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { status } }', { input: { ...scope, selector: { id } } }, tokens['read-only']);
    expect(refused.body.errors?.[0].extensions?.code).toBe('FORBIDDEN');
    expect((await state(id)).state).toBe('FAILED');

    const retried = await service.gql('mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { status matched changed workflowIds } }', { input: { ...scope, selector: { name: 'ChargeOrder', tag: 'order:A-1' } } }, tokens.operator);
    expect(retried.body.data.retryWorkflows).toEqual({ status: 'OK', matched: 1, changed: 1, workflowIds: [id] });
    const done = await waitFor(async () => ((await state(id))?.state === 'COMPLETED' ? state(id) : null), { timeoutMs: 20_000, description: 'ChargeOrder to complete after the retry' });
    expect(JSON.parse(done.output)).toEqual({ echoed: 'A-1', charged: 'charged A-1' });
    expect(entries().filter((e) => e.task === 'echo' && e.workflowId === id)).toHaveLength(1);

    const history = await service.gql('query($id: ID!) { workflowHistory(appId: "demo", environment: "roles", id: $id) { type metadata } }', { id });
    const retriedEvent = history.body.data.workflowHistory.find((e: { type: string }) => e.type === 'WorkflowRetried');
    const operatorId = (await service.gql('{ viewer { tokenId } }', {}, tokens.operator)).body.data.viewer.tokenId;
    expect(JSON.parse(retriedEvent.metadata).actor).toBe(operatorId);

    const again = await service.gql('mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { matched changed } }', { input: { ...scope, selector: { id } } });
    expect(again.body.data.retryWorkflows).toEqual({ matched: 1, changed: 0 });

    const audit = await service.gql('query($f: AuditFilterInput!) { auditLog(filter: $f) { totalCount nodes { actor action streamId } } }', { f: { ...scope, actor: operatorId } });
    expect(audit.body.data.auditLog.nodes.map((n: { action: string }) => n.action)).toEqual(['WorkflowRetried', 'WorkflowDispatched']);
    const activity = await service.gql('query { workflowActivity(appId: "demo", environment: "roles", minutes: 5) { started completed failed } }');
    const sum = (k: string) => activity.body.data.workflowActivity.reduce((n: number, b: Record<string, number>) => n + b[k], 0);
    expect(sum('completed')).toBeGreaterThanOrEqual(1);
    // The failure before the retry stays in the chart: it happened.
    expect(sum('failed')).toBeGreaterThanOrEqual(1);
    expect(sum('started')).toBeGreaterThanOrEqual(1);
  });

  it('retries a failed standalone task', async () => {
    const id = (await service.gql('mutation($input: DispatchTaskInput!) { dispatchTask(input: $input) { id } }', { input: { ...scope, name: 'failsFirstTime', input: '["T-1"]' } })).body.data.dispatchTask.id;
    const task = async () => (await service.gql('query($id: ID!) { task(appId: "demo", environment: "roles", id: $id) { state error output } }', { id })).body.data.task;
    await waitFor(async () => (await task()).state === 'FAILED', { timeoutMs: 20_000, description: 'the task to fail' });
    const retry = (token?: string) => service.gql('mutation($input: RetryTaskInput!) { retryTask(input: $input) { id state } }', { input: { ...scope, id } }, token);
    expect((await retry(tokens.operator)).body.data.retryTask.id).toBe(id);
    await waitFor(async () => (await task()).state === 'COMPLETED', { timeoutMs: 20_000, description: 'the task to complete after retryTask' });
    expect((await task()).output).toBe('"charged T-1"');
    expect((await retry()).body.errors?.[0].extensions?.code).toBe('CONFLICT');
  });

  it('lists connected workers with the names they serve, and names with work but no worker', async () => {
    const WORKERS = 'query { workers(appId: "demo", environment: "roles") { workers { workerId connected tasks workflows } waiting { kind name count served } } }';
    const listed = await waitFor(async () => (await service.gql(WORKERS)).body.data.workers.workers.find((w: { workerId: string; connected: boolean }) => w.workerId === worker!.workerId && w.connected));
    expect(listed.workflows).toContain('ChargeOrder');
    await worker!.stop();
    await waitFor(async () => (await service.gql(WORKERS)).body.data.workers.workers.find((w: { workerId: string; connected: boolean }) => w.workerId === worker!.workerId && !w.connected), {
      timeoutMs: 10_000,
      description: 'the stopped worker to be listed as disconnected',
    });
    await service.gql(DISPATCH, { input: { ...scope, name: 'Orphan', input: '[]' } });
    const waiting = (await service.gql(WORKERS)).body.data.workers.waiting;
    expect(waiting).toContainEqual({ kind: 'DECISION', name: 'Orphan', count: 1, served: false });
  });
});
