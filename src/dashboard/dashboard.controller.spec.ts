/**
 * The dashboard's file server: anyone may ask /ui/assets/<any name>, without a token, so what it
 * remembers must not grow with the names asked for; and it serves only files inside its directory.
 */
import { describe, expect, it } from '@jest/globals';
import { DashboardController } from './dashboard.controller.js';

type Loader = { load(relative: string): Promise<{ body: Buffer } | null>; cache: Map<string, unknown> };

describe('DashboardController', () => {
  it('keeps no entry for an asset name that does not exist (1,000 names asked: nothing cached)', async () => {
    const controller = new DashboardController() as unknown as Loader;
    for (let i = 0; i < 1_000; i++) expect(await controller.load(`assets/missing-${i}.js`)).toBeNull();
    expect(controller.cache.size).toBe(0);
  });

  it('serves nothing outside its directory (paths that climb out of it)', async () => {
    const controller = new DashboardController() as unknown as Loader;
    for (const path of ['assets/../../package.json', 'assets/../../ui-other/x.js', '../src/main.ts', 'assets/../../../etc/passwd']) {
      expect({ path, asset: await controller.load(path) }).toEqual({ path, asset: null });
    }
    expect(controller.cache.size).toBe(0);
  });
});
