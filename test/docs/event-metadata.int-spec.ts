/**
 * docs/EVENTS.md: "Every event Baton writes carries" `actor`, `appId`, `environment`,
 * `correlationId`, `causationId` and `at`. Checked on the log of a session that exercises the
 * API, the engine by itself (a terminate) and a retention sweep, whose `WorkflowsExpired` is
 * written outside the deciders.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const run = promisify(execFile);
const DOCUMENTED = ['actor', 'appId', 'environment', 'correlationId', 'causationId', 'at'];

async function events(service: Service): Promise<Array<{ streamId: string; type: string; metadata: Record<string, unknown> }>> {
  const { stdout } = await run(process.execPath, [join(ROOT, 'dist/src/cli/baton.js'), 'events', '--store', service.storeUrl], { maxBuffer: 64 * 1024 * 1024 });
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l));
}

describe('EVENTS.md metadata', () => {
  let service: Service;
  afterAll(() => service?.stop());

  it('every event in the log carries every documented metadata field, WorkflowsExpired included', async () => {
    service = await startService({ env: { RETENTION_DAYS: '0.00001', RETENTION_SWEEP_MS: '200' } });
    const dispatched = await service.gql('mutation { dispatchWorkflow(input: { appId: "demo", environment: "dev", name: "Nobody", input: "[]" }) { id } }');
    const id = dispatched.body.data.dispatchWorkflow.id as string;
    await service.gql(`mutation { terminateWorkflows(input: { appId: "demo", environment: "dev", selector: { id: "${id}" }, reason: "done" }) { status } }`);
    const log = await waitFor(async () => {
      const all = await events(service);
      return all.some((e) => e.type === 'WorkflowsExpired') ? all : undefined;
    }, { timeoutMs: 30_000, intervalMs: 300, description: 'a WorkflowsExpired in the log' });
    const missing = log.flatMap((e) => {
      const absent = DOCUMENTED.filter((field) => typeof e.metadata?.[field] !== 'string' || e.metadata[field] === '');
      return absent.length > 0 ? [`${e.type} (${e.streamId}): ${absent.join(', ')}`] : [];
    });
    expect(missing).toEqual([]);
  });
});
