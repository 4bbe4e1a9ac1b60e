import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { CHROMIUM, hasChromium, launchChromium } from '../support/chromium.js';

/**
 * The workflow page reads a history in pages (`fromRevision` + `first`), never in one request:
 * a history longer than the service answers at once (10,000 events) is shown whole after
 * "Load all", and says how much of it is shown until then; a history of large events, whose
 * first page would exceed MAX_RESPONSE_BYTES, is read in shorter requests instead of failing.
 * Both workflows are served by no worker, so their histories are what the test sent them.
 */
if (!hasChromium) process.stderr.write(`\nSKIPPING the dashboard history browser tests: ${CHROMIUM} does not exist (apt-get install -y chromium).\n`);
const itInBrowser = hasChromium ? it : it.skip;
const ENV = 'history';
const scope = { appId: 'demo', environment: ENV };
const n = (x: number) => x.toLocaleString('en');

async function unservedWorkflow(service: Service): Promise<string> {
  const dispatched = await service.gql('mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }', { input: { ...scope, name: 'Unserved', input: '[]' } });
  expect(dispatched.body.errors).toBeUndefined();
  return dispatched.body.data.dispatchWorkflow.id;
}

/** Sends `count` events to the workflow, `concurrency` requests at a time. */
async function sendEvents(service: Service, id: string, count: number, data: (i: number) => string, concurrency = 32): Promise<void> {
  let next = 0;
  const send = async () => {
    for (let i = next++; i < count; i = next++) {
      const answer = await service.gql('mutation($input: SendEventToWorkflowsInput!) { sendEventToWorkflows(input: $input) { changed } }', {
        input: { ...scope, selector: { id }, name: `e${i}`, data: data(i) },
      });
      if (answer.body.errors || answer.body.data.sendEventToWorkflows.changed !== 1) throw new Error(`event ${i}: ${JSON.stringify(answer.body)}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, send));
}

/** How many events the workflow's history holds, counted through the API a page at a time (`first` events). */
async function historyLength(service: Service, id: string, first: number): Promise<number> {
  for (let from = 0; ; ) {
    const answer = await service.gql('query($id: ID!, $from: Int!, $first: Int!) { workflowHistory(appId: "demo", environment: "history", id: $id, fromRevision: $from, first: $first) { revision } }', {
      id,
      from,
      first,
    });
    const page: Array<{ revision: number }> = answer.body.data.workflowHistory;
    if (page.length < first) return from + page.length;
    from = page[page.length - 1].revision + 1;
  }
}

describe('dashboard: a workflow history read in pages', () => {
  let browser: Browser | undefined;
  const services: Service[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    if (hasChromium) {
      browser = await launchChromium();
    }
  });
  afterAll(async () => {
    await browser?.close();
    for (const service of services) await service.stop();
  });

  async function openWorkflow(service: Service, id: string): Promise<Page> {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
    await page.goto(`${service.url}/ui`);
    await page.getByLabel('API token').fill(service.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('textbox', { name: 'Environment' }).fill(ENV);
    await page.goto(`${service.url}/ui#/workflows/${id}`);
    return page;
  }

  /** Waits until the timeline's count reads `text`, and says what it read last if it never does. */
  async function countReads(page: Page, text: string, timeoutMs = 20_000): Promise<void> {
    let last: string | null = null;
    await waitFor(async () => (last = await page.getByTestId('history-count').textContent()) === text, { timeoutMs, description: `the count "${text}"` }).catch((e: Error) => {
      throw new Error(`${e.message} (it read "${last}")`);
    });
  }

  const items = (page: Page) => page.getByTestId('timeline').locator('.mantine-Accordion-item');
  /** The revision shown on each timeline item, in order. */
  const revisions = (page: Page) =>
    page.getByTestId('timeline').evaluate((timeline) => [...timeline.querySelectorAll('.mantine-Accordion-item')].map((item) => Number(item.querySelector('button p')?.textContent)));

  itInBrowser('a history longer than 10,000 events shows its first 500, says how many there are, and shows every one after loading the rest', async () => {
    const service = await startService();
    services.push(service);
    const id = await unservedWorkflow(service);
    await sendEvents(service, id, 10_100, (i) => `[${i}]`);
    const total = await historyLength(service, id, 10_000);
    expect(total).toBeGreaterThan(10_100);

    const page = await openWorkflow(service, id);
    await waitFor(async () => (await items(page).count()) > 0, { timeoutMs: 20_000, description: 'the timeline' });
    const shown = await items(page).count();
    // Before it knows the length it says "Showing 500 of 500+ events": never a part as the whole.
    const saysPart = new RegExp(`^Showing ${n(shown)} of (${n(total)}|${n(shown)}\\+) events$`);
    if (shown !== total && (await page.getByText(saysPart).count()) === 0) {
      throw new Error(`the timeline shows ${n(shown)} of the ${n(total)} events without saying so`);
    }
    await countReads(page, `Showing 500 of ${n(total)} events`, 20_000);
    expect(await items(page).count()).toBe(500);
    expect(await revisions(page)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    await page.getByTestId('tasks-partial').waitFor();

    await page.getByTestId('history-progress').getByRole('button', { name: 'Load 500 more' }).click();
    await countReads(page, `Showing 1,000 of ${n(total)} events`, 20_000);
    expect(await items(page).count()).toBe(1000);

    await page.getByTestId('history-progress').getByRole('button', { name: `Load all ${n(total)}` }).click();
    await countReads(page, `${n(total)} events`, 60_000);
    expect(await page.getByTestId('history-progress').getAttribute('data-complete')).toBe('true');
    expect(await revisions(page)).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(await page.getByTestId('tasks-partial').count()).toBe(0);
    // (by CSS: a role query over 10,000 items takes half a minute)
    expect(await page.locator('[data-testid="history-progress"] button, [data-testid="history-bottom-progress"]').count()).toBe(0);

    // Once the whole history is shown, new events are appended as they happen.
    await sendEvents(service, id, 1, () => '["late"]', 1);
    await countReads(page, `${n(total + 1)} events`, 20_000);
    await items(page).last().filter({ hasText: 'late' }).waitFor();
    await page.context().close();
  }, 240_000);

  itInBrowser('a history whose first page exceeds MAX_RESPONSE_BYTES is read in shorter requests and shown whole, not as an error', async () => {
    const service = await startService({ env: { MAX_RESPONSE_BYTES: String(256 * 1024), MAX_PAYLOAD_BYTES: String(64 * 1024), MAX_DECISION_BYTES: String(64 * 1024) } });
    services.push(service);
    expect(service.messages()).not.toMatch(/MAX_RESPONSE_BYTES/);
    const id = await unservedWorkflow(service);
    // 24 events of 40 KB: 960 KB in all, under 256 KB only four at a time.
    const big = (i: number) => JSON.stringify([`${i}:${'x'.repeat(40_000)}`]);
    await sendEvents(service, id, 24, big, 4);
    const total = await historyLength(service, id, 4);
    expect(total).toBeGreaterThan(24);
    const whole = await service.gql('query($id: ID!) { workflowHistory(appId: "demo", environment: "history", id: $id, first: 500) { revision data } }', { id });
    expect(whole.body.errors?.[0].extensions?.code).toBe('PAYLOAD_TOO_LARGE');

    const page = await openWorkflow(service, id);
    let shown = 0;
    await waitFor(async () => (shown = await items(page).count()) === total, { timeoutMs: 20_000, description: 'every event in the timeline' }).catch((e: Error) => {
      throw new Error(`${e.message} (it showed ${shown}; the API answered ${JSON.stringify(whole.body.errors?.[0].extensions?.code)} for one page of 500)`);
    });
    await countReads(page, `${n(total)} events`, 20_000);
    expect(await revisions(page)).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(await page.getByTestId('history-error').count()).toBe(0);
    const last = items(page).last();
    await last.locator('button').first().click();
    // (a boolean: a failure would print 40 KB)
    expect((await last.textContent())!.includes(`:${'x'.repeat(40_000)}"`)).toBe(true);
    await page.context().close();
  });

  itInBrowser("a schedule's last ten firings are read from the end of its history, newest first", async () => {
    const service = await startService();
    services.push(service);
    const created = await service.gql('mutation($input: ScheduleWorkflowInput!) { scheduleWorkflow(input: $input) { id } }', {
      input: { ...scope, cron: '0 9 * * 1-5', name: 'Unserved', input: '[]', timezone: 'Europe/Paris' },
    });
    const scheduleId: string = created.body.data.scheduleWorkflow.id;
    const dispatched: string[] = [];
    for (let i = 0; i < 12; i++) {
      const triggered = await service.gql('mutation($input: TriggerScheduleInput!) { triggerSchedule(input: $input) { id schedule { historyLength } } }', { input: { ...scope, id: scheduleId } });
      expect(triggered.body.errors).toBeUndefined();
      dispatched.push(triggered.body.data.triggerSchedule.id);
    }
    const read = await service.gql('query($id: ID!) { schedule(appId: "demo", environment: "history", id: $id) { historyLength } scheduleHistory(appId: "demo", environment: "history", id: $id) { revision } }', { id: scheduleId });
    expect(read.body.data.schedule.historyLength).toBe(read.body.data.scheduleHistory.length);

    const page = await openWorkflow(service, dispatched[0]);
    await page.getByRole('link', { name: 'Schedules', exact: true }).click();
    const row = page.locator('tr[data-schedule="Unserved"]');
    await row.getByRole('button', { name: 'Firings' }).click();
    const links = page.locator(`a[href^="#/workflows/"]`);
    const hrefs = async () => links.evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    const expected = dispatched.slice(-10).reverse().map((id) => `#/workflows/${id}`);
    await waitFor(async () => JSON.stringify(await hrefs()) === JSON.stringify(expected), { timeoutMs: 20_000, description: 'the last ten firings, newest first' });
    await page.context().close();
  });

  itInBrowser('hit no page errors', () => {
    expect(problems.filter((p) => !/status of 4\d\d/.test(p))).toEqual([]);
  });
});
