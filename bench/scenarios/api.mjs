// Scenario 1: dispatchWorkflow over HTTP with autocannon, against the same server's cheapest
// authenticated operation (`{ __typename }` with the token: it still goes through auth, Fastify,
// Apollo and Nest) as the ceiling. Runs alternate ceiling / dispatch so drift hits both alike.
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';
import { APP, DISPATCH, ENV, gql, startBaton } from '../lib/baton.mjs';
import { summary } from '../lib/util.mjs';

const CEILING = '{ __typename }';

function cannon(svc, body, seconds, connections) {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${svc.url}/graphql`,
        method: 'POST',
        connections,
        duration: seconds,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${svc.token}` },
        body,
        // A failed operation is still HTTP 200 (GraphQL's errors array): counted as a mismatch.
        verifyBody: (text) => !text.includes('"errors"'),
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
    instance.on('error', reject);
  });
}

/**
 * The service process's CPU time (user + system) in ms, from /proc (Linux; null elsewhere). The
 * load generator runs on the same cores, so req/s also moves with the CPU autocannon takes; the
 * service's own CPU per request does not.
 */
function serviceCpuMs(svc) {
  try {
    const fields = readFileSync(`/proc/${svc.child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return null;
  }
}

/** One run, with the service's CPU per answered request (µs). */
async function measured(svc, body, seconds, connections) {
  const before = serviceCpuMs(svc);
  const result = pick(await cannon(svc, body, seconds, connections));
  const after = serviceCpuMs(svc);
  return { ...result, cpuUsPerRequest: before === null || after === null || result.total === 0 ? null : ((after - before) * 1000) / result.total };
}

const pick = (r) => ({
  reqPerSec: r.requests.average,
  total: r.requests.total,
  p50: r.latency.p50,
  p99: r.latency.p99,
  non2xx: r.non2xx,
  errors: r.errors + r.timeouts,
  graphqlErrors: r.mismatches,
});

const cpuSummary = (runs) => (runs.every((x) => x.cpuUsPerRequest) ? summary(runs.map((x) => x.cpuUsPerRequest)) : null);

export async function apiDispatch({ runs, seconds, warmupSeconds = 2, connections = 50, log }) {
  const svc = await startBaton();
  try {
    // Both operations must succeed before they are measured (a GraphQL error is also HTTP 200).
    await gql(svc, CEILING);
    await gql(svc, DISPATCH, { input: { appId: APP, environment: ENV, name: 'BenchApiDispatch', input: '[]' } });
    const ceilingBody = JSON.stringify({ query: CEILING });
    const dispatchBody = JSON.stringify({ query: DISPATCH, variables: { input: { appId: APP, environment: ENV, name: 'BenchApiDispatch', input: '["x"]' } } });
    await cannon(svc, ceilingBody, warmupSeconds, connections);
    await cannon(svc, dispatchBody, warmupSeconds, connections);
    const ceiling = [];
    const dispatch = [];
    for (let r = 0; r < runs; r++) {
      ceiling.push(await measured(svc, ceilingBody, seconds, connections));
      dispatch.push(await measured(svc, dispatchBody, seconds, connections));
      log(`  run ${r + 1}/${runs}: ceiling ${Math.round(ceiling.at(-1).reqPerSec)} req/s, dispatch ${Math.round(dispatch.at(-1).reqPerSec)} req/s`);
    }
    const bad = [...ceiling, ...dispatch].reduce((n, x) => n + x.non2xx + x.errors + x.graphqlErrors, 0);
    return {
      ceiling: { runs: ceiling, reqPerSec: summary(ceiling.map((x) => x.reqPerSec)), p50: summary(ceiling.map((x) => x.p50)), p99: summary(ceiling.map((x) => x.p99)), cpuUsPerRequest: cpuSummary(ceiling) },
      dispatch: { runs: dispatch, reqPerSec: summary(dispatch.map((x) => x.reqPerSec)), p50: summary(dispatch.map((x) => x.p50)), p99: summary(dispatch.map((x) => x.p99)), cpuUsPerRequest: cpuSummary(dispatch) },
      ratio: summary(dispatch.map((d, i) => d.reqPerSec / ceiling[i].reqPerSec)),
      // The same ratio in the service's own CPU: a request of the ceiling's cost ÷ a dispatch's.
      cpuRatio: dispatch.every((d, i) => d.cpuUsPerRequest && ceiling[i].cpuUsPerRequest) ? summary(dispatch.map((d, i) => ceiling[i].cpuUsPerRequest / d.cpuUsPerRequest)) : null,
      failedResponses: bad,
      settings: { runs, seconds, connections },
    };
  } finally {
    await svc.stop();
  }
}
