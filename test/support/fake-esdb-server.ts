/*
 * The fake EventStoreDB (test/support/fake-esdb.ts) as a process of its own, for a real Baton
 * process to connect to: NOT EventStoreDB, an in-memory model of its gRPC Streams service (lost
 * when the process ends). Built with the server (`npm run build:server`):
 *
 *   node dist/test/support/fake-esdb-server.js [--port 2113] [--stats-period-ms 30000] [--standard-projections]
 *
 * prints `FAKE_ESDB_READY esdb://127.0.0.1:<port>?tls=false` once it listens (port 0: any free
 * one), and stops on SIGTERM / SIGINT.
 */
import { parseArgs } from 'node:util';
import { FakeEsdb } from './fake-esdb.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '2113' },
    'stats-period-ms': { type: 'string', default: '30000' },
    // Link events of the standard projections, as a KurrentDB with projections on writes them.
    'standard-projections': { type: 'boolean', default: false },
  },
});

const fake = await FakeEsdb.start({
  port: Number(values.port),
  statsPeriodMs: Number(values['stats-period-ms']) || undefined,
  standardProjections: values['standard-projections'],
});
process.stdout.write(`FAKE_ESDB_READY ${fake.url}\n`);
const stop = () => void fake.stop().then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
