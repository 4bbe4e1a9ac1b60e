/**
 * MAX_SCHEDULES_PER_APP: the schedules that can still fire (active or paused) of one app, over all
 * its environments, are bounded; each is held in every instance's memory and fires on its own.
 * Without a bound, one token could create schedules as fast as its rate limit let it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { issueTokens } from '../api/api-helpers.js';
import { Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { Schedules, error, unique } from './schedule-helpers.js';

describe('schedules per app (MAX_SCHEDULES_PER_APP=3)', () => {
  let service: Service;

  beforeAll(async () => {
    service = await startService({ env: { MAX_SCHEDULES_PER_APP: '3' } });
  });
  afterAll(() => service?.stop());

  it('the fourth live schedule of an app is refused (RATE_LIMITED, limit MAX_SCHEDULES_PER_APP); other apps are not affected; a deleted one frees its place', async () => {
    const dev = new Schedules(service, 'dev', 'demo');
    const prod = new Schedules(service, 'prod', 'demo');
    const first = await dev.scheduleWorkflow({ name: unique('Cap'), cron: '0 9 * * *' });
    await dev.scheduleTask({ name: unique('Cap'), cron: '0 9 * * *' });
    // Paused schedules can fire again once resumed: they count.
    const paused = await prod.scheduleWorkflow({ name: unique('Cap'), cron: '0 9 * * *' });
    await prod.act('pause', paused);

    const refused = await prod.scheduleTaskRaw({ name: unique('Cap'), cron: '0 9 * * *' });
    expect(error(refused, 'RATE_LIMITED')).toMatch(/MAX_SCHEDULES_PER_APP/);
    expect(refused.body.errors![0].extensions!.limit).toBe('MAX_SCHEDULES_PER_APP');
    expect(error(await dev.scheduleWorkflowRaw({ name: unique('Cap'), cron: '0 9 * * *' }), 'RATE_LIMITED')).toMatch(/3 schedules/);
    expect((await prod.list({ state: 'ACTIVE' })).nodes.length + (await dev.list({ state: 'ACTIVE' })).nodes.length).toBe(2);

    // Another app has a bound of its own.
    const [billing] = await issueTokens(service, [{ apps: ['billing'] }]);
    const other = new Schedules(service, 'dev', 'billing', billing);
    await other.scheduleWorkflow({ name: unique('Cap'), cron: '0 9 * * *' });

    await dev.act('delete', first);
    const again = await waitFor(
      async () => {
        const response = await dev.scheduleWorkflowRaw({ name: unique('Cap'), cron: '0 9 * * *' });
        return response.body.errors ? undefined : response;
      },
      { timeoutMs: 10_000, intervalMs: 50, description: 'a schedule to be accepted once one was deleted' },
    );
    expect(again.body.data.scheduleWorkflow.id).toEqual(expect.any(String));
  });
});
