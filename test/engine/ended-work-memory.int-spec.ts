/**
 * The engine holds in memory the work in flight, never the store's history: a workflow or a
 * standalone task that ends leaves it, failed ones included. Failed ones used to stay (so that a
 * retry could find them), one state each for good: measured on the built service, heap after a
 * full GC grew by 6 MiB per 10,000 failed workflows and never came down, while completed ones
 * leveled off. A retry brings a failed one back from its stream, as after a restart.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { type Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const ENV = 'ended-work';
const WORKFLOWS = 100;
const TASKS = 50;

let service: Service;

beforeAll(async () => {
  service = await startService();
});

afterAll(async () => {
  await killAllWorkers();
  await service?.stop();
});

async function held(kind: 'workflow' | 'task'): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`baton_engine_held{kind="${kind}"} `));
  expect({ kind, present: line !== undefined }).toEqual({ kind, present: true });
  return Number(line!.split(' ')[1]);
}

const scope = { appId: 'demo', environment: ENV };
const count = async (query: string, filter: Record<string, unknown>) => (await service.gql(query, { f: { ...scope, ...filter } })).body.data;

describe('ended work leaves the engine', () => {
  it('holds no failed workflow or task once they failed, and a retry brings one back', async () => {
    await startWorker({ url: service.url, token: service.token, environment: ENV, concurrency: 20 });
    const workflowIds: string[] = [];
    for (let i = 0; i < WORKFLOWS; i++) {
      const r = await service.gql('mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', { input: { ...scope, name: 'Thrower', input: `["boom ${i}"]` } });
      workflowIds.push(r.body.data.dispatchWorkflow.id);
    }
    for (let i = 0; i < TASKS; i++) {
      await service.gql('mutation($input: DispatchTaskInput!) { dispatchTask(input: $input) { id } }', { input: { ...scope, name: 'rejectsForGood', input: `["no ${i}"]` } });
    }
    await waitFor(
      async () => {
        const workflows = await count('query($f: WorkflowFilterInput!) { workflows(filter: $f, first: 1) { totalCount } }', { state: 'FAILED' });
        const tasks = await count('query($f: TaskFilterInput!) { tasks(filter: $f, first: 1) { totalCount } }', { state: 'FAILED' });
        return workflows.workflows.totalCount === WORKFLOWS && tasks.tasks.totalCount === TASKS;
      },
      { timeoutMs: 60_000, description: `${WORKFLOWS} workflows and ${TASKS} tasks to fail` },
    );
    // The read models are up to date with the failures; the engine's index is fed by the same batches.
    await waitFor(async () => (await held('workflow')) === 0 && (await held('task')) === 0, { timeoutMs: 10_000, description: 'the engine to hold nothing' });

    const retried = await service.gql('mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { matched changed } }', { input: { ...scope, selector: { id: workflowIds[0] } } });
    expect(retried.body.data.retryWorkflows).toEqual({ matched: 1, changed: 1 });
    // Back in the engine, decided again by the worker (it throws again: the same code), and gone once more.
    await waitFor(
      async () => {
        const history = (await service.gql('query($id: ID!) { workflowHistory(appId: "demo", environment: "ended-work", id: $id) { type } }', { id: workflowIds[0] })).body.data.workflowHistory;
        const types = history.map((e: { type: string }) => e.type);
        return types.indexOf('WorkflowRetried') >= 0 && types.lastIndexOf('WorkflowFailed') > types.indexOf('WorkflowRetried');
      },
      { timeoutMs: 20_000, description: 'the retried workflow to run and fail again' },
    );
    await waitFor(async () => (await held('workflow')) === 0, { timeoutMs: 10_000, description: 'the engine to hold nothing again' });
  }, 120_000);
});
