/**
 * A worker of this release in front of a service of the release before it, which does not know
 * `pollWork`'s and the eager claim's `maxDecisions` / `maxTasks` (a rolling upgrade done in the
 * wrong order, or instances of both releases behind one load balancer). Before, every poll and
 * every report failed and the worker retried them for ever: nothing ran.
 *
 * The older service is the real one behind a proxy that refuses those two fields as a service that
 * does not define them does: it sends the request on with the fields renamed to names no release
 * defines, and hands back the real service's own refusal (`BAD_USER_INPUT`, the field named) with
 * the names put back. Every other request goes through unchanged.
 */
import http from 'node:http';
import { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { type Service, startService } from '../support/service.js';

const APP = 'demo';
const NEW_FIELDS = ['maxDecisions', 'maxTasks'];

/** Renames the new fields of `input` and of `input.claim` (`claimOnly`: of `input.claim` alone); true when there was one. */
function renameNewFields(input: Record<string, unknown> | undefined, fields: string[], claimOnly = false): boolean {
  let found = false;
  for (const target of [claimOnly ? undefined : input, input?.claim as Record<string, unknown> | undefined]) {
    if (!target || typeof target !== 'object') continue;
    for (const field of fields) {
      if (field in target) {
        target[`${field}Unknown`] = target[field];
        delete target[field];
        found = true;
      }
    }
  }
  return found;
}

class OlderServiceProxy {
  readonly refused: string[] = [];
  /** Operations that reached the service, with whether they carried the new fields. */
  readonly forwarded: Array<{ at: number; operation: string }> = [];
  private readonly agent = new http.Agent({ keepAlive: true });
  private server!: http.Server;
  url = '';

  /** `fields`: those the older service does not define (by default, `maxDecisions` and `maxTasks`); `claimOnly`: only in a report's claim. */
  constructor(
    private readonly target: string,
    private readonly fields = NEW_FIELDS,
    private readonly claimOnly = false,
  ) {}

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      // The service going away under a parked poll (at the end) is answered 502, as a proxy does.
      req.on('end', () => void this.handle(req, Buffer.concat(chunks).toString(), res).catch(() => res.headersSent || res.writeHead(502).end()));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async handle(req: http.IncomingMessage, body: string, res: http.ServerResponse): Promise<void> {
    let parsed: { query?: string; variables?: { input?: Record<string, unknown> } } = {};
    try {
      parsed = JSON.parse(body);
    } catch {
      // forwarded as it is
    }
    const operation = /\b(pollWork|reportWork|heartbeatWork|decisionHistory)\b/.exec(parsed.query ?? '')?.[1] ?? 'other';
    const newFields = renameNewFields(parsed.variables?.input, this.fields, this.claimOnly);
    if (newFields) {
      this.refused.push(operation);
      const answer = await this.forward(req, JSON.stringify(parsed));
      const text = answer.text.replace(new RegExp(`(${this.fields.join('|')})Unknown`, 'g'), '$1');
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
      return;
    }
    this.forwarded.push({ at: Date.now(), operation });
    const answer = await this.forward(req, body);
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.text);
  }

  private forward(req: http.IncomingMessage, body: string): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const out = http.request(
        `${this.target}${req.url}`,
        { method: req.method, agent: this.agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: req.headers.authorization ?? '' } },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => resolve({ status: answer.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        },
      );
      out.on('error', reject);
      out.end(body);
    });
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.agent.destroy();
  }
}

const double = defineTask('double', (_ctx, n: number) => n * 2);
const twoTasks = defineWorkflow('TwoTasksOlderService', async (ctx, n: number) => {
  const a = await ctx.run(double, n);
  return ctx.run(double, a);
});

let service: Service;
let proxy: OlderServiceProxy;
beforeAll(async () => {
  service = await startService();
  proxy = new OlderServiceProxy(service.url);
  await proxy.start();
});
afterAll(async () => {
  await proxy?.stop();
  await service?.stop();
});

/** `count` two-task workflows through a worker in front of `older`, each checked completed: what the worker logged as warnings. */
async function twoTaskWorkflowsThrough(older: OlderServiceProxy, environment: string, count = 3): Promise<string[]> {
  const warnings: string[] = [];
  const worker = new Worker({
    url: older.url,
    token: service.token,
    appId: APP,
    environment,
    workflows: [twoTasks],
    tasks: [double],
    pollWaitMs: 2_000,
    logger: { info() {}, warn: (line: string) => warnings.push(line), error: (line: string) => warnings.push(line) },
  });
  const running = worker.run();
  try {
    const client = new Client({ url: service.url, token: service.token });
    const ids = await Promise.all(Array.from({ length: count }, (_, i) => client.dispatchWorkflow({ appId: APP, environment, name: 'TwoTasksOlderService', input: [i] })));
    for (const [i, id] of ids.entries()) {
      expect(await client.awaitWorkflow(APP, environment, id, { timeoutMs: 20_000 })).toMatchObject({ state: 'COMPLETED', output: JSON.stringify(i * 4) });
    }
  } finally {
    await worker.shutdown();
    await running;
  }
  return warnings;
}

describe('a worker in front of an older service', () => {
  it('asks for maxItems alone once the service refuses maxDecisions/maxTasks, and runs its workflows and tasks', async () => {
    // The refusal is the real service's own answer for fields it does not define.
    const probe = new Client({ url: proxy.url, token: service.token });
    const refusal = await probe
      .request('mutation($input: PollWorkInput!) { pollWork(input: $input) { ref } }', {
        input: { appId: APP, environment: 'older-probe', workerId: 'probe', workflows: ['X'], tasks: [], maxItems: 1, maxDecisions: 1, maxTasks: 0, waitMs: 0 },
      })
      .then(
        () => null,
        (error: Error & { code?: string; extensions?: Record<string, unknown> }) => error,
      );
    expect(refusal).toMatchObject({ code: 'BAD_USER_INPUT', extensions: { field: 'maxDecisions' } });
    expect(refusal?.message).toContain('Field "maxDecisions" is not defined by type "PollWorkInput"');
    proxy.refused.length = 0;

    const warnings = await twoTaskWorkflowsThrough(proxy, 'older-service', 5);
    // Refused once per request in flight when the first refusal came (the two pollers' first polls).
    expect(proxy.refused.length).toBeGreaterThanOrEqual(1);
    expect(proxy.refused.length).toBeLessThanOrEqual(3);
    expect(proxy.forwarded.filter((f) => f.operation === 'pollWork').length).toBeGreaterThan(0);
    expect(proxy.forwarded.filter((f) => f.operation === 'reportWork').length).toBeGreaterThan(0);
    expect(warnings.filter((w) => w.includes('does not know maxDecisions/maxTasks'))).toHaveLength(1);
    // Nothing else went wrong: no failed poll or report retried.
    expect(warnings.filter((w) => !w.includes('does not know maxDecisions/maxTasks'))).toEqual([]);
  }, 60_000);
});


describe('a worker in front of the service of the release before report claim ids (it knows a poll id)', () => {
  it("leaves a report claim's pollId out once the service refuses it (one warning), and runs its workflows and tasks", async () => {
    const older = new OlderServiceProxy(service.url, ['pollId', 'fillDecisions', 'fillTasks'], true);
    await older.start();
    try {
      const warnings = await twoTaskWorkflowsThrough(older, 'older-service-claim-ids');
      // Reports already in flight when the first refusal came may be refused too; none after it.
      expect({ refused: older.refused.length >= 1 && older.refused.every((o) => o === 'reportWork'), reports: older.forwarded.some((f) => f.operation === 'reportWork') }).toEqual({ refused: true, reports: true });
      expect(warnings).toEqual([expect.stringContaining("does not know a report claim's pollId")]);
    } finally {
      await older.stop();
    }
  }, 60_000);
});

describe('a worker in front of the service of the release before poll ids', () => {
  it("leaves pollId out of its polls and its reports' claims once the service refuses each (a warning each), and runs its workflows and tasks", async () => {
    const older = new OlderServiceProxy(service.url, ['pollId', 'fillDecisions', 'fillTasks']);
    await older.start();
    let warnings: string[];
    try {
      warnings = await twoTaskWorkflowsThrough(older, 'older-service-poll-ids');
    } finally {
      await older.stop();
    }
    // The two pollers' first polls, refused, and the first reports' claims; none after.
    expect({
      polls: older.refused.filter((o) => o === 'pollWork').length <= 2,
      others: older.refused.every((o) => o === 'pollWork' || o === 'reportWork'),
      forwarded: older.forwarded.some((f) => f.operation === 'pollWork'),
    }).toEqual({ polls: true, others: true, forwarded: true });
    expect(warnings.sort()).toEqual([expect.stringContaining("does not know a report claim's pollId"), expect.stringContaining('does not know pollId')]);
  }, 60_000);
});
