/**
 * Helpers shared by the engine's integration suites: a real service, real worker processes
 * running `test/support/fixtures/workflows.ts`, and the SDK Client to drive and observe them.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '../../src/sdk/index.js';
import type { FixtureLogEntry } from '../support/fixtures/workflows.js';
import type { Service } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

export const APP = 'demo';

export interface HistoryEntry {
  revision: number;
  type: string;
  data: any;
  /** correlationId, causationId, actor, appId, environment, and `at`: when the decision was made. */
  metadata: { at: string; actor: string; [key: string]: unknown };
  recordedAt: string;
}

export const unique = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

/** A fresh, empty FIXTURE_LOG file path. */
export const freshLogFile = (): string => join(mkdtempSync(join(tmpdir(), 'baton-fixture-log-')), 'log.jsonl');

export function readLog(file: string): FixtureLogEntry[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as FixtureLogEntry);
}

/** Drives one app+environment of a service through the SDK client. */
export class Engine {
  readonly client: Client;

  constructor(
    readonly service: Service,
    readonly environment: string,
    token: string = service.token,
  ) {
    this.client = new Client({ url: service.url, token });
  }

  dispatch(name: string, input: unknown[] = [], tag?: string): Promise<string> {
    return this.client.dispatchWorkflow({ appId: APP, environment: this.environment, name, input, ...(tag ? { tag } : {}) });
  }

  send(selector: { id: string } | { name: string; tag?: string }, name: string, ...data: unknown[]) {
    return this.client.sendEventToWorkflows({ appId: APP, environment: this.environment, selector, name, data });
  }

  pause(selector: { id: string } | { name: string; tag?: string }) {
    return this.client.pauseWorkflows({ appId: APP, environment: this.environment, selector });
  }

  resume(selector: { id: string } | { name: string; tag?: string }) {
    return this.client.resumeWorkflows({ appId: APP, environment: this.environment, selector });
  }

  terminate(selector: { id: string } | { name: string; tag?: string }, reason?: string) {
    return this.client.terminateWorkflows({ appId: APP, environment: this.environment, selector, ...(reason ? { reason } : {}) });
  }

  async workflow(id: string) {
    const summary = await this.client.workflow(APP, this.environment, id);
    if (!summary) throw new Error(`no workflow ${id}`);
    return summary;
  }

  /** The whole history, page by page. */
  async history(id: string): Promise<HistoryEntry[]> {
    const all: HistoryEntry[] = [];
    for (;;) {
      const data = await this.client.request<{ workflowHistory: Array<{ revision: number; type: string; data: string; metadata: string; recordedAt: string }> }>(
        'query($appId: String!, $environment: String!, $id: ID!, $from: Int) { workflowHistory(appId: $appId, environment: $environment, id: $id, fromRevision: $from, first: 1000) { revision type data metadata recordedAt } }',
        { appId: APP, environment: this.environment, id, from: all.length },
      );
      all.push(...data.workflowHistory.map((e) => ({ ...e, data: JSON.parse(e.data), metadata: JSON.parse(e.metadata) })));
      if (data.workflowHistory.length < 1000) return all;
    }
  }

  /** Waits until the workflow is in `state` (default COMPLETED) and returns it, with `output` parsed. */
  async waitForState(id: string, state = 'COMPLETED', timeoutMs = 15_000) {
    let last = '';
    const summary = await waitFor(
      async () => {
        const w = await this.workflow(id);
        last = w.state;
        return w.state === state ? w : null;
      },
      { timeoutMs, intervalMs: 25, description: `workflow ${id} to be ${state}` },
    ).catch(async (error: Error) => {
      const history = await this.history(id).catch(() => []);
      throw new Error(`${error.message} (it is ${last}); history:\n${describeHistory(history)}`);
    });
    return { ...summary, result: summary.output === null ? undefined : JSON.parse(summary.output) };
  }

  /** Waits until the history satisfies `predicate`; returns the history. */
  async waitForHistory(id: string, predicate: (events: HistoryEntry[]) => boolean, description: string, timeoutMs = 15_000): Promise<HistoryEntry[]> {
    let last: HistoryEntry[] = [];
    return waitFor(
      async () => {
        last = await this.history(id);
        return predicate(last) ? last : null;
      },
      { timeoutMs, intervalMs: 25, description: `${description} in the history of ${id}` },
    ).catch((error: Error) => {
      throw new Error(`${error.message}; history:\n${describeHistory(last)}`);
    });
  }

  /** Waits until the history has an event of this type (matching `where`). */
  waitForEventType(id: string, type: string, where: (data: any) => boolean = () => true, timeoutMs?: number): Promise<HistoryEntry[]> {
    return this.waitForHistory(id, (events) => events.some((e) => e.type === type && where(e.data)), type, timeoutMs);
  }

  /** The id of the first child workflow `parentId` started, once its `ChildWorkflowStarted` is recorded. */
  async childOf(parentId: string): Promise<string> {
    const events = await this.waitForEventType(parentId, 'ChildWorkflowStarted');
    return ofType(events, 'ChildWorkflowStarted')[0].data.childId as string;
  }

  /**
   * Until this instance's effects reactor has carried out every effect up to what its read models
   * have read (`/health`): an effect of anything recorded before the call is done by then.
   */
  async effectsCaughtUp(): Promise<void> {
    await waitFor(
      async () => {
        const { effects, projections } = (await (await fetch(`${this.service.url}/health`)).json()).details;
        return effects.held === 0 && BigInt(effects.checkpoint) >= BigInt(projections.checkpoint);
      },
      { timeoutMs: 15_000, description: 'the effects reactor at the head' },
    );
  }

  /**
   * Proof that the workers of this environment were polling and free to take any claimable
   * decision: a Noop workflow dispatched now ran to completion.
   */
  async barrier(): Promise<void> {
    const id = await this.dispatch('Noop');
    await this.waitForState(id);
  }
}

export const after = (events: HistoryEntry[], type: string): HistoryEntry[] => {
  const index = events.findIndex((e) => e.type === type);
  return index < 0 ? [] : events.slice(index + 1);
};

export const ofType = (events: HistoryEntry[], type: string): HistoryEntry[] => events.filter((e) => e.type === type);

export const ms = (iso: string): number => Date.parse(iso);

export function describeHistory(events: HistoryEntry[]): string {
  return events.map((e) => `  ${e.revision} ${e.recordedAt} ${e.type} ${JSON.stringify(e.data).slice(0, 200)}`).join('\n');
}

/** The port the service listens on (to restart it on the same address). */
export const portOf = (service: Service): string => new URL(service.url).port;

/**
 * `count` events `name` to workflow `id` of app `demo` in `environment` (data `[from + i]`, or
 * `[from + i, pad]`), `perRequest` aliased sends a request, in order. Every request must answer
 * without errors; with `everyChanged`, every send must have recorded the event (received or kept back).
 */
export async function sendInOrder(
  service: Service,
  environment: string,
  id: string,
  from: number,
  count: number,
  { name = 'update', pad = '', perRequest = 200, everyChanged = false }: { name?: string; pad?: string; perRequest?: number; everyChanged?: boolean } = {},
): Promise<void> {
  for (let i = 0; i < count; i += perRequest) {
    const n = Math.min(perRequest, count - i);
    const fields = Array.from({ length: n }, (_, j) => {
      const data = JSON.stringify(JSON.stringify(pad === '' ? [from + i + j] : [from + i + j, pad]));
      return `e${j}: sendEventToWorkflows(input: { appId: "demo", environment: "${environment}", selector: { id: "${id}" }, name: "${name}", data: ${data} }) { changed }`;
    });
    const r = await service.gql<Record<string, { changed: number }>>(`mutation { ${fields.join('\n')} }`);
    if (r.body.errors !== undefined) throw new Error(`sends ${from + i}-${from + i + n - 1}: ${JSON.stringify(r.body.errors).slice(0, 1000)}`);
    if (everyChanged && !Object.values(r.body.data!).every((x) => x.changed === 1)) throw new Error(`sends ${from + i}-${from + i + n - 1}: not every one recorded`);
  }
}
