/**
 * The public API as a client without an SDK uses it (README, schema.graphql).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

describe('workflows paging when retention deleted the row its cursor names', () => {
  // Finished workflows are deleted 0.86 s after their last change (swept every 100 ms); keyed
  // ones once their idempotency window (1 s) has passed too.
  let service: Service;
  const environment = 'edge-cursor';
  beforeAll(async () => {
    service = await startService({ env: { RETENTION_DAYS: '0.00001', RETENTION_SWEEP_MS: '100', IDEMPOTENCY_WINDOW_MS: '1000' } });
  });
  afterAll(async () => {
    await service?.stop();
  });

  const list = async (first: number, after: string | null) => {
    const r = await service.gql<{ workflows: { pageInfo: { endCursor: string | null; hasNextPage: boolean }; nodes: Array<{ id: string }> } }>(
      'query($e: String!, $first: Int, $after: String) { workflows(filter: { appId: "demo", environment: $e }, first: $first, after: $after) { pageInfo { endCursor hasNextPage } nodes { id } } }',
      { e: environment, first, after },
    );
    expect(r.body.errors).toBeUndefined();
    return r.body.data!.workflows;
  };

  it('goes on with the workflows dispatched after it, neither skipping nor repeating any', async () => {
    // Workflows dispatched with an idempotency key have derived ids (UUID v8), which are not in
    // dispatch order: paging is in dispatch order.
    const ids: string[] = [];
    for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) {
      const r = await service.gql<{ dispatchWorkflow: { id: string } }>(
        'mutation($i: DispatchWorkflowInput!) { dispatchWorkflow(input: $i) { id } }',
        { i: { appId: 'demo', environment, name: 'Paged', input: '[]', idempotencyKey: key } },
      );
      ids.push(r.body.data!.dispatchWorkflow.id);
    }
    // A cursor position whose next row by id is not its next row in dispatch order.
    const at = [0, 1, 2, 3].find((i) => {
      const others = ids.filter((_, j) => j !== i);
      const nextById = others.filter((id) => id > ids[i]).sort()[0];
      return nextById !== ids[i + 1];
    })!;
    expect(at).toBeDefined();

    const firstPage = await list(at + 1, null);
    expect(firstPage.nodes.map((n) => n.id)).toEqual(ids.slice(0, at + 1));
    const cursor = firstPage.pageInfo.endCursor!;
    const last = ids[at];

    // The workflow the cursor names finishes and retention deletes it before the next page is read.
    const terminated = await service.gql('mutation($i: TerminateWorkflowsInput!) { terminateWorkflows(input: $i) { changed } }', {
      i: { appId: 'demo', environment, selector: { id: last } },
    });
    expect(terminated.body.data).toEqual({ terminateWorkflows: { changed: 1 } });
    await waitFor(
      async () => (await service.gql('query($e: String!, $id: ID!) { workflow(appId: "demo", environment: $e, id: $id) { id } }', { e: environment, id: last })).body.data?.workflow === null,
      { timeoutMs: 20_000, intervalMs: 100, description: 'retention to delete the workflow the cursor names' },
    );

    const next = await list(50, cursor);
    expect(next.nodes.map((n) => n.id)).toEqual(ids.slice(at + 1));
  });
});

describe('an id in upper case, which a `{ id }` selector takes (README, Selectors)', () => {
  let service: Service;
  const environment = 'edge-case';
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(async () => {
    await service?.stop();
  });

  it('names the same workflow, task and schedule in the queries and the mutations that take an id', async () => {
    const dispatched = await service.gql(
      `mutation($w: DispatchWorkflowInput!, $t: DispatchTaskInput!, $s: ScheduleTaskInput!) {
        w: dispatchWorkflow(input: $w) { id } t: dispatchTask(input: $t) { id } s: scheduleTask(input: $s) { id } }`,
      {
        w: { appId: 'demo', environment, name: 'Cased', input: '[]' },
        t: { appId: 'demo', environment, name: 'cased', input: '[]' },
        s: { appId: 'demo', environment, name: 'cased', input: '[]', cron: '0 0 1 1 *' },
      },
    );
    expect(dispatched.body.errors).toBeUndefined();
    const { w, t, s } = dispatched.body.data as Record<'w' | 't' | 's', { id: string }>;
    const [W, T, S] = [w.id, t.id, s.id].map((id) => id.toUpperCase());

    // The selector takes it: the workflow is paused.
    const paused = await service.gql('mutation($i: PauseWorkflowsInput!) { pauseWorkflows(input: $i) { matched changed workflowIds } }', {
      i: { appId: 'demo', environment, selector: { id: W } },
    });
    expect(paused.body.data).toEqual({ pauseWorkflows: { matched: 1, changed: 1, workflowIds: [w.id] } });

    // Reading it back with the same id finds it.
    const read = await service.gql(
      `query($e: String!, $w: ID!, $t: ID!, $s: ID!) {
        workflow(appId: "demo", environment: $e, id: $w) { id state }
        awaitWorkflow(appId: "demo", environment: $e, id: $w, waitMs: 0) { id state }
        workflowHistory(appId: "demo", environment: $e, id: $w) { type }
        task(appId: "demo", environment: $e, id: $t) { id }
        schedule(appId: "demo", environment: $e, id: $s) { id }
        scheduleHistory(appId: "demo", environment: $e, id: $s) { type } }`,
      { e: environment, w: W, t: T, s: S },
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data).toEqual({
      workflow: { id: w.id, state: 'PAUSED' },
      awaitWorkflow: { id: w.id, state: 'PAUSED' },
      workflowHistory: [{ type: 'WorkflowDispatched' }, { type: 'WorkflowPaused' }],
      task: { id: t.id },
      schedule: { id: s.id },
      scheduleHistory: [{ type: 'ScheduleCreated' }],
    });

    const paused2 = await service.gql('mutation($i: PauseScheduleInput!) { pauseSchedule(input: $i) { id state } }', { i: { appId: 'demo', environment, id: S } });
    expect(paused2.body).toEqual({ data: { pauseSchedule: { id: s.id, state: 'PAUSED' } } });
  });

  it('filters workflows by a schedule id in upper case', async () => {
    const created = await service.gql('mutation($i: ScheduleWorkflowInput!) { scheduleWorkflow(input: $i) { id } }', {
      i: { appId: 'demo', environment, name: 'FromSchedule', input: '[]', cron: '0 0 1 1 *' },
    });
    const scheduleId = created.body.data.scheduleWorkflow.id as string;
    const triggered = await service.gql('mutation($i: TriggerScheduleInput!) { triggerSchedule(input: $i) { id } }', { i: { appId: 'demo', environment, id: scheduleId } });
    const workflowId = triggered.body.data.triggerSchedule.id as string;
    const listed = await service.gql(
      'query($f: WorkflowFilterInput!) { workflows(filter: $f) { totalCount nodes { id } } workflowCounts(filter: $f) { state count } }',
      { f: { appId: 'demo', environment, scheduleId: scheduleId.toUpperCase() } },
    );
    expect(listed.body.errors).toBeUndefined();
    expect(listed.body.data.workflows).toEqual({ totalCount: 1, nodes: [{ id: workflowId }] });
    expect(listed.body.data.workflowCounts.find((c: { state: string }) => c.state === 'RUNNING')).toEqual({ state: 'RUNNING', count: 1 });
  });
});

describe('an idempotency key with spaces around it (README, Retrying a dispatch safely)', () => {
  let service: Service;
  const environment = 'edge-key';
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(async () => {
    await service?.stop();
  });

  const dispatch = async (key: { field?: string; header?: string }) => {
    const response = await fetch(`${service.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${service.token}`, ...(key.header !== undefined ? { 'idempotency-key': key.header } : {}) },
      body: JSON.stringify({
        query: 'mutation($i: DispatchWorkflowInput!) { dispatchWorkflow(input: $i) { id } }',
        variables: { i: { appId: 'demo', environment, name: 'Keyed', input: '[]', ...(key.field !== undefined ? { idempotencyKey: key.field } : {}) } },
      }),
    });
    return (await response.json()) as { data?: { dispatchWorkflow: { id: string } } | null; errors?: unknown[] };
  };

  it('is the same key as the field and as the header (HTTP drops the spaces around a header value)', async () => {
    const first = await dispatch({ field: ' order-7 ' });
    expect(first.errors).toBeUndefined();
    // The retry sends the same key in the header: the same dispatch, not a second workflow.
    expect(await dispatch({ header: ' order-7 ' })).toEqual(first);
    // Both at once, the same value: they agree.
    expect(await dispatch({ field: ' order-7 ', header: ' order-7 ' })).toEqual(first);
  });
});
