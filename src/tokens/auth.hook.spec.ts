import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import Fastify from 'fastify';
import type { ReadFence } from '../event-store/read-fence.js';
import { ManualClock } from '../shared/clock.js';
import { installAuth } from './auth.hook.js';
import type { TokensReadModel } from './tokens.projection.js';

const ID = '0192d7a0c3e87b4e9a1f2b3c4d5e6f70';
const TOKEN = `baton_${ID}_${'x'.repeat(43)}`;

/** Fastify with the auth hook in front of a /graphql that answers 200, and a token store that knows no token. */
async function given() {
  const clock = new ManualClock(1_700_000_000_000);
  const app = Fastify();
  app.post('/graphql', async () => ({ data: {} }));
  let headReads = 0;
  const fence = {
    upToHead: async () => {
      headReads++;
      return 42n;
    },
    position: 42n,
  } as unknown as ReadFence;
  const tokens = { check: () => ({ principal: null, reason: 'unknown' }) } as unknown as TokensReadModel;
  installAuth(app, tokens, 0, () => fence, clock);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const lines: string[] = [];
  jest.spyOn(Logger.prototype, 'log').mockImplementation((message: unknown) => void lines.push(String(message)));
  // (app.inject loads an ESM-only module that jest cannot require; a real socket on loopback it is.)
  const refuse = async () => {
    const response = await fetch(`${url}/graphql`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{"query":"{__typename}"}' });
    return { statusCode: response.status, headers: Object.fromEntries(response.headers), body: await response.text() };
  };
  return { app, clock, lines, refuse, headReads: () => headReads };
}

describe('an unknown but well-formed token', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('is answered 401 each time, while the log gets one line per minute for it, carrying the count of refusals since', async () => {
    const { app, clock, lines, refuse, headReads } = await given();
    try {
      for (let i = 0; i < 50; i++) {
        const response = await refuse();
        expect(response.statusCode).toBe(401);
        expect(response.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
        expect(JSON.parse(response.body)).toEqual({ errors: [{ message: 'unknown or revoked API token', extensions: { code: 'UNAUTHENTICATED' } }] });
      }
      expect(headReads()).toBe(50);
      expect(lines).toEqual([`API token ${ID} not found at position 42 (its further refusals are counted, and logged at most once a minute)`]);

      clock.advance(59_000);
      await refuse();
      expect(lines).toHaveLength(1);

      clock.advance(1_000);
      expect((await refuse()).statusCode).toBe(401);
      expect(lines).toEqual([lines[0], `API token ${ID} not found at position 42; refused 51 times since its last line 60 s ago`]);
    } finally {
      await app.close();
    }
  });
});
