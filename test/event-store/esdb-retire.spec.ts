import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { EventStoreDBClient } from '@eventstore/db-client';
import { StoreUnavailableError } from '../../src/event-store/event-store.port.js';
import { EsdbEventStore } from '../../src/event-store/esdb/esdb-event-store.js';
import { FakeEsdb } from '../support/fake-esdb.js';
import { waitFor } from '../support/wait-for.js';

/*
 * What `retire` is for: a connection whose peer went away without closing it (half-open: the
 * socket stays up, nothing comes back) lets a call's deadline pass, and the store replaces its
 * client. The replacement must open a connection of its own: grpc-js shares a TCP connection
 * (subchannel) between channels whose target, options and credentials are equal, so a client
 * created with the same settings as the stale one is handed the same dead connection, and
 * waits for it until keepalive gives up on it (~20 s with the client's defaults).
 */

/** A TCP front for the fake server that counts the connections it accepts and can go silent. */
class TcpFront {
  accepted = 0;
  /** Connections the client has not closed. */
  open = 0;
  port = 0;
  private readonly pairs: Array<{ client: net.Socket; upstream: net.Socket; silent: boolean }> = [];
  private readonly server = net.createServer((client) => {
    this.accepted += 1;
    this.open += 1;
    client.on('close', () => (this.open -= 1));
    const upstream = net.connect(this.target, '127.0.0.1');
    const pair = { client, upstream, silent: false };
    this.pairs.push(pair);
    // While silent, bytes are dropped both ways and both sockets stay open: a peer that vanished.
    client.on('data', (chunk) => void (pair.silent || upstream.write(chunk)));
    upstream.on('data', (chunk) => void (pair.silent || client.write(chunk)));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });

  private constructor(private readonly target: number) {}

  static async start(target: number): Promise<TcpFront> {
    const front = new TcpFront(target);
    await new Promise<void>((resolve) => front.server.listen(0, '127.0.0.1', resolve));
    front.port = (front.server.address() as net.AddressInfo).port;
    return front;
  }

  /** Every connection open now stops answering (new ones are forwarded as usual). */
  silenceOpenConnections(): void {
    for (const pair of this.pairs) pair.silent = true;
  }

  async close(): Promise<void> {
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const event = () => ({ id: randomUUID(), type: 'ThingHappened', data: { n: 1 } });

let fake: FakeEsdb | undefined;
let front: TcpFront | undefined;
let store: EsdbEventStore | undefined;

/** The next append is answered, over a second TCP connection (the replaced client's own). */
async function expectAnsweredOnASecondConnection(): Promise<void> {
  const next = await store!.append('workflow-after', [event()], 'no_stream').then(
    (result) => result,
    (error: unknown) => error,
  );
  expect({ next, connections: front!.accepted }).toEqual({
    next: { nextExpectedRevision: 0n, position: expect.any(BigInt) },
    connections: 2,
  });
}

afterEach(async () => {
  await store?.close();
  await front?.close();
  await fake?.stop();
  store = undefined;
  front = undefined;
  fake = undefined;
});

describe('EsdbEventStore replacing a connection that let a deadline pass', () => {
  it('sends the next append over a new TCP connection, which the server answers', async () => {
    fake = await FakeEsdb.start();
    front = await TcpFront.start(fake.port);
    store = new EsdbEventStore(`esdb://127.0.0.1:${front.port}?tls=false`, { callTimeoutMs: 1_000 });
    await store.append('workflow-before', [event()]);
    expect(front.accepted).toBe(1);

    // The peer vanishes: the open connection stays up and answers nothing.
    front.silenceOpenConnections();
    await expect(store.append('workflow-lost', [event()])).rejects.toBeInstanceOf(StoreUnavailableError);

    // The store has replaced its client: the next append goes over a new connection (on main it
    // went over the dead one, until keepalive gave it up about 20 s later) and is answered.
    await expectAnsweredOnASecondConnection();
    expect(fake.streams.get('workflow-after')).toHaveLength(1);
  });

  it('closes the replaced connection once its calls are over, though the server still answers on it', async () => {
    fake = await FakeEsdb.start();
    front = await TcpFront.start(fake.port);
    store = new EsdbEventStore(`esdb://127.0.0.1:${front.port}?tls=false`, { callTimeoutMs: 500 });
    // A server slow to answer one append (alive: it answers keepalive pings): the store replaces
    // its connection all the same.
    fake.hold = (append) => append.streamId === 'workflow-slow';
    await expect(store.append('workflow-slow', [event()])).rejects.toBeInstanceOf(StoreUnavailableError);
    await store.append('workflow-after', [event()]);
    expect(front.accepted).toBe(2);
    fake.release();
    // The old client is disposed a deadline later and grpc-js drops an unused connection within
    // 10 s: one connection is left, not one more for every replacement.
    await waitFor(() => front!.open === 1, { timeoutMs: 15_000, description: 'the replaced connection to close' });
  }, 20_000);

  it('replaces the connection also when the client\'s own gRPC deadline ends the call first', async () => {
    fake = await FakeEsdb.start();
    front = await TcpFront.start(fake.port);
    store = new EsdbEventStore(`esdb://127.0.0.1:${front.port}?tls=false`, { callTimeoutMs: 1_000 });
    await store.append('workflow-before', [event()]);
    front.silenceOpenConnections();

    // An append carries a gRPC deadline as long as the store's own timer, and whichever fires
    // first ends the call. On a busy machine the client's is sometimes first (5 appends in 60 on a
    // silent connection with both cores kept busy): the event loop's cached time, which the
    // store's timer starts from, lags the clock the deadline is computed from. Here the client's
    // deadline is made 50 ms shorter, so that it is first every time.
    const client = EventStoreDBClient.prototype as unknown as { createDeadline(deadline?: number): Date };
    const createDeadline = client.createDeadline;
    client.createDeadline = function (this: unknown, deadline?: number) {
      return new Date(createDeadline.call(this, deadline).getTime() - 50);
    };
    try {
      await expect(store.append('workflow-lost', [event()])).rejects.toThrow(/DEADLINE_EXCEEDED/);
    } finally {
      client.createDeadline = createDeadline;
    }

    await expectAnsweredOnASecondConnection();
  });
});
