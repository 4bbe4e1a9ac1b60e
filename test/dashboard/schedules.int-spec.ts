import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { Service, mutateInOrder, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { hasChromium, launchChromium } from '../support/chromium.js';

/**
 * The dashboard's Schedules page, in headless Chromium: a cron is said in the words the service
 * gives (the six-field form with a year is the original service's, not seconds-first), a task
 * schedule's firings do not link to workflow pages, and a schedule created after more than a page
 * of others can still be reached; a malformed link does not blank the app.
 */
const itInBrowser = hasChromium ? it : it.skip;
const ENV = 'ui-schedules';
const scope = { appId: 'demo', environment: ENV };

describe('dashboard: schedules', () => {
  let service: Service;
  let browser: Browser | undefined;
  const problems: string[] = [];

  const scheduleWorkflow = async (fields: Record<string, unknown>): Promise<string> =>
    (await service.gql('mutation($input: ScheduleWorkflowInput!) { scheduleWorkflow(input: $input) { id } }', { input: { ...scope, input: '[]', ...fields } })).body.data.scheduleWorkflow.id;
  const scheduleTask = async (fields: Record<string, unknown>): Promise<string> =>
    (await service.gql('mutation($input: ScheduleTaskInput!) { scheduleTask(input: $input) { id } }', { input: { ...scope, input: '[]', ...fields } })).body.data.scheduleTask.id;
  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), hasChromium ? launchChromium() : Promise.resolve(undefined)]);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  async function schedulesPage(): Promise<Page> {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()} (${m.location().url})`));
    await page.goto(`${service.url}/ui`);
    await page.getByLabel('API token').fill(service.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('textbox', { name: 'Environment' }).fill(ENV);
    await page.getByRole('link', { name: 'Schedules', exact: true }).click();
    return page;
  }

  itInBrowser("a six-field cron (minute … day-of-week, year) is said as the service reads it, not seconds-first", async () => {
    await scheduleWorkflow({ name: 'Nightly', cron: '0 2 * * * *' });
    await scheduleWorkflow({ name: 'Mondays', cron: '0 2 ? * MON *' });
    const page = await schedulesPage();
    const nightly = page.locator('tr[data-schedule="Nightly"]');
    await nightly.waitFor();
    const text = await nightly.textContent();
    expect(text).toContain('At 02:00');
    expect(text).not.toContain('past the hour');
    const mondays = page.locator('tr[data-schedule="Mondays"]');
    await expect(mondays.textContent()).resolves.toContain('At 02:00, only on Monday');
    await page.context().close();
  });

  itInBrowser("a task schedule's firings name the task, with no link to a workflow page", async () => {
    const id = await scheduleTask({ name: 'sendDigest', cron: '0 9 * * 1-5' });
    const triggered = await service.gql('mutation($input: TriggerScheduleInput!) { triggerSchedule(input: $input) { id } }', { input: { ...scope, id } });
    const taskId: string = triggered.body.data.triggerSchedule.id;
    const page = await schedulesPage();
    const row = page.locator('tr[data-schedule="sendDigest"]');
    await row.getByRole('button', { name: 'Firings' }).click();
    const firing = page.getByText(/\(triggered\)/);
    await firing.waitFor();
    expect(await page.locator(`a[href="#/workflows/${taskId}"]`).count()).toBe(0);
    await expect(firing.textContent()).resolves.toContain(taskId.slice(0, 8));
    await page.context().close();
  });

  itInBrowser('a schedule created after a page of others (here deleted ones) is reached', async () => {
    // 200 schedules, all deleted since, then the one the operator looks for.
    for (let i = 0; i < 200; i += 100) {
      const ids = await mutateInOrder(service, Array.from({ length: 100 }, (_, j) => ['scheduleWorkflow', 'ScheduleWorkflowInput', { ...scope, input: '[]', name: `Old${i + j}`, cron: '0 3 * * *' }]));
      const deleted = await mutateInOrder(service, ids.map((id) => ['deleteSchedule', 'DeleteScheduleInput', { ...scope, id }]));
      expect(deleted).toEqual(ids);
    }
    await scheduleWorkflow({ name: 'Latest', cron: '0 4 * * *' });
    const page = await schedulesPage();
    const latest = page.locator('tr[data-schedule="Latest"]');
    await page.locator('tr[data-schedule="Old0"]').waitFor();
    // Reachable through the list's own controls, within a few clicks.
    await waitFor(
      async () => {
        if ((await latest.count()) > 0) return true;
        const more = page.getByRole('button', { name: 'Load more' });
        if ((await more.count()) > 0) await more.click();
        return false;
      },
      { timeoutMs: 15_000, intervalMs: 300, description: 'the schedule "Latest" on the Schedules page' },
    );
    await page.context().close();
  });

  itInBrowser("a schedule's Firings reads a bounded tail of its history, however long the history (here 3,000 pauses and resumes since its one firing)", async () => {
    const id = await scheduleWorkflow({ name: 'LongHistory', cron: '0 5 * * *' });
    await service.gql('mutation($input: TriggerScheduleInput!) { triggerSchedule(input: $input) { id } }', { input: { ...scope, id } });
    // 1,500 pauses each followed by a resume, 100 of them a request (in order: see mutateInOrder).
    const controls = await mutateInOrder(
      service,
      Array.from({ length: 3000 }, (_, i): [string, string, Record<string, unknown>] => (i % 2 === 0 ? ['pauseSchedule', 'PauseScheduleInput', { ...scope, id }] : ['resumeSchedule', 'ResumeScheduleInput', { ...scope, id }])),
    );
    expect(controls).toEqual(Array(3000).fill(id));
    const page = await schedulesPage();
    const reads: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST' && (r.postData() ?? '').includes('scheduleHistory')) reads.push(r.postData()!);
    });
    // Past the first page (the 200 deleted schedules above): the State filter finds it.
    await page.getByRole('textbox', { name: 'State' }).click();
    await page.getByRole('option', { name: 'ACTIVE' }).click();
    await page.locator('tr[data-schedule="LongHistory"]').getByRole('button', { name: 'Firings' }).click();
    await page.getByText(/No firings among the last 2,000 of its 3,00\d events/).waitFor({ timeout: 20_000 });
    // One load of the panel: at most four pages of 500.
    expect(reads.length).toBeLessThanOrEqual(4);
    await page.context().close();
  }, 120_000);

  itInBrowser('acting on a schedule reached with Load more keeps it in view, with its new state', async () => {
    const env = 'ui-schedules-act';
    const create = (name: string): [string, string, Record<string, unknown>] => ['scheduleWorkflow', 'ScheduleWorkflowInput', { appId: 'demo', environment: env, input: '[]', name, cron: '0 3 * * *' }];
    await mutateInOrder(service, Array.from({ length: 100 }, (_, i) => create(`First${i}`)));
    await mutateInOrder(service, [create('Beyond')]);
    const page = await schedulesPage();
    await page.getByRole('textbox', { name: 'Environment' }).fill(env);
    await page.locator('tr[data-schedule="First0"]').waitFor();
    const beyond = page.locator('tr[data-schedule="Beyond"]');
    await page.getByRole('button', { name: 'Load more' }).click();
    await beyond.waitFor();
    await beyond.getByRole('button', { name: 'Pause' }).click();
    await beyond.getByRole('button', { name: 'Resume' }).waitFor({ timeout: 10_000 });
    await page.context().close();
  });

  itInBrowser('a link with a malformed escape (#/workflows/%E0%A4%A) opens a page, with no uncaught error', async () => {
    const page = await schedulesPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${service.url}/ui#/workflows/%E0%A4%A`);
    await page.getByText(/No workflow .* in demo/).waitFor();
    expect(errors).toEqual([]);
    await page.context().close();
  });

  itInBrowser('no errors in the browser console', () => {
    expect(problems).toEqual([]);
  });
});
