import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';
import { uuidv7 } from './ids.js';

/**
 * The correlation id of the HTTP request being served: taken from `x-request-id` when the
 * caller sent a usable one, generated otherwise, returned in the response header, written on
 * the request's log line and into the metadata of every event the request causes.
 */
export interface RequestContext {
  correlationId: string;
  /** The highest log position the request wrote or read to (sent back as `x-baton-position`), -1 before any. */
  position: bigint;
  /** What the request holds of this instance's `MAX_BYTES_IN_FLIGHT` (bytes-in-flight.ts), once admitted. */
  held?: { add(bytes: number): void };
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Printable ASCII, at most 128 characters: anything else is replaced by a fresh id. */
const USABLE_ID = /^[\x21-\x7e]{1,128}$/;

export const REQUEST_ID_HEADER = 'x-request-id';

/** Fastify's `genReqId`: the caller's `x-request-id` when usable, else a UUID v7; kept on the raw request for pino-http. */
export function requestIdFor(raw: IncomingMessage & { id?: unknown }): string {
  if (typeof raw.id === 'string') return raw.id;
  const header = raw.headers[REQUEST_ID_HEADER];
  const value = Array.isArray(header) ? header[0] : header;
  const id = value && USABLE_ID.test(value) ? value : uuidv7();
  raw.id = id;
  return id;
}

/** Runs `fn` (and everything it starts) with this request's context. */
export function runWithRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** The context of the request being served, if any (one AsyncLocalStorage for everything a request carries). */
export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}

/** The correlation id of the request being served, if any. */
export function currentCorrelationId(): string | undefined {
  return storage.getStore()?.correlationId;
}
