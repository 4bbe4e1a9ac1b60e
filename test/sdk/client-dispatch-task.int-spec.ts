/**
 * The SDK's Client dispatches a standalone task with what the API takes for it (README,
 * "dispatchTask" and "Retrying a dispatch safely"): a tag, and an idempotency key. Typed, so that
 * a TypeScript caller can pass them (the typecheck of this file is part of the test).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client } from '../../src/sdk/index.js';
import { type Service, startService } from '../support/service.js';

const APP = 'demo';
const ENV = 'client-dispatch-task';

let service: Service;
let client: Client;
beforeAll(async () => {
  service = await startService();
  client = new Client({ url: service.url, token: service.token });
});
afterAll(() => service?.stop());

describe('Client.dispatchTask', () => {
  it('takes a tag and an idempotency key', async () => {
    const first = await client.dispatchTask({ appId: APP, environment: ENV, name: 'sendReceipt', input: ['a'], tag: 'order:A-1', idempotencyKey: 'receipt-A-1' });
    const again = await client.dispatchTask({ appId: APP, environment: ENV, name: 'sendReceipt', input: ['a'], tag: 'order:A-1', idempotencyKey: 'receipt-A-1' });
    expect(again).toBe(first);
    const { tasks } = await client.request<{ tasks: { nodes: Array<{ id: string; tag: string | null }> } }>(
      'query($filter: TaskFilterInput!) { tasks(filter: $filter) { nodes { id tag } } }',
      { filter: { appId: APP, environment: ENV, tag: 'order:A-1' } },
    );
    expect(tasks.nodes).toEqual([{ id: first, tag: 'order:A-1' }]);
  });
});
