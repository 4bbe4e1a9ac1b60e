import { existsSync } from 'node:fs';
import playwright from 'playwright-core';
import type { Browser } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`): the browser tests never download one of their own. */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

/** Headless Chromium, with what it would reach out to on its own switched off. */
export function launchChromium(): Promise<Browser> {
  return playwright.chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
