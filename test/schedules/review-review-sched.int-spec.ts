/**
 * Review (schedules and idempotency, second round): edges where schedules meet concurrency,
 * quotas and the idempotency keys.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { Schedules, unique } from './schedule-helpers.js';

describe('MAX_SCHEDULES_PER_APP on one instance under concurrent requests', () => {
  let service: Service;
  beforeAll(async () => {
    service = await startService({ env: { MAX_SCHEDULES_PER_APP: '3' } });
  });
  afterAll(() => service?.stop());

  it('twelve scheduleTask requests sent at once to one instance create at most 3 schedules (the rest RATE_LIMITED)', async () => {
    const api = new Schedules(service, 'burst', 'demo');
    const responses = await Promise.all(Array.from({ length: 12 }, () => api.scheduleTaskRaw({ name: unique('Burst'), cron: '0 9 * * *' })));
    const accepted = responses.filter((r) => !r.body.errors);
    const refused = responses.filter((r) => r.body.errors?.[0]?.extensions?.code === 'RATE_LIMITED');
    const live = (await api.list({ state: 'ACTIVE' }, { first: 100 })).nodes.length;
    expect({ accepted: accepted.length, refused: refused.length, live }).toEqual({ accepted: 3, refused: 9, live: 3 });
  });
});
