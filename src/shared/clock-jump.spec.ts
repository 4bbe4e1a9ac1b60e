import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { systemClock } from './clock.js';

/**
 * The machine's clock under a step of the wall clock (NTP stepping a drifting VM's clock, a host
 * or VM resumed from suspend): Node's timers count monotonic time, but `Clock.at` takes a wall
 * time (epoch ms). The engine arms one timer for its earliest due time (a workflow timer, a
 * lease, a retry) and the scheduler one for its next firing, so what that one timer does after a
 * step decides when every due item fires.
 */
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe('systemClock.at across a step of the wall clock', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('a due time the wall clock jumped past (forward by a day) is called within a minute, not a day later', () => {
    const fn = jest.fn();
    systemClock.at(T0 + HOUR, fn);
    // The wall clock steps forward a day: the due time (an hour away) is now 23 hours in the past.
    jest.setSystemTime(T0 + DAY);
    jest.advanceTimersByTime(MINUTE);
    // On main the Node timer was armed for 3,600,000 ms of monotonic time: it rings an hour later.
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('a timer 10 days away (armed whole, under the 2^30 ms chunk) also follows a forward step', () => {
    const fn = jest.fn();
    systemClock.at(T0 + 10 * DAY, fn);
    jest.setSystemTime(T0 + 11 * DAY);
    jest.advanceTimersByTime(MINUTE);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('a step backwards does not call it before its wall time: called once, when that time has passed', () => {
    const fn = jest.fn();
    systemClock.at(T0 + HOUR, fn);
    jest.setSystemTime(T0 - DAY);
    // An hour of monotonic time: the wall clock reads a day minus an hour before the due time.
    jest.advanceTimersByTime(HOUR);
    expect(fn).not.toHaveBeenCalled();
    jest.setSystemTime(T0 + HOUR + 1);
    jest.advanceTimersByTime(MINUTE);
    expect(fn).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(DAY);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('without a step, it is called at its time, not a turn later, and once', () => {
    const fn = jest.fn();
    systemClock.at(T0 + HOUR, fn);
    jest.advanceTimersByTime(HOUR - 1);
    expect(fn).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1);
    expect(fn).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(DAY);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('cancel still cancels a timer that is re-armed in chunks', () => {
    const fn = jest.fn();
    const cancel = systemClock.at(T0 + HOUR, fn);
    jest.advanceTimersByTime(30 * MINUTE);
    cancel();
    jest.advanceTimersByTime(DAY);
    expect(fn).not.toHaveBeenCalled();
  });
});
