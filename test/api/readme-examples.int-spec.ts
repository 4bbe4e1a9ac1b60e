/**
 * The README's examples are run, so they cannot rot. The `sh` blocks between
 * `<!-- api-examples -->` and `<!-- /api-examples -->` run in order in ONE bash session against a
 * real service, with BATON_URL and BATON_TOKEN set, so later blocks use what earlier ones
 * captured. Each block must exit 0, and every line it prints must be a JSON response without
 * "errors". The quick start's example-workflow block (`<!-- example-workflows -->`) runs against
 * a service with the built-in example worker and must end with the workflow COMPLETED.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT, Service, freshStoreUrl, startService } from '../support/service.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function section(marker: string): string {
  const start = README.indexOf(`<!-- ${marker} -->`);
  const end = README.indexOf(`<!-- /${marker} -->`, start);
  if (start === -1 || end === -1) throw new Error(`README.md has no <!-- ${marker} --> … <!-- /${marker} --> section`);
  return README.slice(start, end);
}

interface Block {
  index: number;
  title: string;
  code: string;
  schedule: boolean;
}

function shBlocks(section: string): Block[] {
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match, index) => {
    const code = match[1];
    const comment = code.split('\n').find((line) => line.startsWith('#'));
    return {
      index,
      title: (comment?.replace(/^#\s*/, '') ?? code.split('\n')[0]).slice(0, 80),
      code,
      schedule: /\bschedule(Task|Workflow)\b/.test(code),
    };
  });
}

const blocks = shBlocks(section('api-examples'));
const service = await startService();

interface Outcome {
  exitCode: number;
  output: string;
}

/** Runs the blocks in one bash session; each block's output is framed by markers. */
async function runSession(target: Service, runnable: Block[]): Promise<{ outcomes: Map<number, Outcome>; stderr: string }> {
  const script = runnable
    .map((b) => [`printf '\\n@@block-start ${b.index}@@\\n'`, b.code, `printf '\\n@@block-end ${b.index} %d@@\\n' "$?"`].join('\n'))
    .join('\n');
  const dir = mkdtempSync(join(tmpdir(), 'baton-readme-'));
  const path = join(dir, 'session.sh');
  writeFileSync(path, script);
  const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
    execFile(
      'bash',
      ['--noprofile', '--norc', path],
      { cwd: dir, timeout: 30_000, env: { PATH: process.env.PATH, HOME: dir, BATON_URL: target.url, BATON_TOKEN: target.token } },
      (error, stdout, stderr) => (error && error.killed ? reject(new Error(`the README session timed out:\n${stdout}\n${stderr}`)) : resolve({ stdout, stderr })),
    );
  });
  const outcomes = new Map<number, Outcome>();
  for (const match of stdout.matchAll(/@@block-start (\d+)@@\n([\s\S]*?)\n@@block-end \1 (\d+)@@/g)) {
    outcomes.set(Number(match[1]), { output: match[2], exitCode: Number(match[3]) });
  }
  return { outcomes, stderr };
}

let session: Promise<{ outcomes: Map<number, Outcome>; stderr: string }> | undefined;
const sessionOnce = () => (session ??= runSession(service, blocks));

describe('README API examples', () => {
  afterAll(() => service.stop());

  it('the section has examples for the eight mutations and the queries', () => {
    const all = blocks.map((b) => b.code).join('\n');
    for (const operation of [
      'dispatchTask',
      'dispatchWorkflow',
      'scheduleTask',
      'scheduleWorkflow',
      'sendEventToWorkflows',
      'pauseWorkflows',
      'resumeWorkflows',
      'terminateWorkflows',
      'workflow(',
      'workflows(',
    ]) {
      expect({ operation, present: all.includes(operation) }).toEqual({ operation, present: true });
    }
    for (const block of blocks.filter((b) => b.code.includes('curl'))) {
      expect(block.code).toContain('$BATON_URL');
      expect(block.code).toContain('$BATON_TOKEN');
    }
    expect(blocks.filter((b) => b.schedule).every((b) => /"cron":"(\S+ ){4}\S+"/.test(b.code))).toBe(true);
  });

  for (const block of blocks) {
    it(`block ${block.index + 1}: ${block.title}`, async () => {
      const { outcomes, stderr } = await sessionOnce();
      const outcome = outcomes.get(block.index);
      if (!outcome) throw new Error(`block ${block.index + 1} did not run to its end (an earlier block exited the session?)\nstderr:\n${stderr}`);
      expect({ exitCode: outcome.exitCode, stderr: outcome.exitCode === 0 ? '' : stderr }).toEqual({ exitCode: 0, stderr: '' });
      const lines = outcome.output.split('\n').filter((line) => line.trim() !== '');
      if (block.code.includes('curl')) expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        let json: { data?: Record<string, unknown> | null; errors?: unknown };
        try {
          json = JSON.parse(line);
        } catch {
          throw new Error(`block ${block.index + 1} printed something that is not JSON: ${line}`);
        }
        expect({ line, errors: json.errors }).toEqual({ line, errors: undefined });
        expect(json.data).toBeTruthy();
        // The examples form a sequence: each selector action must reach the workflow dispatched above.
        expect(line).not.toContain('NO_MATCH');
        for (const value of Object.values(json.data!)) expect(value).not.toBeNull();
      }
    });
  }
});

describe('README example workflows (the quick start, with the built-in example worker)', () => {
  it('dispatches Onboarding with a tag, sends it activated by name and tag, and reads it back COMPLETED', async () => {
    const examples = shBlocks(section('example-workflows'));
    expect(examples.length).toBeGreaterThan(0);
    const withWorker = await startService({ env: { BATON_EXAMPLE_WORKER: 'true' } });
    try {
      const { outcomes, stderr } = await runSession(withWorker, examples);
      const outputs = examples.map((b) => outcomes.get(b.index));
      expect({ exitCodes: outputs.map((o) => o?.exitCode), stderr }).toEqual({ exitCodes: examples.map(() => 0), stderr: '' });
      const lines = outputs.flatMap((o) => o!.output.split('\n').filter((l) => l.trim() !== ''));
      for (const line of lines) expect(JSON.parse(line).errors).toBeUndefined();
      expect(lines[lines.length - 1]).toContain('"state":"COMPLETED"');
      // The example worker's own token may run the worker protocol and nothing else.
      const file = join(dirname(withWorker.storeUrl.slice('sqlite:'.length)), 'example-worker.token');
      const workerToken = readFileSync(file, 'utf8').trim();
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const viewer = await withWorker.gql('{ viewer { role apps } }', undefined, workerToken);
      expect(viewer.body.data?.viewer).toEqual({ role: 'worker', apps: ['demo'] });
      const dispatch = await withWorker.gql('mutation { dispatchWorkflow(input: { appId: "demo", environment: "dev", name: "Onboarding", input: "[]" }) { id } }', undefined, workerToken);
      expect(dispatch.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    } finally {
      await withWorker.stop();
    }
  });

  it('replaces an example-worker token of an earlier version (admin role) with a worker one, and revokes it', async () => {
    const storeUrl = freshStoreUrl();
    const first = await startService({ storeUrl });
    const file = join(dirname(storeUrl.slice('sqlite:'.length)), 'example-worker.token');
    // What earlier versions wrote: an admin token of app demo, as the bootstrap token is.
    const old = first.token;
    expect((await first.gql('{ viewer { role apps } }', undefined, old)).body.data?.viewer).toEqual({ role: 'admin', apps: ['demo'] });
    await first.stop();
    // Written readable by others (as an operator's copy could be): the new token must not inherit that.
    writeFileSync(file, `${old}\n`, { mode: 0o644 });
    chmodSync(file, 0o644);
    const withWorker = await startService({ storeUrl, env: { BATON_EXAMPLE_WORKER: 'true' } });
    try {
      const replaced = readFileSync(file, 'utf8').trim();
      expect(replaced).not.toBe(old);
      expect((statSync(file).mode & 0o777).toString(8)).toBe('600');
      expect((await withWorker.gql('{ viewer { role } }', undefined, replaced)).body.data?.viewer).toEqual({ role: 'worker' });
      expect((await withWorker.gql('{ viewer { role } }', undefined, old)).body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    } finally {
      await withWorker.stop();
    }
  });
});
