/**
 * The original client's connectors (`client.connector(service, id).post(url, parameters)`) have no
 * counterpart in Baton, but what the client sends for them is an ordinary dispatchTask: a task
 * named `<service>:<method>` with one argument describing the request. A Baton task of that name
 * serves it, which is the migration path docs/MIGRATING-FROM-ZENATON.md gives.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import zenaton from 'zenaton';
import { defineTask } from '../../src/sdk/index.js';
import { InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'connectors';

interface ConnectorCall {
  service: string;
  serviceId?: string;
  method: string;
  url: string;
  parameters?: unknown;
}

const httpPost = defineTask('http:post', (_ctx, call: ConnectorCall) => ({ served: 'http:post', call }));
const slackPost = defineTask('slack:post', (_ctx, call: ConnectorCall) => ({ served: 'slack:post', call }));

describe("the original client's connectors, served by Baton tasks of the same names", () => {
  let running: InProcessWorker;
  let client: InstanceType<typeof zenaton.Client>;
  const previousGateway = process.env.ZENATON_GATEWAY_URL;

  beforeAll(async () => {
    running = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [httpPost, slackPost] });
    process.env.ZENATON_GATEWAY_URL = running.service.url;
    client = new zenaton.Client(APP, running.service.token, ENV, 'connectors');
  });

  afterAll(async () => {
    if (previousGateway === undefined) delete process.env.ZENATON_GATEWAY_URL;
    else process.env.ZENATON_GATEWAY_URL = previousGateway;
    await running?.stop();
  });

  const output = async (id: string) =>
    waitFor(
      async () => {
        const answer = await running.service.gql('query($id: ID!) { task(appId: "demo", environment: "connectors", id: $id) { name state output } }', { id });
        const task = answer.body.data?.task;
        return task?.state === 'COMPLETED' ? { name: task.name, output: JSON.parse(task.output) } : null;
      },
      { timeoutMs: 15_000, description: 'the connector task to complete' },
    );

  it('connector("http").post(url, parameters) runs the task "http:post" with the request', async () => {
    const { id } = (await client.connector('http').post('https://hooks.example.com/signup', { body: { plan: 'pro' } }))!;
    expect(await output(id)).toEqual({
      name: 'http:post',
      output: { served: 'http:post', call: { service: 'http', method: 'post', url: 'https://hooks.example.com/signup', parameters: { body: { plan: 'pro' } } } },
    });
  });

  it('a connector with its id (connector("slack", id)) runs "slack:post" with the id in the request', async () => {
    const connectorId = '7d6c4a1e-4b1c-4e8e-9a63-2f5d3c1b0a99';
    const { id } = (await client.connector('slack', connectorId).post('chat.postMessage', { body: { text: 'hi' } }))!;
    expect((await output(id)).output.call).toEqual({ service: 'slack', serviceId: connectorId, method: 'post', url: 'chat.postMessage', parameters: { body: { text: 'hi' } } });
  });
});
