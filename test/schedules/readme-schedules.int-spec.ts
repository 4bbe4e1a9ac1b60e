/**
 * The `sh` blocks of the README's schedules section (`<!-- schedule-examples -->`) run in order in one bash session against a real
 * service, with BATON_URL and BATON_TOKEN set: each must exit 0 and print only JSON responses
 * without errors, so the schedule docs cannot rot.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, Service, startService } from '../support/service.js';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const section = readme.slice(readme.indexOf('<!-- schedule-examples -->'), readme.indexOf('<!-- /schedule-examples -->'));
const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);

describe('README schedule examples', () => {
  let service: Service;
  let outputs: Array<{ output: string; exitCode: number }>;
  let stderr: string;

  beforeAll(async () => {
    service = await startService();
    const script = blocks.map((code, i) => `printf '\\n@@start ${i}@@\\n'\n${code}\nprintf '\\n@@end ${i} %d@@\\n' "$?"`).join('\n');
    const dir = mkdtempSync(join(tmpdir(), 'baton-readme-schedules-'));
    writeFileSync(join(dir, 'session.sh'), script);
    const result = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
      execFile(
        'bash',
        ['--noprofile', '--norc', join(dir, 'session.sh')],
        { cwd: dir, timeout: 30_000, env: { PATH: process.env.PATH, HOME: dir, BATON_URL: service.url, BATON_TOKEN: service.token } },
        (error, stdout, err) => (error?.killed ? reject(new Error(`session timed out:\n${stdout}\n${err}`)) : resolve({ stdout, stderr: err })),
      ),
    );
    stderr = result.stderr;
    outputs = blocks.map((_, i) => {
      const match = new RegExp(`@@start ${i}@@\\n([\\s\\S]*?)\\n@@end ${i} (\\d+)@@`).exec(result.stdout);
      return match ? { output: match[1], exitCode: Number(match[2]) } : { output: '', exitCode: -1 };
    });
  });
  afterAll(() => service?.stop());

  it('has examples for both documented mutations and the management API', () => {
    const all = blocks.join('\n');
    for (const op of ['scheduleTask', 'scheduleWorkflow', 'schedules(', 'triggerSchedule', 'pauseSchedule', 'resumeSchedule', 'deleteSchedule', 'scheduleHistory']) {
      expect({ op, present: all.includes(op) }).toEqual({ op, present: true });
    }
    for (const code of blocks) {
      expect(code).toContain('$BATON_URL');
      expect(code).toContain('$BATON_TOKEN');
    }
  });

  it.each(blocks.map((code, i) => [i + 1, code.split('\n')[0].replace(/^#\s*/, ''), i] as const))('block %d: %s', (_n, _title, i) => {
    const { output, exitCode } = outputs[i];
    expect({ exitCode, stderr: exitCode === 0 ? '' : stderr }).toEqual({ exitCode: 0, stderr: '' });
    const lines = output.split('\n').filter((l) => l.trim() !== '');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      const json = JSON.parse(line);
      expect({ line, errors: json.errors }).toEqual({ line, errors: undefined });
      for (const value of Object.values(json.data)) expect(value).not.toBeNull();
    }
  });
});
