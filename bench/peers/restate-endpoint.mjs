// Restate service endpoint for `npm run bench -- --peers`: the same two sequential no-op steps as
// Baton's BenchTwoStep, as durable `ctx.run` steps. Serves h2c on 127.0.0.1:$ENDPOINT_PORT and a
// small stats server on 127.0.0.1:$STATS_PORT (when each invocation's first step started).
import http from 'node:http';
import http2 from 'node:http2';
import { wallNow as now } from '../lib/clock.mjs';

// The SDK uses Promise.withResolvers (Node >= 22); Node 20 needs this polyfill, before the import.
if (typeof Promise.withResolvers !== 'function') {
  Promise.withResolvers = function withResolvers() {
    let resolve;
    let reject;
    const promise = new this((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}
const restate = await import('@restatedev/restate-sdk');

const step1 = new Map();

const benchTwoStep = restate.service({
  name: 'BenchTwoStep',
  handlers: {
    run: async (ctx, id) => {
      await ctx.run('step1', () => {
        if (!step1.has(id)) step1.set(id, now());
        return null;
      });
      await ctx.run('step2', () => null);
      return null;
    },
  },
});

const endpoint = http2.createServer(restate.endpoint().bind(benchTwoStep).http2Handler());
endpoint.listen(Number(process.env.ENDPOINT_PORT), '127.0.0.1');

const stats = http.createServer((req, res) => {
  if (req.url === '/reset') step1.clear();
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(req.url === '/stats' ? { step1: Object.fromEntries(step1) } : { count: step1.size }));
});
stats.keepAliveTimeout = 120_000; // the runner's keep-alive sockets idle between batches
stats.listen(Number(process.env.STATS_PORT), '127.0.0.1', () => process.stdout.write('PEER_READY\n'));
