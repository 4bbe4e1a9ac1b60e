// Jest's globalTeardown: removes this run's temporary folder (see temp-dir-setup.mjs), unless
// BATON_KEEP_TEST_TMP=1 asks to keep it for a look at what a failed test left.
import { rmSync } from 'node:fs';

export default function teardown() {
  const dir = process.env.BATON_TEST_TMPDIR;
  if (!dir) return;
  if (process.env.BATON_KEEP_TEST_TMP === '1') {
    console.log(`test files kept in ${dir}`);
    return;
  }
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}
