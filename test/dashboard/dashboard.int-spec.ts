import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ROOT, Service, createTokenViaCli, mutateInOrder, startService } from '../support/service.js';
import { FixtureWorker, killAllWorkers, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';
import { CHROMIUM, hasChromium, launchChromium } from '../support/chromium.js';

/**
 * The dashboard at /ui, driven in headless Chromium from Debian (never a downloaded browser):
 * log in with a token, find a failed workflow through the filters, read its error in the
 * timeline, retry it and see it complete; pause and resume a schedule; see a worker appear and
 * disappear; a read-only token sees no action buttons and is refused by the API.
 * With BATON_SCREENSHOTS=1 the screenshots (1280×800) are written to docs/images/ for the README.
 */
if (!hasChromium) {
  process.stderr.write(
    ['', '#'.repeat(100), `#  SKIPPING the dashboard browser tests: ${CHROMIUM} does not exist.`, '#  Install Chromium from Debian to run them:  apt-get update && apt-get install -y chromium', '#'.repeat(100), ''].join('\n'),
  );
}
const itInBrowser = hasChromium ? it : it.skip;
const SHOTS = process.env.BATON_SCREENSHOTS === '1' ? join(ROOT, 'docs/images') : mkdtempSync(join(tmpdir(), 'baton-shots-'));
const ENV = 'ui';
const scope = { appId: 'demo', environment: ENV };

describe('dashboard', () => {
  let service: Service;
  let browser: Browser | undefined;
  let worker: FixtureWorker;
  let readOnly: string;
  let workflowId: string;
  let scheduleId: string;
  const problems: string[] = [];
  const outside: string[] = [];

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService({ env: { WORKER_GONE_MS: '1000' } }), hasChromium ? launchChromium() : Promise.resolve(undefined)]);
    readOnly = await createTokenViaCli(service.storeUrl, ['demo'], [], 'read-only');
    worker = await startWorker({ url: service.url, token: service.token, environment: ENV });
    const dispatch = (name: string, input: string, tag?: string) =>
      service.gql('mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', { input: { ...scope, name, input, ...(tag ? { tag } : {}) } });
    for (let i = 0; i < 3; i++) await dispatch('Sequential', `["order ${i}"]`, `order:${i}`);
    workflowId = (await dispatch('ChargeOrder', '["A-7"]', 'order:A-7')).body.data.dispatchWorkflow.id;
    await waitFor(async () => (await service.gql('query($id: ID!) { workflow(appId: "demo", environment: "ui", id: $id) { state } }', { id: workflowId })).body.data.workflow.state === 'FAILED', {
      timeoutMs: 20_000,
      description: 'ChargeOrder to fail',
    });
    const schedule = await service.gql('mutation($input: ScheduleWorkflowInput!) { scheduleWorkflow(input: $input) { id } }', {
      input: { ...scope, cron: '0 9 * * 1-5', name: 'Sequential', input: '["daily"]', timezone: 'Europe/Paris' },
    });
    scheduleId = schedule.body.data.scheduleWorkflow.id;
  });
  afterAll(async () => {
    await browser?.close();
    await killAllWorkers();
    await service?.stop();
  });

  async function signIn(token: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
    page.on('request', (r) => {
      const { hostname, protocol } = new URL(r.url());
      if (!['data:', 'blob:'].includes(protocol) && hostname !== '127.0.0.1') outside.push(r.url());
    });
    await page.goto(`${service.url}/ui`);
    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('textbox', { name: 'Environment' }).fill(ENV);
    return { context, page };
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `dashboard-${name}.png`) });
  const nav = (page: Page, label: string) => page.getByRole('link', { name: label, exact: true }).click();

  itInBrowser('an operator finds a failed workflow through the filters, reads its error in the timeline, retries it and sees it complete', async () => {
    const { context, page } = await signIn(service.token);

    await nav(page, 'Failures');
    const group = page.getByTestId('failures-table').getByRole('row').filter({ hasText: 'payment gateway refused A-7' });
    await group.waitFor();
    await expect(group.textContent()).resolves.toContain('ChargeOrder');
    await shot(page, 'failures');

    await nav(page, 'Workflows');
    const rows = page.getByTestId('workflows-table').locator('tbody tr');
    await waitFor(async () => (await rows.count()) === 4, { timeoutMs: 10_000, description: 'the four workflows listed' });
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('ChargeOrder');
    await page.getByTestId('state-counts').getByRole('button', { name: /^FAILED/ }).click();
    await waitFor(async () => (await rows.count()) === 1, { timeoutMs: 10_000, description: 'the filters to leave the failed workflow alone' });
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('');
    await page.getByTestId('state-counts').getByRole('button', { name: /^FAILED/ }).click();
    await waitFor(async () => (await rows.count()) === 4, { timeoutMs: 10_000, description: 'the filters to be cleared' });
    await shot(page, 'workflows');
    await page.getByRole('textbox', { name: 'Name', exact: true }).fill('ChargeOrder');
    await page.getByTestId('state-counts').getByRole('button', { name: /^FAILED/ }).click();
    await waitFor(async () => (await rows.count()) === 1, { timeoutMs: 10_000, description: 'the failed workflow' });
    await rows.first().getByRole('link').click();

    const failedEvent = page.getByTestId('timeline').locator('.mantine-Accordion-item').filter({ hasText: 'WorkflowFailed' });
    await failedEvent.waitFor();
    await expect(failedEvent.textContent()).resolves.toContain('payment gateway refused A-7');
    await failedEvent.locator('button').first().click();
    await expect(failedEvent.textContent()).resolves.toContain('"actor"');
    await expect(page.getByTestId('workflow-error').textContent()).resolves.toBe('payment gateway refused A-7');
    await shot(page, 'workflow-failed');

    await page.getByTestId('workflow-actions').getByRole('button', { name: 'Retry' }).click();
    await page.locator('[data-state="COMPLETED"]').first().waitFor({ timeout: 20_000 });
    await page.getByTestId('timeline').getByText('WorkflowCompleted').waitFor();
    await expect(page.getByTestId('timeline').textContent()).resolves.toContain('WorkflowRetried');
    const state = await service.gql('query($id: ID!) { workflow(appId: "demo", environment: "ui", id: $id) { state output } }', { id: workflowId });
    expect(state.body.data.workflow.state).toBe('COMPLETED');
    await shot(page, 'workflow');

    await nav(page, 'Audit');
    await page.getByTestId('audit-table').getByText('WorkflowRetried').waitFor();
    await shot(page, 'audit');
    await context.close();
  });

  itInBrowser('an operator pauses and resumes a schedule', async () => {
    const { context, page } = await signIn(service.token);
    await nav(page, 'Schedules');
    const row = page.locator('tr[data-schedule="Sequential"]');
    await row.waitFor();
    await expect(row.textContent()).resolves.toContain('Monday through Friday');
    await row.getByRole('button', { name: 'Pause' }).click();
    await row.locator('[data-state="PAUSED"]').waitFor();
    const read = async () => (await service.gql('query($id: ID!) { schedule(appId: "demo", environment: "ui", id: $id) { state } }', { id: scheduleId })).body.data.schedule.state;
    expect(await read()).toBe('PAUSED');
    await row.getByRole('button', { name: 'Resume' }).click();
    await row.locator('[data-state="ACTIVE"]').waitFor();
    expect(await read()).toBe('ACTIVE');
    await row.getByRole('button', { name: 'Firings' }).click();
    await shot(page, 'schedules');
    await context.close();
  });

  itInBrowser('shows a worker appear and disappear', async () => {
    const { context, page } = await signIn(service.token);
    await nav(page, 'Workers');
    await page.locator(`tr[data-worker="${worker.workerId}"][data-connected="true"]`).waitFor();
    const second = await startWorker({ url: service.url, token: service.token, environment: ENV });
    await page.locator(`tr[data-worker="${second.workerId}"][data-connected="true"]`).waitFor();
    await service.gql('mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', { input: { ...scope, name: 'Unserved', input: '[]' } });
    await page.getByText('decision Unserved: 1 · no worker').waitFor();
    await shot(page, 'workers');
    await second.stop();
    await page.locator(`tr[data-worker="${second.workerId}"][data-connected="false"]`).waitFor({ timeout: 15_000 });
    await context.close();
  });

  itInBrowser('a read-only token sees no action buttons and the API refuses it', async () => {
    const { context, page } = await signIn(readOnly);
    await expect(page.getByTestId('role').textContent()).resolves.toBe('read-only');
    await page.goto(`${service.url}/ui#/workflows/${workflowId}`);
    await page.getByTestId('timeline').getByText('WorkflowCompleted').waitFor();
    expect(await page.getByTestId('workflow-actions').count()).toBe(0);
    expect(await page.getByRole('button', { name: /Retry|Pause|Terminate/ }).count()).toBe(0);
    await nav(page, 'Schedules');
    await page.locator('tr[data-schedule="Sequential"]').waitFor();
    expect(await page.getByRole('button', { name: /Pause|Trigger now|Delete/ }).count()).toBe(0);
    await nav(page, 'Failures');
    await page.getByText('Nothing is failed.').waitFor();

    const answer = await page.evaluate(async ([token, id]) => {
      const response = await fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: 'mutation($input: PauseScheduleInput!) { pauseSchedule(input: $input) { state } }', variables: { input: { appId: 'demo', environment: 'ui', id } } }),
      });
      return response.json();
    }, [readOnly, scheduleId]);
    expect(answer.errors[0].extensions.code).toBe('FORBIDDEN');
    await context.close();
  });

  itInBrowser('an auditor pages back through a filtered audit log by cursor and returns to the newest', async () => {
    // 101 pauses and resumes of the schedule: more matches for "SchedulePaused" than a page holds.
    // Each pause then its resume, 100 fields a request (see mutateInOrder).
    const schedule = { ...scope, id: scheduleId };
    const controls = await mutateInOrder(service, Array.from({ length: 202 }, (_, i): [string, string, Record<string, unknown>] => (i % 2 === 0 ? ['pauseSchedule', 'PauseScheduleInput', schedule] : ['resumeSchedule', 'ResumeScheduleInput', schedule])));
    expect(controls).toEqual(Array(202).fill(scheduleId));
    const { context, page } = await signIn(service.token);
    await nav(page, 'Audit');
    const rows = page.getByTestId('audit-table').locator('tbody tr');
    await waitFor(async () => (await rows.count()) === 100, { timeoutMs: 10_000, description: 'the first page of the audit log' });
    await page.getByRole('textbox', { name: 'Action' }).click();
    await page.getByRole('option', { name: 'SchedulePaused', exact: true }).click();
    // The earlier test paused it once more.
    const pauses = (await service.gql('query($f: AuditFilterInput!) { auditLog(filter: $f) { totalCount } }', { f: { ...scope, action: 'SchedulePaused' } })).body.data.auditLog.totalCount;
    expect(pauses).toBeGreaterThan(100);
    await waitFor(async () => (await page.getByText(`${pauses} actions`).count()) === 1, { timeoutMs: 10_000, description: 'the pauses counted' });
    expect(await rows.count()).toBe(100);
    await page.getByRole('button', { name: 'Load older actions' }).click();
    await waitFor(async () => (await rows.count()) === pauses, { timeoutMs: 10_000, description: 'the older page appended' });
    await page.getByRole('button', { name: 'Back to the newest (refreshing)' }).waitFor();
    expect(await page.getByRole('button', { name: 'Load older actions' }).count()).toBe(0);
    // Every row is a pause, each shown once.
    expect(await rows.filter({ hasText: 'SchedulePaused' }).count()).toBe(pauses);
    await page.getByRole('button', { name: 'Back to the newest (refreshing)' }).click();
    await waitFor(async () => (await rows.count()) === 100, { timeoutMs: 10_000, description: 'the newest page again' });
    await context.close();
  });

  itInBrowser('loaded nothing from outside the service and hit no page errors', () => {
    expect(outside).toEqual([]);
    expect(problems.filter((p) => !/status of 4\d\d/.test(p))).toEqual([]);
  });
});
