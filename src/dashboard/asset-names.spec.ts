/**
 * The dashboard's file server remembers each asset it served, by the name asked for. A name that
 * climbs into a made-up folder and back (`x/../index.html`, the slash sent as %2F, which the
 * router decodes into the `:file` parameter) resolves to a file that exists, so it was kept, with
 * its own copy of the file: anyone, without a token, could fill the service's memory with copies
 * of the 775 KB bundle (400 such requests: +300 MB resident).
 */
import { describe, expect, it } from '@jest/globals';
import { DashboardController } from './dashboard.controller.js';

type Loader = { load(relative: string): Promise<{ body: Buffer } | null>; cache: Map<string, unknown> };

describe('DashboardController: names that reach an existing file another way', () => {
  it('keeps at most one entry per file, however many spellings of its name are asked for', async () => {
    const controller = new DashboardController() as unknown as Loader;
    // ui/index.html exists beside the sources, as dist/ui/index.html does beside the build.
    for (let i = 0; i < 200; i++) await controller.load(`assets/made-up-${i}/../../index.html`);
    expect(controller.cache.size).toBeLessThanOrEqual(1);
  });
});
