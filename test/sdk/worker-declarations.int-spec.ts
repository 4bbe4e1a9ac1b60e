/**
 * `new Worker` checks what it will declare in every
 * poll against what the service takes (a task's timeout and retry delays up to 2^31 - 1 ms,
 * maxAttempts 1 to 1000, backoffFactor 1 to 100), because a value the service refuses made every
 * poll of the worker fail, for good, with nothing pointing at the task. It did not check the other
 * end of the timeout, nor the names it declares: a task defined with `timeout: 0` (or '0.4ms',
 * rounded to 0) is declared as `timeoutMs: 0`, which PollWorkInput refuses (at least 1); a task or
 * workflow name that is empty, holds a control character or is longer than 256 characters, or more
 * than 1000 of them, are refused the same way (tasks.N.name, workflows). The worker then logs
 * "poll failed ... BAD_USER_INPUT" and polls again, for ever: none of its tasks and workflows
 * runs, the healthy ones included. The same for a `workerId`, `appId` or `environment` the
 * service refuses (1 to 128 characters, no control characters).
 */
import { describe, expect, it } from '@jest/globals';
import { Worker, defineTask, defineWorkflow } from '../../src/sdk/index.js';

const base = { url: 'http://localhost:1', token: 't', appId: 'demo', environment: 'x' };
const noop = async () => null;

describe('new Worker refuses definitions whose declaration the service refuses in every poll', () => {
  it.each([
    ['timeout 0', [defineTask('t', noop, { timeout: 0 })], 'timeout'],
    ["timeout '0.4ms' (declared as 0 ms)", [defineTask('t', noop, { timeout: '0.4ms' })], 'timeout'],
    ['an empty task name', [defineTask('', noop)], 'name'],
    ['a task name with a newline', [defineTask('send\n', noop)], 'name'],
    ['a task name of 257 characters', [defineTask('x'.repeat(257), noop)], 'name'],
    ['1001 tasks', Array.from({ length: 1001 }, (_, i) => defineTask(`t${i}`, noop)), 'tasks'],
  ])('%s → TypeError naming it', (_label, tasks, what) => {
    expect(() => new Worker({ ...base, tasks })).toThrow(TypeError);
    expect(() => new Worker({ ...base, tasks })).toThrow(what);
  });

  it.each([
    ['an empty workflow name', ''],
    ['a workflow name with a tab', 'Order\t_v1'],
    ['a workflow name of 257 characters', 'W'.repeat(257)],
  ])('%s → TypeError naming it', (_label, name) => {
    const workflows = [defineWorkflow(name, noop)];
    expect(() => new Worker({ ...base, workflows })).toThrow(TypeError);
    expect(() => new Worker({ ...base, workflows })).toThrow('name');
  });

  it.each([
    [{ workerId: '' }, 'workerId'],
    [{ workerId: 'w'.repeat(129) }, 'workerId'],
    [{ workerId: 'host\nname' }, 'workerId'],
    [{ appId: '' }, 'appId'],
    [{ appId: 'a'.repeat(129) }, 'appId'],
    [{ environment: 'prod\u0000' }, 'environment'],
  ])('%j (every request of the worker is refused for it) → TypeError naming it', (options, name) => {
    expect(() => new Worker({ ...base, ...options })).toThrow(TypeError);
    expect(() => new Worker({ ...base, ...options })).toThrow(name);
  });

  it('takes the shortest timeout the service takes (1 ms) and the longest names (256 characters)', () => {
    expect(() => new Worker({ ...base, tasks: [defineTask('x'.repeat(256), noop, { timeout: 1 })], workflows: [defineWorkflow('W'.repeat(256), noop)] })).not.toThrow();
  });

  it('counts lengths as the service does: 128 emoji (256 UTF-16 units) are a workerId it takes', () => {
    expect(() => new Worker({ ...base, workerId: '\u{1F600}'.repeat(128) })).not.toThrow();
    expect(() => new Worker({ ...base, workerId: '\u{1F600}'.repeat(129) })).toThrow('workerId');
  });
});
