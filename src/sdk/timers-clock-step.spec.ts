import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { after } from './timers.js';

/**
 * The SDK's own long waits (a task's `timeoutMs`, which aborts its signal; an inline step's
 * timeout) are set from the wall clock (`Date.now() + ms`), as the service's deadline for the
 * same attempt is, but were armed as one Node timer counting monotonic time: after a step of the
 * wall clock (NTP, the worker's host resumed from suspend) the task kept running past the
 * deadline the service had already acted on.
 */
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe('after() across a step of the wall clock', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('a task timeout of an hour, with the wall clock stepped two hours on, fires within a minute', () => {
    const fn = jest.fn();
    after(HOUR, fn);
    jest.setSystemTime(T0 + 2 * HOUR);
    jest.advanceTimersByTime(MINUTE);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('fires once at its time when the clock does not step, and cancels', () => {
    const fn = jest.fn();
    after(HOUR, fn);
    jest.advanceTimersByTime(HOUR - 1);
    expect(fn).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(fn).toHaveBeenCalledTimes(1);
    const cancelled = jest.fn();
    const cancel = after(HOUR, cancelled);
    jest.advanceTimersByTime(MINUTE);
    cancel();
    jest.advanceTimersByTime(2 * HOUR);
    expect(cancelled).not.toHaveBeenCalled();
  });
});
