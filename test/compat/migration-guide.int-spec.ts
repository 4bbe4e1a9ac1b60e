/**
 * docs/MIGRATING-FROM-ZENATON.md: its Baton example is the file a real worker runs here, and the
 * application code it shows (the original `zenaton` client, unchanged) drives it through both
 * paths of the workflow.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import zenaton from 'zenaton';
import { ROOT, Service, startService } from '../support/service.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { APP, Engine, unique } from '../engine/engine-helpers.js';

const ENV = 'migration';
const EXAMPLE = 'examples/zenaton-migration/activation-reminders.ts';

describe('the migration guide', () => {
  let service: Service;
  let engine: Engine;
  let client: InstanceType<typeof zenaton.Client>;
  const previousGateway = process.env.ZENATON_GATEWAY_URL;

  beforeAll(async () => {
    service = await startService();
    await startWorker({ url: service.url, token: service.token, environment: ENV, module: 'dist/examples/zenaton-migration/activation-reminders.js' });
    engine = new Engine(service, ENV);
    process.env.ZENATON_GATEWAY_URL = service.url;
    client = new zenaton.Client(APP, service.token, ENV);
  });

  afterAll(async () => {
    if (previousGateway === undefined) delete process.env.ZENATON_GATEWAY_URL;
    else process.env.ZENATON_GATEWAY_URL = previousGateway;
    await killAllWorkers();
    await service?.stop();
  });

  /** The subjects of the SendEmail tasks the workflow ran, in order, from its history. */
  const subjects = async (id: string): Promise<string[]> =>
    (await engine.history(id)).filter((e) => e.type === 'TaskCompleted').map((e) => e.data.result);

  it('shows exactly the file the worker runs', () => {
    const guide = readFileSync(join(ROOT, 'docs/MIGRATING-FROM-ZENATON.md'), 'utf8');
    const block = new RegExp(`<!-- baton-example: ${EXAMPLE} -->\\n\`\`\`ts\\n([\\s\\S]*?)\`\`\`\\n<!-- /baton-example -->`).exec(guide);
    expect(block?.[1]).toBe(readFileSync(join(ROOT, EXAMPLE), 'utf8'));
  });

  it('activated: Welcome, then Congrats once the event comes, sent by name and tag with the original client', async () => {
    const email = `${unique('ada')}@example.com`;
    const { id } = (await client.run.withTag(`email:${email}`).workflow('ActivationReminders', email, 3 * 24 * 3600, 2))!;
    await engine.waitForEventType(id, 'TimerStarted');
    expect(await client.select.workflow('ActivationReminders').withTag(`email:${email}`).send('Activated', { plan: 'pro' })).toEqual({ status: 'OK' });
    const done = await engine.waitForState(id);
    expect(done).toMatchObject({ name: 'ActivationReminders', tag: `email:${email}` });
    expect(done.result).toEqual({ activated: true, data: [{ plan: 'pro' }] });
    expect(await subjects(id)).toEqual(['Welcome', 'Congrats']);
  });

  it('never activated: Welcome and one reminder per wait that runs out, at most maxReminders', async () => {
    const email = `${unique('grace')}@example.com`;
    const { id } = (await client.run.withTag(`email:${email}`).workflow('ActivationReminders', email, 0.3, 2))!;
    const done = await engine.waitForState(id);
    expect(done.result).toEqual({ activated: false, data: null });
    expect(await subjects(id)).toEqual(['Welcome', 'Reminder #1', 'Reminder #2']);
    expect((await engine.history(id)).filter((e) => e.type === 'TimerFired')).toHaveLength(2);
  });
});
