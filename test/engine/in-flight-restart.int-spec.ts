/**
 * A restart with very many workflows in flight: the engine's index is rebuilt from every running
 * and paused workflow. The list of their streams was gathered with one spread call per read
 * model, which overflows the stack past ~130,000 entries: the service did not start at all
 * ("Baton failed to start: Maximum call stack size exceeded") on a store of 200,000 waiting
 * workflows.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createTokenViaCli, freshStoreUrl, ROOT, Service, startService } from '../support/service.js';

const WORKFLOWS = 200_000;

describe('a restart with 200,000 workflows in flight', () => {
  let service: Service | undefined;
  afterAll(() => service?.stop());

  it('starts, and indexes every one of them', async () => {
    const storeUrl = freshStoreUrl();
    // The store's schema and a token, made by the CLI (a first start of the service did the same, slower).
    const token = await createTokenViaCli(storeUrl, ['demo']);

    // Dispatched workflows, written straight into the stopped service's store (as the bench's
    // generated stores are): each is running and waits for its first decision.
    const { default: Database } = await import(pathToFileURL(join(ROOT, 'dist/src/event-store/sqlite/better-sqlite3.js')).href);
    const db = new Database(storeUrl.slice('sqlite:'.length));
    const insert = db.prepare('INSERT INTO events (stream_id, revision, event_id, type, data, metadata, recorded_at) VALUES (?, 0, ?, ?, ?, ?, ?)');
    const at = Date.now();
    const dispatchedAt = new Date(at).toISOString();
    const metadata = JSON.stringify({ actor: 'test', appId: 'demo', environment: 'in-flight', correlationId: randomUUID(), causationId: randomUUID(), at: dispatchedAt });
    db.transaction(() => {
      for (let i = 0; i < WORKFLOWS; i++) {
        const workflowId = randomUUID();
        const data = { workflowId, appId: 'demo', environment: 'in-flight', name: 'Waiting', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt };
        insert.run(`workflow-${workflowId}`, randomUUID(), 'WorkflowDispatched', JSON.stringify(data), metadata, at);
      }
    })();
    db.close();

    service = await startService({ storeUrl, env: { LOG_LEVEL: 'info' }, readyTimeoutMs: 180_000 });
    // Logged before BATON_READY, but the logger writes asynchronously.
    await service.logged(`(${WORKFLOWS} in-flight streams rebuilt in memory from ${WORKFLOWS} events)`);
    // Every one of them has its first decision claimable in the engine's index.
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    const depth = /^baton_queue_depth\{[^}]*environment="in-flight"[^}]*name="Waiting"[^}]*\} (\d+)$/m.exec(metrics);
    expect(Number(depth?.[1])).toBe(WORKFLOWS);
    const listed = await service.gql('query { workflows(filter: { appId: "demo", environment: "in-flight", state: RUNNING }, first: 1) { totalCountCapped } }', {}, token);
    expect(listed.body).toEqual({ data: { workflows: { totalCountCapped: true } } });
  }, 240_000);
});
