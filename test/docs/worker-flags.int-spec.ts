/**
 * README's `baton worker` table (flag, variable, default) against the CLI's own `--help`: the same
 * flags, each read from the variable the table names, with the default it states.
 */
import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../support/service.js';

const run = promisify(execFile);

describe('README baton worker flags', () => {
  it('match baton worker --help', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const table = [...readme.matchAll(/^\| `(--[a-z-]+)` \| `([A-Z_]+)` \| ([^|]+) \|/gm)].map((m) => ({ flag: m[1], env: m[2], def: m[3].trim() }));
    expect(table.length).toBeGreaterThan(5);
    const { stdout } = await run(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), 'worker', '--help'], { env: { ...process.env, COLUMNS: '1000' } });
    // Help wraps its lines: one entry per option, from its flag to the next.
    const options = stdout.slice(stdout.indexOf('Options:')).replace(/\s+/g, ' ').split(/ (?=--[a-z-]+ )/).slice(1);
    const help = options
      .filter((l) => !l.startsWith('--help') && !l.startsWith('--version'))
      .map((l) => {
        const flag = /--[a-z-]+/.exec(l)![0];
        const env = /env: ([A-Z_]+)/.exec(l)?.[1];
        const def = /\(default: "([^"]*)"/.exec(l)?.[1];
        return { flag, env, def };
      });
    expect(help.map((h) => h.flag).sort()).toEqual(table.map((t) => t.flag).sort());
    for (const row of table) {
      const h = help.find((x) => x.flag === row.flag)!;
      expect({ flag: row.flag, env: h.env }).toEqual({ flag: row.flag, env: row.env });
      if (h.def !== undefined) expect({ flag: row.flag, def: `\`${h.def}\`` }).toEqual({ flag: row.flag, def: row.def });
    }
  });
});
