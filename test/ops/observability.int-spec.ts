import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Engine, unique } from '../engine/engine-helpers.js';
import { startServices } from '../api/api-helpers.js';
import { Service } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { FixtureWorker, startWorker } from '../support/worker.js';
import { metric as metricOr } from '../support/metrics.js';

/** `name{labels} value` lines of a Prometheus scrape, summed over the series that carry every given label (NaN: none). */
const metric = (text: string, name: string, labels: Record<string, string> = {}): number => metricOr(text, name, labels, NaN);

const DISPATCH = 'mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }';

// The three instances start together, their start-ups overlapping; each describe stops its own.
const services = startServices({
  plain: { env: { LOG_LEVEL: 'info', METRICS_SAMPLE_MS: '200' } },
  // The last export at shutdown, to an endpoint that refuses, gives up after 0.5 s (the standard
  // OTEL_EXPORTER_OTLP_TIMEOUT), not after the default 10 s that this instance's stop used to wait.
  traced: { env: { METRICS_TOKEN: 'scrape-secret', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_TIMEOUT: '500', LOG_LEVEL: 'info' } },
  quiet: { env: { LOG_LEVEL: 'warn' } },
});
afterAll(() => services.stopAll());

describe('observability: request ids, logs, metrics, probes', () => {
  let service: Service;
  let worker: FixtureWorker;
  const environment = unique('ops');
  let engine: Engine;

  beforeAll(async () => {
    service = await services.get('plain');
    engine = new Engine(service, environment);
  });
  afterAll(async () => {
    await worker?.stop();
    await service?.stop();
  });

  const scrape = async () => {
    const response = await fetch(`${service.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/plain/);
    return response.text();
  };

  const dispatch = (name: string, requestId?: string) =>
    fetch(`${service.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${service.token}`, ...(requestId ? { 'x-request-id': requestId } : {}) },
      body: JSON.stringify({ query: DISPATCH, variables: { input: { appId: 'demo', environment, name, input: '[]' } } }),
    });

  it('returns the caller’s x-request-id and writes it into the metadata of the events the request caused', async () => {
    const requestId = unique('req');
    const response = await dispatch('Noop', requestId);
    expect(response.headers.get('x-request-id')).toBe(requestId);
    const { data } = (await response.json()) as { data: { dispatchWorkflow: { id: string } } };
    const history = await engine.history(data.dispatchWorkflow.id);
    expect(history[0].type).toBe('WorkflowDispatched');
    expect(history[0].metadata.correlationId).toBe(requestId);
  });

  it('generates a request id when none (or an unusable one) is sent', async () => {
    const plain = await dispatch('Noop');
    expect(plain.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
    const bad = await dispatch('Noop', 'x'.repeat(300));
    expect(bad.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  });

  it('logs one JSON line per request with its id, status and GraphQL operation', async () => {
    const requestId = unique('logged');
    await dispatch('Noop', requestId);
    const line = await waitFor(
      () => {
        const lines = service
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as { req?: { id: string }; res?: { statusCode: number }; operation?: string; msg: string; responseTime?: number })
          .filter((l) => l.req?.id === requestId);
        return lines.length > 0 ? lines : null;
      },
      { description: 'the request log line' },
    );
    expect(line).toHaveLength(1);
    expect(line[0]).toMatchObject({ msg: 'request completed', res: { statusCode: 200 }, operation: 'dispatchWorkflow' });
    expect(typeof line[0].responseTime).toBe('number');
    expect(service.output()).not.toContain('\u001b['); // no ANSI colours when stdout is not a terminal
    expect(service.output()).not.toMatch(/"authorization"/i); // request headers (the token) are not logged
  });

  it('serves /health/live and /health/ready', async () => {
    const live = await fetch(`${service.url}/health/live`);
    expect(live.status).toBe(200);
    const ready = await fetch(`${service.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok', info: { store: { status: 'up' }, projections: { live: true }, lifecycle: { draining: false } } });
  });

  it('exposes metrics that move with the work done', async () => {
    const before = await scrape();
    const orphan = unique('NoWorkerHere');
    await dispatch(orphan);
    worker = await startWorker({ url: service.url, token: service.token, environment });
    const ids = await Promise.all(Array.from({ length: 5 }, () => engine.dispatch('Sequential', ['m'])));
    for (const id of ids) await engine.waitForState(id);

    const after = await waitFor(
      async () => {
        const text = await scrape();
        return metric(text, 'baton_long_polls_parked') >= 1 && metric(text, 'baton_workflows_total', { outcome: 'completed' }) >= 5 ? text : null;
      },
      { description: 'parked polls and completed workflows in /metrics', timeoutMs: 15_000 },
    );
    const grew = (name: string, labels: Record<string, string> = {}) => {
      const b = metric(before, name, labels);
      return metric(after, name, labels) - (Number.isNaN(b) ? 0 : b);
    };
    expect(grew('baton_graphql_operation_duration_seconds_count', { operation: 'dispatchWorkflow', type: 'mutation', outcome: 'ok' })).toBeGreaterThanOrEqual(6);
    expect(grew('baton_graphql_operation_duration_seconds_count', { operation: 'pollWork' })).toBeGreaterThan(0);
    expect(grew('baton_http_request_duration_seconds_count', { route: '/graphql', method: 'POST' })).toBeGreaterThan(6);
    expect(grew('baton_store_appends_total', { store: 'sqlite', result: 'ok' })).toBeGreaterThan(10);
    expect(grew('baton_store_events_appended_total')).toBeGreaterThan(10);
    expect(grew('baton_store_commit_batch_size_count')).toBeGreaterThan(0);
    expect(grew('baton_decisions_total', { outcome: 'completed' })).toBeGreaterThanOrEqual(10);
    expect(grew('baton_task_attempts_total', { outcome: 'completed' })).toBeGreaterThanOrEqual(10);
    expect(grew('baton_workflows_total', { outcome: 'dispatched' })).toBeGreaterThanOrEqual(6);
    // Work no worker serves waits, and says how long.
    expect(metric(after, 'baton_queue_depth', { kind: 'decision', name: orphan, environment })).toBe(1);
    expect(metric(after, 'baton_queue_oldest_seconds', { kind: 'decision', name: orphan })).toBeGreaterThan(0);
    expect(metric(after, 'baton_queue_depth', { name: 'Sequential', environment })).toBeNaN();
    expect(metric(after, 'baton_projection_lag_events')).toBeGreaterThanOrEqual(0);
    expect(metric(after, 'baton_projection_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(metric(after, 'baton_ready')).toBe(1);
    // The effects reactor: nothing held once the work is done, nothing failed, its checkpoint moved.
    expect(metric(after, 'baton_effects_held', { state: 'backing_off' })).toBe(0);
    expect(metric(after, 'baton_effects_retries_total')).toBe(0);
    expect(metric(after, 'baton_effects_checkpoint')).toBeGreaterThan(0);
    expect(metric(after, 'baton_process_cpu_seconds_total')).toBeGreaterThan(0);
  });

  it('keeps the operation label bounded by the schema: combinations of root fields do not each make series', async () => {
    const fields: Record<string, string> = {
      viewer: 'viewer { role }',
      workflow: `workflow(appId: "demo", environment: "${environment}", id: "none") { id }`,
      task: `task(appId: "demo", environment: "${environment}", id: "none") { id }`,
      schedule: `schedule(appId: "demo", environment: "${environment}", id: "none") { id }`,
    };
    const names = Object.keys(fields);
    const combos: string[][] = [];
    for (let mask = 1; mask < 1 << names.length; mask++) combos.push(names.filter((_, i) => mask & (1 << i)));
    for (const combo of combos) {
      const { status, body } = await service.gql(`{ ${combo.map((f) => fields[f]).join(' ')} }`);
      expect({ combo, status, errors: body.errors }).toEqual({ combo, status: 200, errors: undefined });
    }
    const text = await scrape();
    const labels = new Set<string>();
    for (const match of text.matchAll(/^baton_graphql_operation_duration_seconds_count\{[^}]*operation="([^"]*)"/gm)) {
      if (match[1].split(',').some((f) => names.includes(f))) labels.add(match[1]);
    }
    // One label per root field alone, and one per first field of a combination: 15 combinations, at most 8 labels.
    expect(labels.size).toBeLessThanOrEqual(2 * names.length);
    expect(labels).toContain('viewer');
  });

  it('does not trace unless an OTLP endpoint is configured', () => {
    expect(service.output()).not.toContain('OpenTelemetry tracing on');
  });
});

describe('metrics behind METRICS_TOKEN, and tracing on', () => {
  let service: Service;
  beforeAll(async () => {
    service = await services.get('traced');
  });
  afterAll(() => service?.stop());

  it('asks for the metrics token when one is set', async () => {
    expect((await fetch(`${service.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${service.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    const ok = await fetch(`${service.url}/metrics`, { headers: { authorization: 'Bearer scrape-secret' } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('baton_store_appends_total');
  });

  it('starts tracing when OTEL_EXPORTER_OTLP_ENDPOINT is set, and still serves requests', async () => {
    expect(service.output()).toContain('OpenTelemetry tracing on, exporting to http://127.0.0.1:9');
    const { status, body } = await service.gql('{ __typename }');
    expect(status).toBe(200);
    expect(body.data).toEqual({ __typename: 'Query' });
  });
});

describe('the request log at LOG_LEVEL=warn', () => {
  let service: Service;

  beforeAll(async () => {
    service = await services.get('quiet');
  });
  afterAll(async () => {
    await service?.stop();
  });

  const post = (requestId: string, query: string, variables?: unknown) =>
    fetch(`${service.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${service.token}`, 'x-request-id': requestId },
      body: JSON.stringify({ query, variables }),
    });
  const linesOf = (requestId: string) =>
    service
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; req?: { id: string }; res?: { statusCode: number }; msg: string })
      .filter((l) => l.req?.id === requestId);

  it('writes no line for a request that succeeded, and a warning for one that was refused', async () => {
    // The lines below the level are now cut before pino-http builds them: what this checks is that
    // the cut keeps the lines at or above it. (What the cut saves is measured by the bench.)
    const succeeded = unique('ok');
    const ok = await post(succeeded, DISPATCH, { input: { appId: 'demo', environment: unique('quiet'), name: 'Noop', input: '[]' } });
    expect(ok.status).toBe(200);
    const refused = unique('refused');
    const bad = await post(refused, '{ noSuchField }');
    expect(bad.status).toBe(400);

    const lines = await waitFor(() => (linesOf(refused).length > 0 ? linesOf(refused) : null), { description: "the refused request's log line" });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, msg: 'request completed', res: { statusCode: 400 } });
    // Written in order: the successful request's line would be in the output by now.
    expect(linesOf(succeeded)).toEqual([]);
  });
});
