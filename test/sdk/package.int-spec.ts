/**
 * The SDK as its own package: packed like a release, installed alone into a worker project
 * outside the repository (no server code, no dependencies), and used to run a workflow against
 * the real service.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type Service, startService } from '../support/service.js';
import { ROOT } from '../support/worker.js';

const run = promisify(execFile);
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let service: Service;
let project: string;

beforeAll(async () => {
  service = await startService();
  project = mkdtempSync(join(tmpdir(), 'baton-worker-project-'));
}, 60_000);

afterAll(() => service?.stop());

describe('@baton/sdk', () => {
  it('packs to the SDK alone, installs into a project of its own, and runs a workflow there', async () => {
    const packed = await run(npm, ['pack', join(ROOT, 'packages/sdk'), '--pack-destination', project, '--json'], { cwd: project });
    const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const files = info.files.map((f) => f.path);
    expect(files).toContain('dist/sdk/index.js');
    expect(files).toContain('dist/protocol/decision-commands.js');
    expect(files.filter((f) => !/^(dist\/(sdk|protocol)\/|package\.json$|README\.md$)/.test(f))).toEqual([]);

    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'my-worker', version: '1.0.0', type: 'module', private: true }));
    await run(npm, ['install', '--no-audit', '--no-fund', '--offline', join(project, info.filename)], { cwd: project });
    expect(readdirSync(join(project, 'node_modules')).filter((f) => !f.startsWith('.'))).toEqual(['@baton']);

    writeFileSync(
      join(project, 'worker.mjs'),
      `import { Client, Worker, defineTask, defineWorkflow } from '@baton/sdk';
const double = defineTask('double', (_ctx, n) => n * 2);
const doubler = defineWorkflow('Doubler', async (ctx, n) => (await ctx.run(double, n)) + (await ctx.run(double, n + 1)));
const options = { url: process.env.BATON_URL, token: process.env.BATON_TOKEN };
const worker = new Worker({ ...options, appId: 'demo', environment: 'sdk-package', tasks: [double], workflows: [doubler], logger: { info() {}, warn() {}, error: console.error } });
const running = worker.run();
const result = await new Client(options).dispatchWorkflow({ appId: 'demo', environment: 'sdk-package', name: 'Doubler', input: [20] }).result({ timeoutMs: 30000 });
console.log('RESULT ' + JSON.stringify(result));
await worker.shutdown();
await running;
`,
    );
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['worker.mjs'], { cwd: project, env: { ...process.env, BATON_URL: service.url, BATON_TOKEN: service.token } });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve(out);
        else reject(new Error(`worker project exited with ${code}:\n${out}`));
      });
    });
    expect(output).toContain('RESULT 82');
  }, 90_000);
});
