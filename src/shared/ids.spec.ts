import { describe, expect, it } from '@jest/globals';
import { isUuid, uuidv7 } from './ids.js';

describe('uuidv7', () => {
  it('puts the milliseconds in the first 48 bits, then version 7 and the RFC 9562 variant', () => {
    const id = uuidv7(1_700_000_000_123);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(1_700_000_000_123);
    expect(isUuid(id)).toBe(true);
  });

  it('sorts by creation time and never repeats, across refills of the random pool', () => {
    const ids = Array.from({ length: 3_000 }, (_, i) => uuidv7(1_700_000_000_000 + i));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });
});
