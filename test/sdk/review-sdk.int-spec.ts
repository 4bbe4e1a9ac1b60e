/**
 * Review of the SDK's public API (review-sdk).
 *
 * A worker declares its tasks and workflows in every poll (and every eager claim); the service
 * checks that registration: a task's timeout is at least 1 ms, and task and workflow names are 1
 * to 256 characters without control characters. `new Worker` checks the timeout's upper bound,
 * `maxAttempts` and `backoffFactor` ("a Worker given anything else throws when it is made, naming
 * the task", README), but not these: a task with `timeout: 0` (read as "no timeout" by many), a
 * sub-millisecond timeout (rounded to 0), or a name the service refuses made every poll of the
 * worker refused (BAD_USER_INPUT), for ever. The worker then served nothing at all (none of its
 * other tasks, none of its workflows), `run()` never settled, and all it said was a warning a minute.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';
import { POLL_WORK } from '../../src/protocol/index.js';
import { type Service, startService } from '../support/service.js';

const noop = defineWorkflow('Noop', async () => 1);
const ok = defineTask('ok', () => 1);

const refused: Array<[string, { tasks?: ReturnType<typeof defineTask>[]; workflows?: ReturnType<typeof defineWorkflow>[]; workerId?: string }, string]> = [
  ['a task timeout of 0', { tasks: [defineTask('zeroTimeout', () => 1, { timeout: 0 })] }, 'zeroTimeout'],
  ['a task timeout of "0s"', { tasks: [defineTask('zeroSeconds', () => 1, { timeout: '0s' })] }, 'zeroSeconds'],
  ['a task timeout under half a millisecond (sent rounded, as 0)', { tasks: [defineTask('tinyTimeout', () => 1, { timeout: 0.4 })] }, 'tinyTimeout'],
  ['an empty task name', { tasks: [defineTask('', () => 1)] }, 'task'],
  ['a task name of 257 characters', { tasks: [defineTask('t'.repeat(257), () => 1)] }, 'task'],
  ['a task name with a newline', { tasks: [defineTask('send\nmail', () => 1)] }, 'task'],
  ['an empty workflow name', { workflows: [defineWorkflow('', async () => 1)] }, 'workflow'],
  ['a workflow name of 257 characters', { workflows: [defineWorkflow('W'.repeat(257), async () => 1)] }, 'workflow'],
  ['a workflow name with a tab', { workflows: [defineWorkflow('On\tboarding', async () => 1)] }, 'workflow'],
  ['an empty workerId', { workerId: '' }, 'workerId'],
  ['a workerId of 129 characters', { workerId: 'w'.repeat(129) }, 'workerId'],
];

let service: Service;

beforeAll(async () => {
  service = await startService();
}, 60_000);

afterAll(() => service?.stop());

describe('a worker registration the service refuses', () => {
  it.each(refused)('with %s, every poll is refused by the service (BAD_USER_INPUT)', async (_what, given) => {
    const client = new Client({ url: service.url, token: service.token });
    const tasks = [ok, ...(given.tasks ?? [])].map((t) => ({
      name: t.name,
      retry: null,
      timeoutMs: t.options.timeout !== undefined ? Math.round(typeof t.options.timeout === 'number' ? t.options.timeout : 0) : null,
    }));
    const poll = client.request(POLL_WORK, {
      input: { appId: 'demo', environment: 'review-sdk-refused', workerId: given.workerId ?? 'review-sdk', workflows: [noop, ...(given.workflows ?? [])].map((w) => w.name), tasks, maxItems: 1, waitMs: 0 },
    });
    await expect(poll).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
  });

  it.each(refused)('with %s, new Worker throws a TypeError naming it, instead of polling in vain for ever', (_what, given, names) => {
    const make = () =>
      new Worker({
        url: service.url,
        token: service.token,
        appId: 'demo',
        environment: 'review-sdk-refused',
        tasks: [ok, ...(given.tasks ?? [])],
        workflows: [noop, ...(given.workflows ?? [])],
        ...(given.workerId !== undefined ? { workerId: given.workerId } : {}),
        logger: { info() {}, warn() {}, error() {} },
      });
    expect(make).toThrow(TypeError);
    expect(make).toThrow(names);
  });
});
