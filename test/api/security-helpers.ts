/**
 * Helpers for the hostile-input suites: raw HTTP requests written byte for byte on a socket (so a
 * test can send what `fetch` refuses to: absolute-form targets, fragments, control bytes), and the
 * worker protocol driven by hand.
 */
import { connect } from 'node:net';
import type { Service } from '../support/service.js';
import { expectData, gql } from './api-helpers.js';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `head` (request line and headers, CRLF-separated, no final blank line) and `body`; reads until close. */
export function rawRequest(service: Service, head: string, body = ''): Promise<RawResponse> {
  const { hostname, port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.setTimeout(15_000, () => socket.destroy(new Error('raw request timed out')));
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const lines = text.slice(0, split).split('\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0])?.[1] ?? 0);
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      let rest = split >= 0 ? text.slice(split + 4) : '';
      if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
        let out = '';
        while (rest.length > 0) {
          const eol = rest.indexOf('\r\n');
          const size = parseInt(rest.slice(0, eol), 16);
          if (!size) break;
          out += rest.slice(eol + 2, eol + 2 + size);
          rest = rest.slice(eol + 2 + size + 2);
        }
        rest = out;
      }
      resolve({ status, headers, body: Buffer.from(rest, 'latin1').toString('utf8') });
    });
    socket.end(`${head}\r\nConnection: close\r\n${body ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : ''}\r\n${body}`);
  });
}

export const POLL_WORK = `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref workflowId taskId name decisionId attemptId attempt input history } }`;
export const REPORT_WORK = `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { ref code message } } }`;
export const HEARTBEAT = `mutation($input: HeartbeatInput!) { heartbeat(input: $input) { ref cancel reason } }`;

export interface ClaimedItem {
  kind: 'DECISION' | 'TASK';
  ref: string;
  workflowId: string | null;
  taskId: string | null;
  name: string;
  decisionId: string | null;
  attemptId: string | null;
}

/** Polls (waiting up to `waitMs`) for the given workflow and task names; returns what was claimed. */
export async function poll(
  service: Service,
  scope: { appId: string; environment: string },
  names: { workflows?: string[]; tasks?: string[] },
  options: { waitMs?: number; maxItems?: number; token?: string } = {},
): Promise<ClaimedItem[]> {
  const data = expectData(
    await gql(
      service,
      POLL_WORK,
      {
        input: {
          ...scope,
          workerId: 'hostile-test',
          workflows: names.workflows ?? [],
          tasks: (names.tasks ?? []).map((name) => ({ name, retry: { maxAttempts: 1, initialDelayMs: 0, backoffFactor: 1, maxDelayMs: 0 } })),
          waitMs: options.waitMs ?? 5_000,
          maxItems: options.maxItems ?? 10,
        },
      },
      options.token ?? service.token,
    ),
  );
  return data.pollWork;
}
