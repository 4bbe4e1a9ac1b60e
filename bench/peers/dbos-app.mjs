// DBOS Transact app for `npm run bench -- --peers`: the same two sequential no-op steps as Baton's
// BenchTwoStep, as a DBOS workflow of two steps on PostgreSQL ($DBOS_SYSTEM_DATABASE_URL). DBOS is
// a library, so this process is both the "server" and the worker; it takes dispatches over HTTP on
// 127.0.0.1:$PORT (POST /dispatch {"id"} → DBOS.startWorkflow, answered once the start is durable)
// and reports when each workflow's first step started and when its result was recorded.
import http from 'node:http';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { wallNow as now } from '../lib/clock.mjs';

const step1 = new Map();
const done = new Map();

async function benchTwoStep(id) {
  await DBOS.runStep(
    async () => {
      if (!step1.has(id)) step1.set(id, now());
      return null;
    },
    { name: 'step1' },
  );
  await DBOS.runStep(async () => null, { name: 'step2' });
  return null;
}
const workflow = DBOS.registerWorkflow(benchTwoStep, { name: 'benchTwoStep' });

DBOS.setConfig({ name: 'baton-bench', systemDatabaseUrl: process.env.DBOS_SYSTEM_DATABASE_URL, logLevel: 'error' });
await DBOS.launch();

const server = http.createServer((req, res) => {
  const reply = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.method === 'POST' && req.url === '/dispatch') {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', async () => {
      try {
        const { id } = JSON.parse(text);
        const handle = await DBOS.startWorkflow(workflow, { workflowID: id })(id);
        handle.getResult().then(
          () => done.set(id, now()),
          (error) => process.stderr.write(`workflow ${id} failed: ${error.message}\n`),
        );
        reply(200, { id });
      } catch (error) {
        reply(500, { error: error.message });
      }
    });
    return;
  }
  if (req.url === '/stats') return reply(200, { step1: Object.fromEntries(step1), done: Object.fromEntries(done) });
  if (req.url === '/reset') {
    step1.clear();
    done.clear();
  }
  reply(200, { count: done.size });
});
server.keepAliveTimeout = 120_000; // the runner's keep-alive sockets idle between batches
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.stdout.write('PEER_READY\n'));

const stop = async () => {
  server.close();
  await DBOS.shutdown();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
