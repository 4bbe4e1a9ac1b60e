import { describe, expect, it } from '@jest/globals';
import { QUERY_COUNT_CAP, ReadModelDb } from '../event-store/read-model-db.js';
import type { ReadFence } from '../event-store/read-fence.js';
import { TokensReadModel } from '../tokens/tokens.projection.js';
import { AuditReadModel } from './audit.read-model.js';
import { AuditResolver } from './audit.resolver.js';

/**
 * The audit log's filters (actor, action, text, time) have no index: a filtered page searches at
 * most QUERY_COUNT_CAP of the scope's entries past its cursor and says where to go on, so a rare
 * match in a large log costs a bounded read per page instead of the whole log.
 */

const scope = { appId: 'a', environment: 'e' };

/**
 * `n` dispatches by `tok_a` at positions 1…n (newest last), plus `needles` entries of actor
 * `tok_rare` at the given positions instead; another app's entries in between.
 */
function withEntries(n: number, needles: number[] = []): { rm: ReadModelDb; model: AuditReadModel } {
  const rm = new ReadModelDb(':memory:');
  const model = new AuditReadModel(rm);
  model.migrate();
  const insert = rm.db.prepare(`INSERT INTO rm_audit (position, at, actor, app_id, environment, action, stream_id, name, data) VALUES (?, ?, ?, ?, 'e', ?, ?, ?, '{}')`);
  const rare = new Set(needles);
  rm.db.transaction(() => {
    for (let i = 1; i <= n; i++) {
      const needle = rare.has(i);
      insert.run(i * 2, 1_700_000_000_000 + i, needle ? 'tok_rare' : 'tok_a', 'a', needle ? 'WorkflowPaused' : 'WorkflowDispatched', `workflow-w${i}`, needle ? 'Needle' : 'Order');
      insert.run(i * 2 + 1, 1_700_000_000_000 + i, 'tok_rare', 'other', 'WorkflowPaused', `workflow-o${i}`, 'Needle');
    }
  })();
  return { rm, model };
}

const positions = (page: { entries: Array<{ position: bigint }> }) => page.entries.map((e) => Number(e.position) / 2);

describe('audit log pages', () => {
  it('without a filter, pages through the scope by its index, counting up to the cap', () => {
    const { model } = withEntries(30);
    const page = model.page(scope, 10, null);
    expect(positions(page)).toEqual([30, 29, 28, 27, 26, 25, 24, 23, 22, 21]);
    expect(page).toMatchObject({ totalCount: 30, totalCountCapped: false, hasNextPage: true, searchedTo: null });
    const last = model.page(scope, 10, 21n * 2n);
    expect(positions(last)).toEqual([20, 19, 18, 17, 16, 15, 14, 13, 12, 11]);
  });

  it('a filter within a small log: every match, exact count, no search cursor', () => {
    const { model } = withEntries(50, [3, 17, 40]);
    const page = model.page({ ...scope, search: 'NEEDLE' }, 2, null);
    expect(positions(page)).toEqual([40, 17]);
    expect(page).toMatchObject({ totalCount: 3, totalCountCapped: false, hasNextPage: true, searchedTo: null });
    const rest = model.page({ ...scope, search: 'needle' }, 2, 17n * 2n);
    expect(positions(rest)).toEqual([3]);
    expect(rest).toMatchObject({ hasNextPage: false, searchedTo: null });
    expect(positions(model.page({ ...scope, actor: 'tok_rare', action: 'WorkflowPaused' }, 10, null))).toEqual([40, 17, 3]);
    expect(model.page({ ...scope, actor: 'nobody' }, 10, null)).toMatchObject({ entries: [], totalCount: 0, hasNextPage: false });
  });

  it('a rare match in a large log: each page searches at most the cap and says where to go on', () => {
    const n = QUERY_COUNT_CAP * 2 + 500;
    // One match among the newest QUERY_COUNT_CAP entries, one in the next QUERY_COUNT_CAP, one in the oldest 500.
    const { model } = withEntries(n, [n - 10, n - QUERY_COUNT_CAP - 10, 7]);
    const filter = { ...scope, actor: 'tok_rare' };
    const first = model.page(filter, 50, null);
    expect(positions(first)).toEqual([n - 10]);
    // Counted among the newest QUERY_COUNT_CAP: a lower bound, since older entries were not searched.
    expect(first).toMatchObject({ totalCount: 1, totalCountCapped: true, hasNextPage: true });
    expect(Number(first.searchedTo) / 2).toBe(n - QUERY_COUNT_CAP + 1);

    const second = model.page(filter, 50, first.searchedTo);
    expect(positions(second)).toEqual([n - QUERY_COUNT_CAP - 10]);
    expect(second.hasNextPage).toBe(true);
    expect(Number(second.searchedTo) / 2).toBe(n - 2 * QUERY_COUNT_CAP + 1);

    // The last 500: the search reaches the start of the log, so there is nothing after it.
    const third = model.page(filter, 50, second.searchedTo);
    expect(positions(third)).toEqual([7]);
    expect(third).toMatchObject({ hasNextPage: false, searchedTo: null });
  });

  it('a page that fills before the cap ends at its last entry, as an unfiltered one does', () => {
    const n = QUERY_COUNT_CAP + 100;
    const { model } = withEntries(n, [n - 1, n - 2, n - 3]);
    const page = model.page({ ...scope, search: 'needle' }, 2, null);
    expect(positions(page)).toEqual([n - 1, n - 2]);
    expect(page).toMatchObject({ hasNextPage: true, searchedTo: null, totalCount: 3, totalCountCapped: true });
  });

  it('an empty page that searched the whole cap still goes on', () => {
    const n = QUERY_COUNT_CAP + 20;
    const { model } = withEntries(n, [5]);
    const page = model.page({ ...scope, action: 'WorkflowPaused' }, 10, null);
    expect(page.entries).toEqual([]);
    expect(page).toMatchObject({ totalCount: 0, totalCountCapped: true, hasNextPage: true });
    expect(positions(model.page({ ...scope, action: 'WorkflowPaused' }, 10, page.searchedTo))).toEqual([5]);
  });
});

describe('auditLog (the resolver)', () => {
  it('gives the position a short page searched to as its endCursor, and the next page goes on from it', async () => {
    const n = QUERY_COUNT_CAP + 30;
    const { rm, model } = withEntries(n, [n - 5, 10]);
    const tokens = new TokensReadModel(rm);
    tokens.migrate();
    // One store, one instance: the read models are at the head already (the fence is the integration tests' subject).
    const atHead = { upToHead: async () => 0n } as unknown as ReadFence;
    const resolver = new AuditResolver(model, tokens, atHead);
    const principal = { tokenId: 'tok_a', apps: ['a'], environments: null, role: 'admin' as const };
    const ask = (after?: string) => resolver.auditLog(principal, { filter: { ...scope, actor: 'tok_rare' }, first: 20, after } as never);
    const first = await ask();
    expect(first.nodes.map((e) => e.name)).toEqual(['Needle']);
    expect(first.pageInfo).toEqual({ hasNextPage: true, endCursor: String((n - QUERY_COUNT_CAP + 1) * 2) });
    const next = await ask(first.pageInfo.endCursor!);
    expect(next.nodes.map((e) => Number(e.id) / 2)).toEqual([10]);
    expect(next.pageInfo).toEqual({ hasNextPage: false, endCursor: String(20) });
  });
});
