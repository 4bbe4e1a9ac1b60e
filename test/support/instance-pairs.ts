/*
 * Two real Baton processes on one store, as behind a load balancer, in each topology operators
 * run: the embedded SQLite file shared (read models shared too, or each instance's own with
 * `READ_MODEL_PATH`), or the EventStoreDB adapter on one server, each instance with read models of
 * its own. The EventStoreDB server here is the FAKE one (test/support/fake-esdb-server.ts, run as
 * its own process), not EventStoreDB: there is none on this machine.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startFakeEsdb } from './fake-esdb-process.js';
import { Service, ServiceOptions, freshStoreUrl, startService } from './service.js';

export interface InstancePair {
  a: Service;
  b: Service;
  /** The store both use (`sqlite:<file>` or the fake server's `esdb://…`), for the CLI. */
  storeUrl: string;
  /**
   * Stops B (SIGTERM), runs `meanwhile` (writes through A while B is down), and starts B again on
   * the same store and read models; `b` is then the new one.
   */
  restartB(meanwhile?: () => Promise<void>): Promise<Service>;
  /** Stops both instances, then the fake server if there is one. */
  stop(): Promise<void>;
}

/** A pair of `startService` options, A's and B's; the pair's `b` follows restarts. */
function pairOf(a: Service, b: Service, storeUrl: string, bOptions: ServiceOptions, after: () => Promise<void> = async () => undefined): InstancePair {
  const pair: InstancePair = {
    a,
    b,
    storeUrl,
    restartB: async (meanwhile = async () => undefined) => {
      await pair.b.stop();
      await meanwhile();
      pair.b = await startService(bOptions);
      return pair.b;
    },
    stop: async () => {
      await Promise.all([pair.a.stop(), pair.b.stop()]);
      await after();
    },
  };
  return pair;
}

export interface Topology {
  title: string;
  /** Starts A, then B (A creates the bootstrap token on the fresh store: use `a.token` on both). */
  start(env?: Record<string, string>): Promise<InstancePair>;
}

const sqlite = (ownReadModels: boolean) => async (env: Record<string, string> = {}): Promise<InstancePair> => {
  const storeUrl = freshStoreUrl();
  const dir = dirname(storeUrl.slice('sqlite:'.length));
  const a = await startService({ storeUrl, env: { LOG_LEVEL: 'info', ...env, ...(ownReadModels ? { READ_MODEL_PATH: join(dir, 'rm-a.db') } : {}) } });
  const bOptions: ServiceOptions = { storeUrl, env: { LOG_LEVEL: 'info', ...env, ...(ownReadModels ? { READ_MODEL_PATH: join(dir, 'rm-b.db') } : {}) } };
  const b = await startService(bOptions);
  return pairOf(a, b, storeUrl, bOptions);
};

async function esdb(env: Record<string, string> = {}): Promise<InstancePair> {
  const fake = await startFakeEsdb({ statsPeriodMs: 1000, standardProjections: true });
  const dir = mkdtempSync(join(tmpdir(), 'baton-esdb-pair-'));
  const started: Service[] = [];
  try {
    const a = await startService({ storeUrl: fake.url, env: { LOG_LEVEL: 'info', ...env, READ_MODEL_PATH: join(dir, 'rm-a.db') } });
    started.push(a);
    const bOptions: ServiceOptions = { storeUrl: fake.url, env: { LOG_LEVEL: 'info', ...env, READ_MODEL_PATH: join(dir, 'rm-b.db') } };
    const b = await startService(bOptions);
    started.push(b);
    return pairOf(a, b, fake.url, bOptions, () => fake.stop());
  } catch (error) {
    await Promise.all(started.map((s) => s.stop()));
    await fake.stop();
    throw error;
  }
}

export const SQLITE_SHARED_READ_MODELS: Topology = { title: 'one shared read-model file', start: sqlite(false) };
export const SQLITE_OWN_READ_MODELS: Topology = { title: 'read models of their own', start: sqlite(true) };
export const ESDB_FAKE_OWN_READ_MODELS: Topology = {
  title: 'the EventStoreDB adapter on one FAKE EventStoreDB server process, not EventStoreDB; read models of their own',
  start: esdb,
};
