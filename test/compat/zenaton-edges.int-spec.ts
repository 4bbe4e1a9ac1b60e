/**
 * Review of the compatibility with the original service's npm client (`zenaton` 0.8.0): requests
 * the client sends, driven through the real package against the real service.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import zenaton from 'zenaton';
import { Service, startService } from '../support/service.js';

const APP = 'demo';
const ENV = 'zenaton-edges';

describe('the zenaton client against Baton, at the edges', () => {
  let service: Service;
  let client: InstanceType<typeof zenaton.Client>;
  const previousGateway = process.env.ZENATON_GATEWAY_URL;

  const query = async (document: string, variables: Record<string, unknown>) => {
    const response = await service.gql(document, { appId: APP, environment: ENV, ...variables });
    expect(response.body.errors).toBeUndefined();
    return response.body.data;
  };
  const workflowName = async (id: string) =>
    (await query('query($appId: String!, $environment: String!, $id: ID!) { workflow(appId: $appId, environment: $environment, id: $id) { name } }', { id })).workflow.name;
  const scheduleName = async (id: string) =>
    (await query('query($appId: String!, $environment: String!, $id: ID!) { schedule(appId: $appId, environment: $environment, id: $id) { name } }', { id })).schedule.name;

  beforeAll(async () => {
    service = await startService();
    process.env.ZENATON_GATEWAY_URL = service.url;
    client = new zenaton.Client(APP, service.token, ENV, 'zenaton-edges');
  });

  afterAll(async () => {
    if (previousGateway === undefined) delete process.env.ZENATON_GATEWAY_URL;
    else process.env.ZENATON_GATEWAY_URL = previousGateway;
    await service?.stop();
  });

  it('dispatches and schedules a name whose two version suffixes are the same (Sync_v2_v2), which the client sends as Sync_v2 + v2', async () => {
    // The client's versioner (/^(.+)_(v\d+)$/) splits at the last _vN: name "Sync_v2", version "v2".
    // Baton read that pair as the name already pinning v2 and dispatched Sync_v2: another workflow.
    const { id } = (await client.run.workflow('Sync_v2_v2'))!;
    expect(await workflowName(id)).toBe('Sync_v2_v2');
    const scheduled = (await client.schedule('0 2 * * * *').workflow('Sync_v2_v2'))!;
    expect(await scheduleName(scheduled.id)).toBe('Sync_v2_v2');
  });

  it('refuses a month or day of month out of range naming the value written, not that value less one', async () => {
    const refusal = (cron: string) =>
      client.schedule(cron).workflow('Noop').then(
        () => null,
        (error: Error) => error.message,
      );
    // croner counts months and days from 0 inside, and its message gave that count: "13" was
    // refused as "Invalid value for month: 12", "32" as "day: 31", "0" as "day: -1".
    expect(await refusal('0 2 * 13 * *')).toBe('(scheduleWorkflow) cron: month field "13": Invalid value for month: 13');
    expect(await refusal('0 2 * 0 * *')).toBe('(scheduleWorkflow) cron: month field "0": Invalid value for month: 0');
    expect(await refusal('0 2 32 * * *')).toBe('(scheduleWorkflow) cron: day-of-month field "32": Invalid value for day: 32');
    expect(await refusal('0 2 0 * * *')).toBe('(scheduleWorkflow) cron: day-of-month field "0": Invalid value for day: 0');
    expect(await refusal('0 2 * 1-13 * *')).toBe('(scheduleWorkflow) cron: month field "1-13": Invalid value for month: 13');
  });
});
