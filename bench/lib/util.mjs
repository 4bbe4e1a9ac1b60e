// Small helpers shared by the scenarios: statistics, HTTP with keep-alive, ports, timing.
import http from 'node:http';
import net from 'node:net';
import { wallNow as now } from './clock.mjs';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** The bench's clock (see clock.mjs): wall-clock ms, comparable between its processes. */
export { now };

/** Linear-interpolated percentile (p in 0..100) of an array of numbers. */
export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

/** Median and spread of the figures of several runs. */
export function summary(values) {
  const v = values.filter((x) => Number.isFinite(x));
  if (v.length === 0) return { median: NaN, min: NaN, max: NaN, p25: NaN, p75: NaN, runs: [] };
  return {
    median: percentile(v, 50),
    min: Math.min(...v),
    max: Math.max(...v),
    p25: percentile(v, 25),
    p75: percentile(v, 75),
    runs: v,
  };
}

/** A free TCP port on 127.0.0.1 (the listener is closed before it is returned). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/**
 * POSTs (or GETs) JSON over a keep-alive agent. Resolves { status, body, headers }; bodies that are not
 * JSON come back as text. `timeoutMs` bounds the whole request.
 */
export function httpJson(url, options = {}) {
  return httpOnce(url, options).catch((error) => {
    // A keep-alive socket the server closed while idle: Node's documented case for one retry.
    if (error.reusedSocket && error.code === 'ECONNRESET') return httpOnce(url, options);
    throw error;
  });
}

function httpOnce(url, { method = 'POST', body, headers = {}, timeoutMs = 120_000 } = {}) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: {
          ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed = text;
          try {
            parsed = text.length ? JSON.parse(text) : null;
          } catch {
            /* keep text */
          }
          resolve({ status: res.statusCode, body: parsed, headers: res.headers });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${url} timed out after ${timeoutMs} ms`)));
    req.on('error', (error) => {
      error.reusedSocket = req.reusedSocket;
      reject(error);
    });
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** Polls `fn` until it returns a truthy value; throws after `timeoutMs`. */
export async function waitUntil(fn, { timeoutMs, intervalMs = 50, what = 'condition' }) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Runs `count` jobs with at most `concurrency` in flight. */
export async function pool(count, concurrency, job) {
  let next = 0;
  const errors = [];
  const lane = async () => {
    while (next < count) {
      const i = next++;
      try {
        await job(i);
      } catch (error) {
        errors.push(error);
        if (errors.length > 20) throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return errors;
}

/** Fires `count` jobs at a fixed rate (open loop: a slow answer does not delay the next start). */
export async function atRate(count, perSecond, job) {
  const start = now();
  const pending = [];
  const errors = [];
  for (let i = 0; i < count; i++) {
    const due = start + (i * 1000) / perSecond;
    const wait = due - now();
    if (wait > 1) await sleep(wait);
    pending.push(Promise.resolve().then(() => job(i)).catch((e) => errors.push(e)));
  }
  await Promise.all(pending);
  return errors;
}

export const fmt = {
  int: (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a'),
  num: (x, d = 1) => (Number.isFinite(x) ? x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : 'n/a'),
  ratio: (x) => (Number.isFinite(x) ? (x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3)) : 'n/a'),
  bytes: (x) => (Number.isFinite(x) ? (Math.abs(x) >= 1024 * 1024 ? `${(x / 1024 / 1024).toFixed(1)} MiB` : Math.abs(x) >= 1024 ? `${(x / 1024).toFixed(1)} KiB` : `${Math.round(x)} B`) : 'n/a'),
};

/** "median [min–max]" with the given formatter. */
export function spread(s, f = fmt.int) {
  if (!s || !Number.isFinite(s.median)) return 'n/a';
  if (s.runs.length < 2) return f(s.median);
  return `${f(s.median)} [${f(s.min)}–${f(s.max)}]`;
}
