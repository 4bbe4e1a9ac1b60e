/** Helpers for the schedule integration suites: the API as app `demo` sees it, and reading the store. */
import { expect } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GqlResponse, ROOT, Service } from '../support/service.js';

export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export const unique = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

export const SCHEDULE_TASK = 'mutation($input: ScheduleTaskInput!) { scheduleTask(input: $input) { id nextFireAt } }';
export const SCHEDULE_WORKFLOW = 'mutation($input: ScheduleWorkflowInput!) { scheduleWorkflow(input: $input) { id nextFireAt } }';
const SCHEDULE_FIELDS =
  'id appId environment kind name input tag cron timezone overlapPolicy catchUpWindowMs state nextFireAt lastFiredAt lastOccurrence lastDispatchId bufferedOccurrence firedCount skippedCount triggeredCount createdAt updatedAt';

export interface HistoryRow {
  revision: number;
  type: string;
  recordedAt: string;
  data: any;
}

/** Asserts no errors and returns `data`. */
export function data<T = any>(response: GqlResponse<T>): T {
  if (response.body.errors?.length || response.status !== 200) {
    throw new Error(`expected data, got status ${response.status}: ${JSON.stringify(response.body).slice(0, 1000)}`);
  }
  return response.body.data as T;
}

/** Asserts exactly one error with `code` (and `field`, when given) and returns its message. */
export function error(response: GqlResponse, code: string, field?: string): string {
  const context = JSON.stringify(response.body).slice(0, 800);
  expect({ context, count: response.body.errors?.length ?? 0 }).toEqual({ context, count: 1 });
  const [e] = response.body.errors!;
  expect({ context, code: e.extensions?.code }).toEqual({ context, code });
  if (field !== undefined) expect({ context, field: e.extensions?.field }).toEqual({ context, field });
  expect(response.body.data ?? null).toBeNull();
  return e.message;
}

/** The schedule API for one app and environment. */
export class Schedules {
  constructor(
    readonly service: Service,
    readonly environment = 'schedules',
    readonly appId = 'demo',
    readonly token: string = service.token,
  ) {}

  gql<T = any>(query: string, variables?: Record<string, unknown>): Promise<GqlResponse<T>> {
    return this.service.gql<T>(query, variables, this.token);
  }

  scheduleTaskRaw(fields: Record<string, unknown>) {
    return this.gql(SCHEDULE_TASK, { input: { appId: this.appId, environment: this.environment, input: '[]', ...fields } });
  }

  async scheduleTask(fields: Record<string, unknown>): Promise<string> {
    return data(await this.scheduleTaskRaw(fields)).scheduleTask.id;
  }

  scheduleWorkflowRaw(fields: Record<string, unknown>) {
    return this.gql(SCHEDULE_WORKFLOW, { input: { appId: this.appId, environment: this.environment, input: '[]', ...fields } });
  }

  async scheduleWorkflow(fields: Record<string, unknown>): Promise<string> {
    return data(await this.scheduleWorkflowRaw(fields)).scheduleWorkflow.id;
  }

  actRaw(action: 'pause' | 'resume' | 'delete', id: string, appId = this.appId) {
    const name = `${action}Schedule`;
    const type = `${action[0].toUpperCase()}${action.slice(1)}ScheduleInput`;
    return this.gql(`mutation($input: ${type}!) { ${name}(input: $input) { ${SCHEDULE_FIELDS} } }`, {
      input: { appId, environment: this.environment, id },
    });
  }

  async act(action: 'pause' | 'resume' | 'delete', id: string): Promise<Record<string, any>> {
    return data(await this.actRaw(action, id))[`${action}Schedule`];
  }

  triggerRaw(id: string) {
    return this.gql(`mutation($input: TriggerScheduleInput!) { triggerSchedule(input: $input) { id schedule { ${SCHEDULE_FIELDS} } } }`, {
      input: { appId: this.appId, environment: this.environment, id },
    });
  }

  async trigger(id: string): Promise<{ id: string; schedule: Record<string, any> }> {
    return data(await this.triggerRaw(id)).triggerSchedule;
  }

  async schedule(id: string): Promise<Record<string, any> | null> {
    return data(
      await this.gql(`query($appId: String!, $environment: String!, $id: ID!) { schedule(appId: $appId, environment: $environment, id: $id) { ${SCHEDULE_FIELDS} } }`, {
        appId: this.appId,
        environment: this.environment,
        id,
      }),
    ).schedule;
  }

  async list(filter: Record<string, unknown> = {}, page: { first?: number; after?: string } = {}) {
    return data(
      await this.gql(
        `query($filter: ScheduleFilterInput!, $first: Int, $after: String) { schedules(filter: $filter, first: $first, after: $after) { totalCount pageInfo { endCursor hasNextPage } nodes { ${SCHEDULE_FIELDS} } } }`,
        { filter: { appId: this.appId, environment: this.environment, ...filter }, ...page },
      ),
    ).schedules as { totalCount: number; pageInfo: { endCursor: string | null; hasNextPage: boolean }; nodes: Array<Record<string, any>> };
  }

  historyRaw(id: string) {
    return this.gql(
      `query($appId: String!, $environment: String!, $id: ID!) { scheduleHistory(appId: $appId, environment: $environment, id: $id, first: 10000) { revision type recordedAt data } }`,
      { appId: this.appId, environment: this.environment, id },
    );
  }

  async history(id: string): Promise<HistoryRow[]> {
    return data(await this.historyRaw(id)).scheduleHistory.map((e: any) => ({ ...e, data: JSON.parse(e.data) }));
  }

  async tasks(name: string): Promise<Array<Record<string, any>>> {
    const out: Array<Record<string, any>> = [];
    for (let after: string | null = null; ; ) {
      const page: any = data(
        await this.gql(
          'query($filter: TaskFilterInput!, $after: String) { tasks(filter: $filter, first: 500, after: $after) { pageInfo { endCursor hasNextPage } nodes { id name input scheduleId createdAt } } }',
          { filter: { appId: this.appId, environment: this.environment, name }, after },
        ),
      ).tasks;
      out.push(...page.nodes);
      if (!page.pageInfo.hasNextPage) return out;
      after = page.pageInfo.endCursor;
    }
  }

  async workflows(filter: Record<string, unknown>): Promise<Array<Record<string, any>>> {
    return data(
      await this.gql(
        'query($filter: WorkflowFilterInput!) { workflows(filter: $filter, first: 500) { nodes { id name tag state scheduleId input createdAt } } }',
        { filter: { appId: this.appId, environment: this.environment, ...filter } },
      ),
    ).workflows.nodes;
  }

  async terminate(id: string): Promise<void> {
    data(
      await this.gql('mutation($input: TerminateWorkflowsInput!) { terminateWorkflows(input: $input) { status } }', {
        input: { appId: this.appId, environment: this.environment, selector: { id } },
      }),
    );
  }
}

export interface StoredEvent {
  type: string;
  streamId: string;
  data: any;
  recordedAt: Date;
}

/** Every event of a store, read with the compiled SQLite adapter (the services must have stopped, or not: WAL). */
export async function readStore(storeUrl: string): Promise<StoredEvent[]> {
  const { SqliteEventStore } = await import(pathToFileURL(join(ROOT, 'dist/src/event-store/sqlite/sqlite-event-store.js')).href);
  const store = new SqliteEventStore(storeUrl.slice('sqlite:'.length));
  try {
    const out: StoredEvent[] = [];
    for (let after: bigint | undefined; ; ) {
      const page = await store.readAll({ after, maxCount: 5000 });
      if (page.length === 0) return out;
      for (const e of page) out.push({ type: e.type, streamId: e.streamId, data: e.data, recordedAt: e.recordedAt });
      after = page[page.length - 1].position;
    }
  } finally {
    await store.close();
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
