import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { getIntrospectionQuery } from 'graphql';
import type { Browser, Page } from 'playwright-core';
import { Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { CHROMIUM, hasChromium, launchChromium } from '../support/chromium.js';

/**
 * The two explorers. GET /explorer (GraphiQL from node_modules, offline) is driven in headless
 * Chromium from Debian (`apt-get install -y chromium`; never downloaded): enter the token, run
 * dispatchWorkflow for app `demo` through the UI, read the id from the result pane, and check
 * that the page talked to nobody but this service. GET /graphql (Apollo Sandbox from Apollo's
 * CDN) is checked over plain HTTP only: no internet here.
 */

if (!hasChromium) {
  process.stderr.write(
    [
      '',
      '#'.repeat(100),
      `#  SKIPPING the headless-browser explorer tests: ${CHROMIUM} does not exist.`,
      '#  Install Chromium from Debian to run them:  apt-get update && apt-get install -y chromium',
      '#'.repeat(100),
      '',
    ].join('\n'),
  );
}
const itInBrowser = hasChromium ? it : it.skip;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Recorded {
  requests: Array<{ url: string; method: string; authorization?: string; operationName?: string }>;
  problems: string[];
}

describe('explorers', () => {
  let service: Service;
  let browser: Browser | undefined;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), hasChromium ? launchChromium() : Promise.resolve(undefined)]);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  /** A fresh page (empty storage) that records every request it makes and every error it hits. */
  async function openPage(): Promise<{ page: Page; recorded: Recorded }> {
    const context = await browser!.newContext();
    const page = await context.newPage();
    const recorded: Recorded = { requests: [], problems: [] };
    page.on('request', (request) => {
      let operationName: string | undefined;
      try {
        operationName = request.method() === 'POST' ? request.postDataJSON()?.operationName ?? undefined : undefined;
      } catch {
        operationName = undefined;
      }
      recorded.requests.push({ url: request.url(), method: request.method(), authorization: request.headers()['authorization'], operationName });
    });
    page.on('response', async (response) => {
      if (response.status() < 400) return;
      const body = await response.text().catch(() => '');
      recorded.problems.push(`HTTP ${response.status()} for ${response.request().method()} ${response.url()}: ${body.slice(0, 300)}`);
    });
    page.on('pageerror', (error) => recorded.problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      // Failed loads are reported with their response body by the 'response' listener.
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) recorded.problems.push(`console error: ${message.text()}`);
    });
    page.on('requestfailed', (request) => recorded.problems.push(`request failed: ${request.url()} ${request.failure()?.errorText}`));
    return { page, recorded };
  }

  /** The text of one of GraphiQL's editors (CodeMirror 5 instances). Runs in the page, hence `globalThis`. */
  const editorText = (page: Page, selector: string) =>
    page.evaluate((s): string => (globalThis as any).document.querySelector(s)?.CodeMirror?.getValue() ?? '', selector);

  /** The result pane's text. */
  const resultText = (page: Page) => editorText(page, '.graphiql-response .CodeMirror');

  const storedToken = (page: Page) => page.evaluate((): string | null => (globalThis as any).sessionStorage.getItem('baton.apiToken'));

  async function enterToken(page: Page, token: string): Promise<void> {
    await page.locator('#token-input').waitFor({ state: 'visible', timeout: 10_000 });
    await page.fill('#token-input', token);
    await page.click('#token-submit');
  }

  /** Clicks GraphiQL's run button and waits for a dispatchWorkflow result in the result pane. */
  async function runAndReadWorkflowId(page: Page): Promise<string> {
    const run = page.locator('.graphiql-execute-button');
    await run.waitFor({ state: 'visible', timeout: 15_000 });
    await run.click();
    const text = await waitFor(
      async () => {
        const value = await resultText(page);
        return /"dispatchWorkflow"|"errors"/.test(value) ? value : '';
      },
      { timeoutMs: 15_000, intervalMs: 50, description: 'a result in the GraphiQL result pane' },
    );
    const id = JSON.parse(text)?.data?.dispatchWorkflow?.id;
    if (typeof id !== 'string') throw new Error(`no workflow id in the result pane:\n${text}`);
    return id;
  }

  /** This machine (or no network at all: data:, blob:, about:). */
  const isLocal = ({ protocol, hostname }: URL) =>
    ['data:', 'blob:', 'about:'].includes(protocol) || ['127.0.0.1', 'localhost', '[::1]'].includes(hostname);

  function expectOnlyLocalRequests(recorded: Recorded): void {
    expect(recorded.requests.filter(({ url }) => !isLocal(new URL(url))).map((r) => r.url)).toEqual([]);
  }

  itInBrowser('GraphiQL at /explorer asks for the token, then runs the default dispatchWorkflow example with it, offline', async () => {
    const { page, recorded } = await openPage();
    await page.goto(`${service.url}/explorer`);

    // The token form comes first, and nothing is sent to /graphql before a token is given.
    await expect(page.locator('#token-input').isVisible()).resolves.toBe(true);
    expect(await page.locator('#graphiql').isVisible()).toBe(false);
    expect(recorded.requests.filter((r) => r.url.endsWith('/graphql'))).toEqual([]);

    await enterToken(page, service.token);
    expect(await storedToken(page)).toBe(service.token);

    // The default document is the dispatchWorkflow example, with variables for app demo.
    await page.locator('.graphiql-query-editor .CodeMirror').waitFor({ timeout: 15_000 });
    const query = await editorText(page, '.graphiql-query-editor .CodeMirror');
    expect(query).toContain('mutation DispatchWorkflow($input: DispatchWorkflowInput!)');
    expect(query).toContain('dispatchWorkflow(input: $input)');
    const variables = JSON.parse(await waitFor(() => editorText(page, '.graphiql-editor-tool .CodeMirror'), { description: 'the variables editor' }));
    expect(variables).toMatchObject({ input: { appId: 'demo', environment: 'dev', name: 'Onboarding' } });

    const id = await runAndReadWorkflowId(page);
    expect(id).toMatch(UUID);
    const stored = await service.gql(`query($id: ID!) { workflow(appId: "demo", environment: "dev", id: $id) { id name tag } }`, { id });
    expect(stored.body).toEqual({ data: { workflow: { id, name: 'Onboarding', tag: 'email:ada@example.com' } } });

    // Every request to /graphql (schema introspection and the mutation) carried the token.
    const posts = recorded.requests.filter((r) => r.method === 'POST');
    expect(posts.map((r) => r.operationName)).toEqual(expect.arrayContaining(['IntrospectionQuery', 'DispatchWorkflow']));
    expect(posts.every((r) => new URL(r.url).pathname === '/graphql' && r.authorization === `Bearer ${service.token}`)).toBe(true);

    // Changing the token brings the form back and forgets the stored one.
    await page.click('#change-token');
    await page.locator('#token-input').waitFor({ state: 'visible', timeout: 5_000 });
    expect(await storedToken(page)).toBeNull();

    expectOnlyLocalRequests(recorded);
    expect(recorded.problems).toEqual([]);
    await page.context().close();
  });

  itInBrowser('GraphiQL takes the operation from ?query= and ?variables=', async () => {
    const { page, recorded } = await openPage();
    const query = 'mutation Dispatch($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }';
    const variables = JSON.stringify({ input: { appId: 'demo', environment: 'dev', name: 'FromUrl', input: '[1, 2]', tag: 'explorer-url' } });
    await page.goto(`${service.url}/explorer?${new URLSearchParams({ query, variables })}`);
    await enterToken(page, service.token);

    const id = await runAndReadWorkflowId(page);
    expect(id).toMatch(UUID);
    const stored = await service.gql(`query($id: ID!) { workflow(appId: "demo", environment: "dev", id: $id) { name tag input } }`, { id });
    expect(stored.body).toEqual({ data: { workflow: { name: 'FromUrl', tag: 'explorer-url', input: '[1,2]' } } });

    expectOnlyLocalRequests(recorded);
    expect(recorded.problems).toEqual([]);
    await page.context().close();
  });

  itInBrowser('Apollo Sandbox at GET /graphql asks for the token first, then embeds Sandbox with it as a shared header', async () => {
    const { page, recorded } = await openPage();
    // No internet in tests: Apollo's CDN script is replaced by a stand-in that records its options.
    await page.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (url.hostname === 'embeddable-sandbox.cdn.apollographql.com') {
        return route.fulfill({ contentType: 'text/javascript', body: 'window.EmbeddedSandbox = function (options) { window.sandboxOptions = options; };' });
      }
      return isLocal(url) ? route.continue() : route.abort();
    });
    await page.goto(`${service.url}/graphql`);
    await page.locator('#token-input').waitFor({ state: 'visible', timeout: 10_000 });
    expect(recorded.requests.filter((r) => !isLocal(new URL(r.url)))).toEqual([]);
    expect(await page.locator('a[href="/explorer"]').count()).toBeGreaterThan(0);

    await enterToken(page, service.token);
    const options = await waitFor(() => page.evaluate((): Record<string, any> | undefined => (globalThis as any).sandboxOptions), {
      timeoutMs: 10_000,
      description: 'new EmbeddedSandbox(...)',
    });
    expect(options).toMatchObject({
      target: '#sandbox',
      initialEndpoint: `${service.url}/graphql`,
      initialState: {
        sharedHeaders: { Authorization: `Bearer ${service.token}` },
        document: expect.stringContaining('dispatchWorkflow(input: $input)'),
        variables: { input: { appId: 'demo', environment: 'dev' } },
      },
    });
    expect(await storedToken(page)).toBe(service.token);
    expect(recorded.requests.filter((r) => !isLocal(new URL(r.url))).map((r) => r.url)).toEqual([
      'https://embeddable-sandbox.cdn.apollographql.com/02e2da0fccbe0240ef03d2396d6c98559bab5b06/embeddable-sandbox.umd.production.min.js',
    ]);
    expect(recorded.problems).toEqual([]);
    await page.context().close();
  });

  it('serves GraphiQL and its assets from the service itself, never from a CDN', async () => {
    const page = await fetch(`${service.url}/explorer`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    const html = await page.text();
    expect(html).toContain('id="token-form"');
    const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(sources.filter((s) => /^(https?:)?\/\//.test(s))).toEqual([]);
    for (const path of sources.filter((s) => s.startsWith('/explorer/'))) {
      const asset = await fetch(`${service.url}${path}`);
      expect([path, asset.status]).toEqual([path, 200]);
      expect(asset.headers.get('content-type')).toMatch(path.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(100);
    }
    const again = await fetch(`${service.url}/explorer/vendor/graphiql.min.js`, { method: 'HEAD' });
    const etag = again.headers.get('etag')!;
    expect((await fetch(`${service.url}/explorer/vendor/graphiql.min.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect((await fetch(`${service.url}/explorer/vendor/..%2Fpackage.json`)).status).toBe(404);
  });

  it('GET /graphql from a browser serves a landing page that asks for the token, then embeds Apollo Sandbox', async () => {
    const response = await fetch(`${service.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    // No other site may frame the page that takes the token (a <meta> policy cannot say so).
    expect(response.headers.get('content-security-policy')).toBe("frame-ancestors 'none'");
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    const html = await response.text();
    expect(html).toContain('id="token-form"');
    expect(html).toContain('id="token-input"');
    expect(html).toContain('API token');
    expect(html).toContain('https://embeddable-sandbox.cdn.apollographql.com/02e2da0fccbe0240ef03d2396d6c98559bab5b06/embeddable-sandbox.umd.production.min.js');
    expect(html).toContain("sharedHeaders: { Authorization: 'Bearer ' + token }");
    expect(html).toContain('dispatchWorkflow');
    expect(html).toContain('href="/explorer"');
    // Sandbox is created only once a token was given.
    expect(html.indexOf('new window.EmbeddedSandbox')).toBeGreaterThan(html.indexOf('function start(token)'));
    // A fresh nonce per response.
    const nonce = (text: string) => /'nonce-([^']+)'/.exec(text)?.[1];
    const second = await (await fetch(`${service.url}/graphql`, { headers: { accept: 'text/html' } })).text();
    expect(nonce(html)).toBeTruthy();
    expect(nonce(second)).not.toBe(nonce(html));
  });

  it('the explorers can load the schema: the standard introspection query passes the query limits', async () => {
    // GraphiQL and Apollo Sandbox both introspect first; without the schema they have no docs,
    // no completion and no validation.
    for (const options of [{}, { inputValueDeprecation: true }]) {
      const response = await service.gql(getIntrospectionQuery(options));
      expect({ status: response.status, errors: response.body.errors }).toEqual({ status: 200, errors: undefined });
      expect(response.body.data.__schema.queryType.name).toBe('Query');
    }
  });

  it('GET /graphql?query= needs a token (only the page itself is public), and CSRF prevention stays on', async () => {
    const url = `${service.url}/graphql?query=${encodeURIComponent('{ __typename }')}`;
    const anonymous = await fetch(url, { headers: { 'apollo-require-preflight': 'true' } });
    expect(anonymous.status).toBe(401);
    expect((await anonymous.json()).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    const auth = { authorization: `Bearer ${service.token}` };
    const blocked = await fetch(url, { headers: auth });
    expect(blocked.status).toBe(400);
    expect(JSON.stringify(await blocked.json())).toContain('Cross-Site Request Forgery');
    const allowed = await fetch(url, { headers: { ...auth, 'apollo-require-preflight': 'true' } });
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toEqual({ data: { __typename: 'Query' } });
  });
});
