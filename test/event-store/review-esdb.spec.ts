import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from '@jest/globals';
import { StoreUnavailableError } from '../../src/event-store/event-store.port.js';
import { EsdbEventStore } from '../../src/event-store/esdb/esdb-event-store.js';
import { FakeEsdb } from '../support/fake-esdb.js';
import { waitFor } from '../support/wait-for.js';

/*
 * The EventStoreDB adapter against a fake server (test/support/fake-esdb.ts: a gRPC peer speaking
 * the client's own protocol), for what the stubbed-client spec cannot show: how
 * `@eventstore/db-client` itself behaves on the wire.
 */

const event = () => ({ id: randomUUID(), type: 'ThingHappened', data: { n: 1 } });

let fake: FakeEsdb | undefined;
let store: EsdbEventStore | undefined;

afterEach(async () => {
  await store?.close();
  await fake?.stop();
  store = undefined;
  fake = undefined;
});

describe('EsdbEventStore against a fake EventStoreDB', () => {
  it('does not fail an append on the new connection when a call of the connection it replaced fails', async () => {
    fake = await FakeEsdb.start();
    store = new EsdbEventStore(fake.url, { callTimeoutMs: 500 });
    // The server never answers the first append: the store gives up at its deadline (and replaces
    // its connection).
    fake.hold = (append) => append.streamId === 'workflow-silent';
    await expect(store.append('workflow-silent', [event()])).rejects.toBeInstanceOf(StoreUnavailableError);
    const silent = fake.received.find((a) => a.streamId === 'workflow-silent')!;

    // The next append reaches the server, which is slow to answer it...
    fake.hold = (append) => append.streamId === 'workflow-next';
    const next = store.append('workflow-next', [event()], 'no_stream');
    const outcome = next.then(
      (result) => result,
      (error: unknown) => error,
    );
    await waitFor(() => fake!.received.some((a) => a.streamId === 'workflow-next'), { description: 'the second append at the server' });
    // ...when the call that carried the first one is reset (the silent connection finally drops).
    silent.failCall();
    // One round trip after the reset, then the server answers: the append was written.
    expect(await store.readStream('workflow-probe')).toEqual([]);
    fake.release();
    // Two more round trips: the answer has reached the client (which must take it without
    // throwing: an exception there is uncaught, and ends the process).
    await store.readStream('workflow-probe');
    await store.readStream('workflow-probe');

    expect(await outcome).toEqual({ nextExpectedRevision: 0n, position: expect.any(BigInt) });
    expect(fake.streams.get('workflow-next')).toHaveLength(1);
  });
});
