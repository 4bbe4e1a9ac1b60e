import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser } from 'playwright-core';
import { Service, startService } from '../support/service.js';
import { hasChromium, launchChromium } from '../support/chromium.js';

/**
 * Review of the dashboard at the edges: what /ui/assets answers for names that are not the
 * build's assets, and the pages driven in headless Chromium (Debian's, never a downloaded one).
 */
const itInBrowser = hasChromium ? it : it.skip;

describe('dashboard review', () => {
  let service: Service;
  let browser: Browser | undefined;

  beforeAll(async () => {
    [service, browser] = await Promise.all([startService(), hasChromium ? launchChromium() : Promise.resolve(undefined)]);
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('serves an asset under its own name only: a name through a made-up folder (slash sent as %2F) is not found', async () => {
    const index = await (await fetch(`${service.url}/ui`)).text();
    const script = /src="\/ui\/assets\/([^"]+\.js)"/.exec(index)?.[1];
    expect(script).toBeDefined();
    expect((await fetch(`${service.url}/ui/assets/${script}`)).status).toBe(200);
    // Each such name was served, and kept in memory with its own copy of the file (see src/dashboard/review-dashboard.spec.ts).
    for (const name of [`made-up%2F..%2F${script}`, `.%2F${script}`, '..%2Findex.html']) {
      const response = await fetch(`${service.url}/ui/assets/${name}`);
      expect({ name, status: response.status }).toEqual({ name, status: 404 });
    }
  });
});
