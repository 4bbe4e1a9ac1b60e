/**
 * The answers README's *Errors* section shows (the ```text blocks after "A request without a valid
 * token" and "A selector with a tag alone") are what the service answers, body for body, and the
 * `extensions.limit` values the errors table names are the ones the service uses.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, Service, startService } from '../support/service.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The ```text block that follows `intro` in the README. */
function shown(intro: string): string {
  const at = README.indexOf(intro);
  if (at === -1) throw new Error(`README.md has no "${intro}"`);
  const match = /```text\n([\s\S]*?)```/.exec(README.slice(at));
  return match![1].trim();
}

async function post(service: Service, body: string, token?: string): Promise<{ status: number; wwwAuthenticate: string | null; text: string }> {
  const response = await fetch(`${service.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body,
  });
  return { status: response.status, wwwAuthenticate: response.headers.get('www-authenticate'), text: await response.text() };
}

describe('README error examples', () => {
  let service: Service;
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(() => service.stop());

  it('a request without a valid token answers as shown', async () => {
    const lines = shown('A request without a valid token:').split('\n');
    const answer = await post(service, '{"query":"{ viewer { role } }"}', 'baton_0123456789abcdef0123456789abcdef_notarealsecretnotarealsecretnotarealsec');
    expect(`HTTP/1.1 ${answer.status} Unauthorized`).toBe(lines[0]);
    expect(`WWW-Authenticate: ${answer.wwwAuthenticate}`).toBe(lines[1]);
    expect(answer.text.trim()).toBe(lines[lines.length - 1]);
  });

  it('a selector with a tag alone answers as shown', async () => {
    const answer = await post(
      service,
      '{"query":"mutation($input: PauseWorkflowsInput!) { pauseWorkflows(input: $input) { status } }","variables":{"input":{"appId":"demo","environment":"dev","selector":{"tag":"order:A-1001"}}}}',
      service.token,
    );
    expect(answer.text.trim()).toBe(shown('A selector with a tag alone:'));
  });

  it("the errors table names every extensions.limit of GRAPHQL_VALIDATION_FAILED, subscriptions' included", async () => {
    const row = README.split('\n').find((line) => line.startsWith('| `GRAPHQL_PARSE_FAILED`'))!;
    const answer = JSON.parse((await post(service, '{"query":"subscription { viewer { role } }"}', service.token)).text);
    const limit = answer.errors[0].extensions.limit as string;
    expect(limit).toBe('subscription');
    const says = /`extensions\.limit` says which: ([^)]*)\)/.exec(row)![1];
    expect(says).toContain(`\`${limit}\``);
  });
});
