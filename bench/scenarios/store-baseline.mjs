// Baseline for scenario 2: the embedded store's own append rate, through the compiled adapter
// (dist/src/event-store/sqlite/sqlite-event-store.js, synchronous=FULL, group commit), on this disk.
import { randomUUID } from 'node:crypto';
import { freshStoreFile, ROOT } from '../lib/baton.mjs';
import { now, summary } from '../lib/util.mjs';

/** An event shaped and sized like Baton's own (a WorkflowDispatched with its metadata). */
function benchEvent(i) {
  const id = randomUUID();
  return {
    id,
    type: 'BenchAppended',
    data: { workflowId: id, appId: 'demo', environment: 'bench', name: 'BenchTwoStep', tag: null, input: [], parent: null, scheduleId: null, dispatchedAt: new Date().toISOString(), i },
    metadata: { correlationId: id, causationId: id, actor: randomUUID(), appId: 'demo', environment: 'bench', at: new Date().toISOString() },
  };
}

async function measure(store, lanes, durationMs, prefix) {
  let count = 0;
  const start = now();
  const deadline = start + durationMs;
  const lane = async (l) => {
    for (let i = 0; now() < deadline; i++) {
      await store.append(`bench-${prefix}${l}x${i}`, [benchEvent(i)], 'no_stream');
      count++;
    }
  };
  await Promise.all(Array.from({ length: lanes }, (_, l) => lane(l)));
  return count / ((now() - start) / 1000);
}

export async function storeBaseline({ runs, durationMs, concurrency = 50, log }) {
  const { SqliteEventStore } = await import(`${ROOT}/dist/src/event-store/sqlite/sqlite-event-store.js`);
  const sequential = [];
  const concurrent = [];
  for (let r = 0; r < runs; r++) {
    const store = new SqliteEventStore(freshStoreFile('append'));
    try {
      await measure(store, 1, 200, 'w'); // warm-up
      sequential.push(await measure(store, 1, durationMs, `s${r}-`));
      concurrent.push(await measure(store, concurrency, durationMs, `c${r}-`));
    } finally {
      await store.close();
    }
    log(`  run ${r + 1}/${runs}: one by one ${Math.round(sequential.at(-1))} appends/s, ${concurrency} concurrent ${Math.round(concurrent.at(-1))} appends/s`);
  }
  return { sequential: summary(sequential), concurrent: summary(concurrent), concurrency, durationMs };
}
