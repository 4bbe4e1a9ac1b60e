/**
 * The documented scheduleTask / scheduleWorkflow bodies, byte for byte. These are contract tests:
 * they fail (rather than skip) while the mutations are missing from the schema.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { UUID, hasMutation, post, unique } from './api-helpers.js';

describe('documented schedule bodies', () => {
  let service: Service;
  const app = 'demo';
  const env = 'production';

  beforeAll(async () => {
    service = await startService();
  });
  afterAll(() => service?.stop());

  it('the schema has scheduleTask and scheduleWorkflow', async () => {
    expect({ scheduleTask: await hasMutation(service, 'scheduleTask'), scheduleWorkflow: await hasMutation(service, 'scheduleWorkflow') }).toEqual({
      scheduleTask: true,
      scheduleWorkflow: true,
    });
  });

  it('scheduleTask returns exactly { data: { scheduleTask: { id } } }', async () => {
    const body = String.raw`{"query":"mutation($input: ScheduleTaskInput!) { scheduleTask(input: $input) { id } }","variables":{"input":{"appId":"${app}","environment":"${env}","cron":"*/5 * * * *","name":"${unique('SendDigest')}","input":"[\"weekly\"]"}}}`;
    const response = await post(service, body);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ data: { scheduleTask: { id: expect.stringMatching(UUID) } } });
  });

  it('scheduleWorkflow returns exactly { data: { scheduleWorkflow: { id } } }', async () => {
    const body = String.raw`{"query":"mutation($input: ScheduleWorkflowInput!) { scheduleWorkflow(input: $input) { id } }","variables":{"input":{"appId":"${app}","environment":"${env}","cron":"*/5 * * * *","name":"${unique('NightlyReport')}","input":"[{\"format\":\"pdf\"}]"}}}`;
    const response = await post(service, body);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ data: { scheduleWorkflow: { id: expect.stringMatching(UUID) } } });
  });
});
