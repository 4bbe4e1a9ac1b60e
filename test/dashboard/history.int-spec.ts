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
 * The timeline is windowed: whatever the history's length, only the events in and near its view
 * are in the page, and scrolling it reaches every one.
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

/**
 * Sends the events `e${from}` … `e${to - 1}` (data `data(i)`) to the workflow through the API:
 * `batch` sendEventToWorkflows in each request (aliased fields, which GraphQL runs one after
 * another), `concurrency` requests at a time. 10,100 events took 6–9 s so, against 31–35 s as
 * 32 requests of one at a time (on a busy machine): the time went into the requests, not the events.
 */
async function sendEvents(service: Service, id: string, from: number, to: number, data: (i: number) => string, { batch = 50, concurrency = 8 } = {}): Promise<void> {
  let next = from;
  const send = async () => {
    for (let first = next; first < to; first = next) {
      next = Math.min(to, first + batch);
      const indexes = Array.from({ length: next - first }, (_, k) => first + k);
      const query = `mutation(${indexes.map((i) => `$e${i}: SendEventToWorkflowsInput!`).join(', ')}) { ${indexes.map((i) => `e${i}: sendEventToWorkflows(input: $e${i}) { changed }`).join(' ')} }`;
      const variables = Object.fromEntries(indexes.map((i) => [`e${i}`, { ...scope, selector: { id }, name: `e${i}`, data: data(i) }]));
      const answer = await service.gql(query, variables);
      if (answer.body.errors || indexes.some((i) => answer.body.data[`e${i}`]?.changed !== 1)) throw new Error(`events ${first}-${next - 1}: ${JSON.stringify(answer.body).slice(0, 1000)}`);
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
  /** For the tests that need no particular limits: one service started, not one each. */
  let service: Service;
  const services: Service[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    if (!hasChromium) return;
    [service, browser] = await Promise.all([startService(), launchChromium()]);
    services.push(service);
  });
  afterAll(async () => {
    await browser?.close();
    for (const service of services) await service.stop();
  });

  /**
   * Opens the workflow's page signed in: the token and environment are put where the sign-in form
   * and the environment box keep them (the dashboard suite drives those), so the page loads once.
   */
  async function openWorkflow(service: Service, id: string): Promise<Page> {
    const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addInitScript(
      ({ token, environment }) => {
        sessionStorage.setItem('baton.token', token);
        localStorage.setItem('baton.app', 'demo');
        localStorage.setItem('baton.env', environment);
      },
      { token: service.token, environment: ENV },
    );
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console error: ${m.text()}`));
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

  /** What the timeline's scroll box holds and shows. */
  interface View {
    /** The revision of each event in the page, in order. */
    rendered: number[];
    /** The revisions of those in the box's view. */
    visible: number[];
    /** The rows in the page cover the box's view: no blank where events should be. */
    covered: boolean;
  }
  const SCROLL = { start: 0, middle: 0.5, end: 1 };

  /**
   * Scrolls the timeline's box (to its start, middle or end) until what it shows passes `check`:
   * rows are rendered and measured as they come into view, so the box's length may change once
   * or twice after the first scroll.
   */
  async function scrollTimeline(page: Page, where: keyof typeof SCROLL, check: (view: View) => boolean, description: string): Promise<View> {
    let view: View | undefined;
    return waitFor(
      async () => {
        view = await page.getByTestId('timeline').evaluate((box, fraction) => {
          box.scrollTop = fraction * (box.scrollHeight - box.clientHeight);
          const top = box.getBoundingClientRect().top + box.clientTop;
          const bottom = top + box.clientHeight;
          const rows = [...box.querySelectorAll('.mantine-Accordion-item')].map((item) => ({ revision: Number(item.querySelector('button p')?.textContent), rect: item.getBoundingClientRect() }));
          return {
            rendered: rows.map((r) => r.revision),
            visible: rows.filter((r) => r.rect.bottom > top + 1 && r.rect.top < bottom - 1).map((r) => r.revision),
            covered: rows.length > 0 && rows[0].rect.top <= top + 1 && rows[rows.length - 1].rect.bottom >= bottom - 1,
          };
        }, SCROLL[where]);
        return check(view) ? view : undefined;
      },
      { timeoutMs: 10_000, description: `${description} (at the ${where} of the timeline)` },
    ).catch((e: Error) => {
      const v = view && { ...view, rendered: `${view.rendered.length} rows: ${view.rendered.slice(0, 3).join(', ')} … ${view.rendered.slice(-3).join(', ')}` };
      throw new Error(`${e.message}; it showed ${JSON.stringify(v)}`);
    });
  }

  /** `list` is the revisions from `first` on, one after another. */
  const isRun = (list: number[], first = list[0]) => list.length > 0 && list.every((revision, i) => revision === first + i);
  /** Rows in the page at once, whatever the history's length (a screenful is about 15). */
  const MAX_ROWS = 200;

  itInBrowser('a history longer than 10,000 events shows its first 500, says how many there are, and shows every one after loading the rest, never more than a screenful or two of rows at once', async () => {
    const id = await unservedWorkflow(service);
    await sendEvents(service, id, 0, 10_099, (i) => `[${i}]`);
    // The last one alone, after all the others (sent in parallel): it ends the history.
    await sendEvents(service, id, 10_099, 10_100, (i) => `[${i}]`);
    const total = await historyLength(service, id, 10_000);
    expect(total).toBeGreaterThan(10_100);

    const page = await openWorkflow(service, id);
    await waitFor(async () => (await items(page).count()) > 0, { timeoutMs: 20_000, description: 'the timeline' });
    const shown = Number(await page.getByTestId('history-progress').getAttribute('data-shown'));
    // Before it knows the length it says "Showing 500 of 500+ events": never a part as the whole.
    const saysPart = new RegExp(`^Showing ${n(shown)} of (${n(total)}|${n(shown)}\\+) events$`);
    if (shown !== total && (await page.getByText(saysPart).count()) === 0) {
      throw new Error(`the timeline shows ${n(shown)} of the ${n(total)} events without saying so`);
    }
    await countReads(page, `Showing 500 of ${n(total)} events`, 20_000);
    await scrollTimeline(page, 'start', (v) => v.covered && v.visible[0] === 0 && isRun(v.rendered, 0) && v.rendered.length < MAX_ROWS, 'the first events');
    await page.getByTestId('tasks-partial').waitFor();
    await scrollTimeline(page, 'end', (v) => v.covered && v.visible.at(-1) === 499 && v.rendered.at(-1) === 499 && isRun(v.rendered), 'the 500th event, the last read');

    await page.getByTestId('history-progress').getByRole('button', { name: 'Load 500 more' }).click();
    await countReads(page, `Showing 1,000 of ${n(total)} events`, 20_000);
    await scrollTimeline(page, 'end', (v) => v.covered && v.visible.at(-1) === 999 && isRun(v.rendered), 'the 1,000th event');

    await page.getByTestId('history-progress').getByRole('button', { name: `Load all ${n(total)}` }).click();
    await countReads(page, `${n(total)} events`, 60_000);
    expect(await page.getByTestId('history-progress').getAttribute('data-complete')).toBe('true');
    expect(await page.getByTestId('tasks-partial').count()).toBe(0);
    expect(await page.locator('[data-testid="history-progress"] button, [data-testid="history-bottom-progress"]').count()).toBe(0);

    // Every event is reached by scrolling, and only those in and near the view are in the page.
    const end = await scrollTimeline(page, 'end', (v) => v.covered && v.visible.at(-1) === total - 1 && v.rendered.at(-1) === total - 1, 'the last event');
    expect(end.rendered.length).toBeLessThan(MAX_ROWS);
    expect(isRun(end.rendered)).toBe(true);
    expect(end.rendered).not.toContain(0);
    const last = items(page).last();
    expect(await last.getByTestId('timeline-summary').textContent()).toBe('e10099 [10099]');
    const middle = await scrollTimeline(page, 'middle', (v) => v.covered && v.visible.includes(Math.floor(total / 2)), 'the events halfway');
    expect(middle.rendered.length).toBeLessThan(MAX_ROWS);
    expect(isRun(middle.rendered)).toBe(true);

    // An event expanded stays expanded when scrolled out of the page and back.
    await scrollTimeline(page, 'end', (v) => v.covered && v.visible.at(-1) === total - 1, 'the last event again');
    await last.getByRole('button').first().click();
    await waitFor(async () => (await last.textContent())!.includes('"name": "e10099"'), { description: "the last event's data" });
    const start = await scrollTimeline(page, 'start', (v) => v.covered && v.visible[0] === 0, 'the first event');
    expect(start.rendered).not.toContain(total - 1);
    await scrollTimeline(page, 'end', (v) => v.covered && v.visible.at(-1) === total - 1, 'the last event, still expanded');
    expect(await last.getByRole('button').first().getAttribute('aria-expanded')).toBe('true');
    expect((await last.textContent())!.includes('"name": "e10099"')).toBe(true);

    // Once the whole history is shown, new events are appended as they happen.
    await sendEvents(service, id, 10_100, 10_101, () => '["late"]');
    await countReads(page, `${n(total + 1)} events`, 20_000);
    await scrollTimeline(page, 'end', (v) => v.covered && v.visible.at(-1) === total, 'the new event');
    expect(await items(page).last().getByTestId('timeline-summary').textContent()).toBe('e10100 ["late"]');
    await page.context().close();
  }, 240_000);

  itInBrowser('a history whose first page exceeds MAX_RESPONSE_BYTES is read in shorter requests and shown whole, not as an error', async () => {
    const service = await startService({ env: { MAX_RESPONSE_BYTES: String(256 * 1024), MAX_PAYLOAD_BYTES: String(64 * 1024), MAX_DECISION_BYTES: String(64 * 1024) } });
    services.push(service);
    expect(service.messages()).not.toMatch(/MAX_RESPONSE_BYTES/);
    const id = await unservedWorkflow(service);
    // 24 events of 40 KB: 960 KB in all, under 256 KB only four at a time.
    const big = (i: number) => JSON.stringify([`${i}:${'x'.repeat(40_000)}`]);
    await sendEvents(service, id, 0, 24, big, { batch: 1, concurrency: 4 });
    const total = await historyLength(service, id, 4);
    expect(total).toBeGreaterThan(24);
    const whole = await service.gql('query($id: ID!) { workflowHistory(appId: "demo", environment: "history", id: $id, first: 500) { revision data } }', { id });
    expect(whole.body.errors?.[0].extensions?.code).toBe('PAYLOAD_TOO_LARGE');

    const page = await openWorkflow(service, id);
    await countReads(page, `${n(total)} events`, 20_000).catch((e: Error) => {
      throw new Error(`${e.message}; the API answered ${JSON.stringify(whole.body.errors?.[0].extensions?.code)} for one page of 500`);
    });
    await scrollTimeline(page, 'start', (v) => v.covered && isRun(v.rendered, 0), 'the first events');
    await scrollTimeline(page, 'end', (v) => v.covered && v.visible.at(-1) === total - 1 && isRun(v.rendered), 'the last event');
    expect(await page.getByTestId('history-error').count()).toBe(0);
    const last = items(page).last();
    await last.locator('button').first().click();
    // (a boolean: a failure would print 40 KB)
    await waitFor(async () => (await last.textContent())!.includes(`:${'x'.repeat(40_000)}"`), { description: "the last event's data" });
    await page.context().close();
  });

  itInBrowser("a schedule's last ten firings are read from the end of its history, newest first", async () => {
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
