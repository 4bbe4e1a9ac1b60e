import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EsdbEventStore } from '../../src/event-store/esdb/esdb-event-store.js';
import { FakeEsdb } from '../support/fake-esdb.js';
import { eventStoreContract } from './event-store.contract.js';

/*
 * The EventStore contract against the EventStoreDB adapter, through the real
 * `@eventstore/db-client` over gRPC, against a FAKE server (test/support/fake-esdb.ts): an
 * in-memory model of EventStoreDB's gRPC Streams service written from the server's source, not
 * EventStoreDB itself. The contract against a real server is esdb-event-store.e2e-spec.ts, which
 * needs EVENT_STORE_URL. One fake for the suite: the contract's `open` stands for a restarted
 * process, so each call connects a new client to the same server. The fake writes its own
 * `$statsCollected` system event every 20 ms, as a real server does every 30 s, and the standard
 * projections' link events a little after each event (docker-compose.yml's KurrentDB runs them),
 * so `$all` has system events between and after the contract's own.
 */

let fake: FakeEsdb;

beforeAll(async () => {
  fake = await FakeEsdb.start({ statsPeriodMs: 20, standardProjections: true });
  // The contract's 1 MiB event, with its type and metadata, is over the server's default 1 MiB
  // MaxAppendSize: a real server needs EVENTSTORE_MAX_APPEND_SIZE raised for it too (see the e2e spec).
  fake.maxAppendSize = 2 * 1024 * 1024;
});

afterAll(async () => {
  await fake?.stop();
});

eventStoreContract('EventStoreDB adapter on a FAKE EventStoreDB server (test/support/fake-esdb.ts), not EventStoreDB', async () => new EsdbEventStore(fake.url, { callTimeoutMs: 10_000 }));

describe('the fake EventStoreDB server the contract above ran on', () => {
  it('served it $all reads and subscriptions with system events among its events, and tombstones', () => {
    const ownEvents = fake.log.filter((e) => !e.type.startsWith('$'));
    const [first, last] = [fake.log.indexOf(ownEvents[0]), fake.log.indexOf(ownEvents[ownEvents.length - 1])];
    const between = fake.log.slice(first, last).filter((e) => e.type.startsWith('$')).map((e) => e.type);
    expect(ownEvents.length).toBeGreaterThan(100);
    expect(new Set(between)).toEqual(new Set(['$statsCollected', '$streamDeleted', '$>']));
    expect(fake.log.slice(0, first).map((e) => e.streamId)).toEqual(expect.arrayContaining(['$epoch-information', '$users', '$settings', '$stats-127.0.0.1:2113']));
    expect(fake.subscriptionsOpened).toBeGreaterThan(0);
  });
});
