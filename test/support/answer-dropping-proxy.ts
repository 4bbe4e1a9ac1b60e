import { type AddressInfo, type Socket, connect, createServer } from 'node:net';
import type { Service } from './service.js';

/**
 * A TCP proxy to the service that forwards everything, except the answers of the next `times`
 * requests whose text matches `cut` (given the request, and the first chunk of its answer: its
 * status line, headers and, for a small answer, its body): it lets the request through (the
 * service reads and applies it) and resets the connection as the answer starts to come back.
 */
export async function answerDroppingProxy(to: Service) {
  let target = new URL(to.url);
  let armed: { cut: (request: string, answer: string) => boolean; times: number } | undefined;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let request = '';
    client.on('data', (chunk: Buffer) => {
      request += chunk.toString('utf8');
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      const answered = request;
      request = '';
      if (answered !== '' && armed && armed.times > 0 && armed.cut(answered, chunk.toString('utf8'))) {
        armed.times--;
        cuts++;
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((listening) => proxy.listen(0, '127.0.0.1', listening));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    arm: (cut: (request: string, answer: string) => boolean, times = 1) => (armed = { cut, times }),
    /** New connections go to this service from now on (a restarted one listens on another port). */
    retarget: (next: Service) => (target = new URL(next.url)),
    cuts: () => cuts,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((closed) => proxy.close(closed));
    },
  };
}

