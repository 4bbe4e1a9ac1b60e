/**
 * README's runnable sections (`api-examples`, `schedule-examples`) show, after some `sh` blocks, the
 * answer the block prints (a ```text block). Run each section in one bash session against a real
 * service and check that every shown answer is the one printed, ids and times aside.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, Service, startService } from '../support/service.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function section(marker: string): string {
  const start = README.indexOf(`<!-- ${marker} -->`);
  const end = README.indexOf(`<!-- /${marker} -->`, start);
  return README.slice(start, end);
}

/** The sh blocks of a section, each with the text block that directly follows it, if any. */
function blocks(text: string): Array<{ code: string; shown?: string }> {
  return [...text.matchAll(/^```sh\n([\s\S]*?)^```\n(?:\n```text\n([\s\S]*?)^```\n)?/gm)].map((m) => ({ code: m[1], shown: m[2]?.trim() }));
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?(Z|[+-]\d{2}:\d{2})/g;
const normalise = (s: string) => s.replace(UUID, '<uuid>').replace(TIME, '<time>');

async function run(service: Service, code: Array<{ code: string }>): Promise<string[]> {
  const script = code.map((b, i) => [`printf '\\n@@start ${i}@@\\n'`, b.code, `printf '\\n@@end ${i}@@\\n'`].join('\n')).join('\n');
  const dir = mkdtempSync(join(tmpdir(), 'baton-readme-shown-'));
  writeFileSync(join(dir, 'session.sh'), script);
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile('bash', ['--noprofile', '--norc', join(dir, 'session.sh')], { cwd: dir, timeout: 30_000, env: { PATH: process.env.PATH, HOME: dir, BATON_URL: service.url, BATON_TOKEN: service.token } }, (error, out) =>
      error && error.killed ? reject(error) : resolve(out),
    ),
  );
  return code.map((_, i) => new RegExp(`@@start ${i}@@\\n([\\s\\S]*?)\\n@@end ${i}@@`).exec(stdout)?.[1].trim() ?? '');
}

describe('README shown answers', () => {
  let service: Service;
  beforeAll(async () => {
    service = await startService();
  });
  afterAll(() => service.stop());

  for (const marker of ['api-examples', 'schedule-examples']) {
    it(`${marker}: every shown answer is what its block prints`, async () => {
      const list = blocks(section(marker));
      expect(list.filter((b) => b.shown !== undefined).length).toBeGreaterThan(0);
      const printed = await run(service, list);
      const mismatches = list.flatMap((b, i) =>
        b.shown === undefined || normalise(printed[i]) === normalise(b.shown) ? [] : [{ block: b.code.split('\n')[0], shown: b.shown, printed: printed[i] }],
      );
      expect(mismatches).toEqual([]);
    });
  }
});
