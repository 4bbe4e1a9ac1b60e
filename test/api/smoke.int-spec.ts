import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, Service, startService } from '../support/service.js';

describe('service start', () => {
  let service: Service;
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(() => service?.stop());

  it('serves /health (an alias of /health/ready) with 200 and the store kind', async () => {
    const response = await fetch(`${service.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      status: 'ok',
      info: { store: { kind: 'sqlite', status: 'up' }, projections: { live: true, status: 'up' }, lifecycle: { draining: false, status: 'up' } },
    });
  });

  it('created a token for app demo on a fresh store and printed it once with a curl example', () => {
    expect(service.token).toMatch(/^baton_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    expect(service.output()).toContain(`Authorization: Bearer ${service.token}`);
  });

  it('refuses to start on bad configuration, naming the variable', () => {
    const result = spawnSync(process.execPath, [join(ROOT, 'dist/src/main.js')], {
      env: { ...process.env, PORT: 'eighty', LOG_LEVEL: 'loud' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/PORT="eighty": expected a whole number/);
    expect(result.stderr).toMatch(/LOG_LEVEL="loud"/);
  });
});
