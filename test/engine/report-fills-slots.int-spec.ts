/**
 * A report's claim with a `pollId` also fills the slots its outcomes leave free with the work
 * waiting for the worker, as a poll would: under load an SDK worker's reports are continuous and
 * its polls rare, and a new workflow's first decision waited for the next poll (about two
 * saturated round trips, docs/BENCHMARKS.md). The claims record the id; a report sent again whose
 * claims the worker still holds is answered with them and claims nothing more (its first answer
 * was lost), on either instance. Without a `pollId` (older SDKs) a report claims only its outcomes'
 * next steps, as before. Raw protocol, so what each answer carries is exact.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Client, expectData, expectError, issueTokens, post, startServices, unique } from '../api/api-helpers.js';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';

const services = startServices({ main: {} });
afterAll(() => services.stopAll());

const scope = { appId: 'demo', environment: 'report-fills' };
const POLL = `mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref workflowId decisionId } }`;
const REPORT = `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { ref code message } items { kind ref workflowId decisionId } } }`;

interface Item {
  kind: string;
  ref: string;
  workflowId: string | null;
  decisionId: string | null;
}

let service: Service;
let token: string;

beforeAll(async () => {
  service = await services.get('main');
  [token] = await issueTokens(service, [{ apps: ['demo'], role: 'worker' }]);
});

/** Workflows of a fresh name dispatched on `on` and claimable there (their first decision pending); the first one claimed by a poll of `workerId`. */
async function scenario(on: Service, waiting: number, workerToken = token) {
  const api = new Client(on, scope.appId, scope.environment);
  const name = unique('Fill');
  const workerId = unique('fill-worker');
  const first = await api.dispatchWorkflow(name);
  const poll = { ...scope, workerId, workflows: [name], tasks: [], maxItems: 1, waitMs: 5_000 };
  const claimed = await waitFor(
    async () => {
      const items = expectData(await post(on, JSON.stringify({ query: POLL, variables: { input: poll } }), workerToken)).pollWork as Item[];
      return items.length > 0 ? items[0] : null;
    },
    { timeoutMs: 10_000, description: 'the first decision claimed' },
  );
  expect(claimed.workflowId).toBe(first);
  const others: string[] = [];
  for (let i = 0; i < waiting; i++) others.push(await api.dispatchWorkflow(name));
  // Claimable as this instance sees them: each one's first event is in its history.
  await waitFor(async () => ((await Promise.all(others.map((id) => api.history(id)))).every((h) => h.length > 0) ? true : null), { timeoutMs: 10_000, description: 'the others dispatched' });
  const report = (claim: Record<string, unknown> | null) => ({
    ...scope,
    workerId,
    decisions: [{ ref: claimed.ref, decisionId: claimed.decisionId, commands: JSON.stringify([{ type: 'CompleteWorkflow', result: 1 }]) }],
    claim: claim && { workflows: [name], tasks: [], ...claim },
  });
  return { api, name, workerId, first, others, report };
}

const reportOn = async (on: Service, input: unknown, headers: Record<string, string> = {}) => {
  const answer = expectData(await post(on, JSON.stringify({ query: REPORT, variables: { input } }), token, headers)).reportWork as { accepted: number; rejected: unknown[]; items: Item[] };
  expect(answer.rejected).toEqual([]);
  return answer;
};

describe("a report's claim with a pollId", () => {
  it("is answered with the waiting work its slots have room for, within its per-kind caps, each claim recording the report's id", async () => {
    const { api, others, report } = await scenario(service, 3);
    const pollId = unique('report');
    const answer = await reportOn(service, report({ maxItems: 2, maxDecisions: 2, maxTasks: 0, pollId }));
    expect(answer.accepted).toBe(1);
    expect(answer.items.map((i) => i.kind)).toEqual(['DECISION', 'DECISION']);
    // The oldest waiting first, as a poll takes them.
    expect(answer.items.map((i) => i.workflowId)).toEqual(others.slice(0, 2));
    const started = (await api.history(others[0])).find((e) => e.type === 'DecisionStarted');
    expect((JSON.parse(String(started?.data)) as { pollId?: string }).pollId).toBe(pollId);
    // The third is still there for a poll.
    expect((await api.history(others[2])).some((e) => e.type === 'DecisionStarted')).toBe(false);
  });

  it('fills no more than fillDecisions (the slots no poll of the worker asks for), though its caps leave more', async () => {
    const { others, report } = await scenario(service, 3);
    const answer = await reportOn(service, report({ maxItems: 5, maxDecisions: 5, maxTasks: 0, pollId: unique('report'), fillDecisions: 1 }));
    expect(answer.items.map((i) => i.workflowId)).toEqual(others.slice(0, 1));
    const none = await scenario(service, 2);
    expect((await reportOn(service, none.report({ maxItems: 5, maxDecisions: 5, maxTasks: 0, pollId: unique('report'), fillDecisions: 0 }))).items).toEqual([]);
  });

  it('claims no waiting work without a pollId (an older SDK): only what its outcomes make claimable, as before', async () => {
    const { api, others, report } = await scenario(service, 2);
    const answer = await reportOn(service, report({ maxItems: 5 }));
    expect(answer.items).toEqual([]);
    for (const id of others) expect((await api.history(id)).some((e) => e.type === 'DecisionStarted')).toBe(false);
  });

  it('sent again (its answer lost) is answered with the claims of its first send and claims nothing more', async () => {
    const { api, report, name } = await scenario(service, 2);
    const input = report({ maxItems: 5, maxDecisions: 5, maxTasks: 0, pollId: unique('report') });
    const first = await reportOn(service, input);
    expect(first.items).toHaveLength(2);
    const later = await api.dispatchWorkflow(name);
    await waitFor(async () => ((await api.history(later)).length > 0 ? true : null), { timeoutMs: 10_000, description: 'a later workflow dispatched' });
    const again = await reportOn(service, input, { 'x-baton-resent': '1' });
    const key = (i: Item) => `${i.ref} ${i.decisionId}`;
    expect(again.items.map(key).sort()).toEqual(first.items.map(key).sort());
    expect((await api.history(later)).some((e) => e.type === 'DecisionStarted')).toBe(false);
  });

  it('is refused when malformed, naming claim.pollId', async () => {
    const { report } = await scenario(service, 0);
    for (const pollId of ['', 'p'.repeat(65), 'a b']) {
      expectError(await post(service, JSON.stringify({ query: REPORT, variables: { input: report({ maxItems: 1, pollId }) } }), token), 'BAD_USER_INPUT', 'claim.pollId');
    }
  });
});

describe('two instances on one store: a report whose answer from A is lost, sent again to B', () => {
  it("B answers the claims A made for the report's id, and claims nothing more", async () => {
    const storeUrl = freshStoreUrl();
    const a = await startService({ storeUrl });
    const b = await startService({ storeUrl });
    try {
      [token] = await issueTokens(a, [{ apps: ['demo'], role: 'worker' }]);
      const { report } = await scenario(a, 2, token);
      const input = report({ maxItems: 5, maxDecisions: 5, maxTasks: 0, pollId: unique('report') });
      const lost = await reportOn(a, input);
      expect(lost.items).toHaveLength(2);
      const resent = await reportOn(b, input, { 'x-baton-resent': '1' });
      const key = (i: Item) => `${i.ref} ${i.decisionId}`;
      expect(resent.items.map(key).sort()).toEqual(lost.items.map(key).sort());
    } finally {
      await b.stop();
      await a.stop();
      [token] = await issueTokens(service, [{ apps: ['demo'], role: 'worker' }]);
    }
  });
});
