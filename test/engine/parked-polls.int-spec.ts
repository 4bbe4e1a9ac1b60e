/**
 * Many parked polls, a stream of new work: each new claimable item wakes one parked poll that
 * serves it, not all of them. Woken together, every parked poll ran a claim round for every new
 * task and all but one found nothing (50 parked polls, 200 tasks: thousands of empty rounds).
 * Counted through the service's own counters (`baton_poll_rounds_total`, `baton_poll_wakeups_total`),
 * with raw pollWork requests as a fleet of one-slot workers sends them. Then two instances on one
 * store: each wakes its own parked polls from its own projection, and every task is claimed once.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Client, issueTokens, unique } from '../api/api-helpers.js';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { metric } from '../support/metrics.js';

const POLL = 'mutation($input: PollWorkInput!) { pollWork(input: $input) { kind ref } }';

const scrape = async (service: Service) => {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  return {
    parked: metric(text, 'baton_long_polls_parked'),
    firstRounds: metric(text, 'baton_poll_rounds_total', { round: 'first' }),
    rounds: metric(text, 'baton_poll_rounds_total', { round: 'again' }),
    wakeups: metric(text, 'baton_poll_wakeups_total'),
    depth: metric(text, 'baton_queue_depth'),
  };
};

/**
 * `count` one-slot workers long-polling `service` for task `name`: each polls again as soon as its
 * answer comes back, keeping what it was handed (its tasks stay claimed).
 */
function fleet(service: Service, token: string, environment: string, name: string, count: number) {
  const claimed: string[] = [];
  const stop = new AbortController();
  const loop = async (n: number) => {
    while (!stop.signal.aborted) {
      const input = { appId: 'demo', environment, workerId: `w-${n}`, workflows: [], tasks: [{ name }], maxItems: 1, waitMs: 60_000 };
      try {
        const response = await fetch(`${service.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ query: POLL, variables: { input } }),
          signal: stop.signal,
        });
        const body = (await response.json()) as { data?: { pollWork: Array<{ ref: string }> } };
        for (const item of body.data?.pollWork ?? []) claimed.push(item.ref);
      } catch {
        // aborted at the end
      }
    }
  };
  const loops = Array.from({ length: count }, (_, n) => loop(n));
  return {
    claimed,
    stop: async () => {
      stop.abort();
      await Promise.all(loops);
    },
  };
}

describe('parked polls and new work', () => {
  const services: Service[] = [];
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
  });

  it('50 parked polls and 200 new tasks: about one claim round and one wake-up per task, not one per parked poll', async () => {
    const service = await startService();
    services.push(service);
    const environment = unique('herd');
    const name = unique('herdTask');
    const [token] = await issueTokens(service, [{ apps: ['demo'], role: 'worker' }]);
    const admin = new Client(service, 'demo', environment);
    const workers = fleet(service, token, environment, name, 50);
    try {
      await waitFor(async () => (await scrape(service)).parked === 50, { timeoutMs: 15_000, description: '50 parked polls' });
      const before = await scrape(service);
      const ids: string[] = [];
      for (let i = 0; i < 200; i++) ids.push(await admin.dispatchTask(name));
      await waitFor(() => workers.claimed.length >= 200, { timeoutMs: 30_000, description: 'the 200 tasks claimed' });
      // Every worker that took one polled again and parked: nothing is left claimable.
      const after = await waitFor(async () => {
        const now = await scrape(service);
        return now.parked === 50 ? now : null;
      }, { timeoutMs: 15_000, description: 'the 50 polls parked again' });
      expect(new Set(workers.claimed).size).toBe(200);
      expect(workers.claimed.sort()).toEqual(ids.map((id) => `task:${id}`).sort());
      expect(after.depth).toBe(0);
      const woken = { rounds: after.rounds - before.rounds, wakeups: after.wakeups - before.wakeups, firstRounds: after.firstRounds - before.firstRounds };
      console.log(`50 parked polls, 200 tasks dispatched one at a time: ${JSON.stringify(woken)}`);
      // One wake-up and one round per task (a few more for the polls a dispatch woke while another round was under way).
      expect(woken.wakeups).toBeLessThanOrEqual(220);
      expect(woken.rounds).toBeLessThanOrEqual(220);
      // A poll that got a task polls again: its first round finds nothing and it parks.
      expect(woken.firstRounds).toBe(200);
    } finally {
      await workers.stop();
    }
  }, 120_000);

  it('two instances on one store, 20 parked polls on each, 100 tasks: each instance wakes its own, every task claimed once', async () => {
    const storeUrl = freshStoreUrl();
    const a = await startService({ storeUrl });
    services.push(a);
    const b = await startService({ storeUrl });
    services.push(b);
    const environment = unique('herd2');
    const name = unique('herdTask2');
    const [token] = await issueTokens(a, [{ apps: ['demo'], role: 'worker' }]);
    await waitFor(async () => (await fetch(`${b.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: '{"query":"{ __typename }"}' })).status === 200, {
      timeoutMs: 15_000,
      description: 'B to accept the token',
    });
    const admin = new Client(a, 'demo', environment);
    const onA = fleet(a, token, environment, name, 20);
    const onB = fleet(b, token, environment, name, 20);
    try {
      await waitFor(async () => (await scrape(a)).parked === 20 && (await scrape(b)).parked === 20, { timeoutMs: 15_000, description: '20 parked polls on each' });
      const before = { a: await scrape(a), b: await scrape(b) };
      const ids: string[] = [];
      for (let i = 0; i < 100; i++) ids.push(await admin.dispatchTask(name));
      await waitFor(() => onA.claimed.length + onB.claimed.length >= 100, { timeoutMs: 30_000, description: 'the 100 tasks claimed' });
      const after = await waitFor(async () => {
        const now = { a: await scrape(a), b: await scrape(b) };
        return now.a.parked === 20 && now.b.parked === 20 && now.a.depth === 0 && now.b.depth === 0 ? now : null;
      }, { timeoutMs: 15_000, description: 'the polls parked again on both, nothing claimable' });
      const claimed = [...onA.claimed, ...onB.claimed];
      expect(claimed).toHaveLength(100);
      expect(claimed.sort()).toEqual(ids.map((id) => `task:${id}`).sort());
      // Both instances' polls took some: B's learn of the tasks from B's own projection.
      expect(onB.claimed.length).toBeGreaterThan(0);
      const counts = (k: 'a' | 'b') => ({ rounds: after[k].rounds - before[k].rounds, wakeups: after[k].wakeups - before[k].wakeups });
      console.log(`two instances, 20 parked polls each, 100 tasks dispatched on A: A ${JSON.stringify(counts('a'))}, B ${JSON.stringify(counts('b'))}`);
      // Each instance wakes about one of its own polls per task (not 20); a poll that lost the race
      // to the other instance looks once more after its short wait.
      for (const k of ['a', 'b'] as const) {
        expect(counts(k).wakeups).toBeLessThanOrEqual(120);
        expect(counts(k).rounds).toBeLessThanOrEqual(300);
      }
    } finally {
      await Promise.all([onA.stop(), onB.stop()]);
    }
  }, 120_000);
});
