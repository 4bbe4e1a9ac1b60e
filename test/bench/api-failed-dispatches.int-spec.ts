import { afterAll, describe, expect, it } from '@jest/globals';

type ApiResult = {
  dispatch: { runs: Array<{ total: number; errors: number; non2xx: number }> };
  failedResponses: number;
};
// The bench is plain JavaScript outside the TypeScript project: imported by path.
const apiModule = '../../bench/scenarios/api.mjs';
const procsModule = '../../bench/lib/procs.mjs';

describe('scenario 1 (bench/scenarios/api.mjs) counts what it measures', () => {
  const saved = process.env.MAX_PAYLOAD_BYTES;
  afterAll(async () => {
    if (saved === undefined) delete process.env.MAX_PAYLOAD_BYTES;
    else process.env.MAX_PAYLOAD_BYTES = saved;
    const { cleanupAll } = (await import(procsModule)) as { cleanupAll: () => Promise<void> };
    await cleanupAll();
  });

  it('does not count dispatches answered with a GraphQL error (HTTP 200) as dispatched', async () => {
    // The service the scenario starts inherits this: the scenario's own check dispatches `[]` (2
    // bytes, accepted), every measured dispatch sends `["x"]` (5 bytes) and is refused. GraphQL
    // answers a refused operation with HTTP 200 and `errors`, as it would any failed dispatch.
    process.env.MAX_PAYLOAD_BYTES = '2';
    const { apiDispatch } = (await import(apiModule)) as { apiDispatch: (o: object) => Promise<ApiResult> };
    const result = await apiDispatch({ runs: 1, seconds: 1, warmupSeconds: 1, connections: 4, log: () => {} });
    const measured = result.dispatch.runs[0];
    expect(measured.total).toBeGreaterThan(0);
    // None of them dispatched a workflow: the scenario must not report them as successful dispatches.
    expect(result.failedResponses).toBeGreaterThanOrEqual(measured.total);
  }, 120_000);
});
