import { describe, expect, it, jest } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '../event-store/sqlite/sqlite-event-store.js';
import { historyLength } from './history.js';

describe('historyLength', () => {
  // `Workflow.historyLength` is asked for every node of a page (500 a page, any number of aliases):
  // it read the stream's last event whole, and parsed its data, to learn its revision. A read-only
  // token's 10 aliases of `workflows(first: 200) { nodes { historyLength } }` over workflows of
  // 240 KB inputs took 23 s.
  it("counts a stream's events without parsing the last one's data", async () => {
    const store = new SqliteEventStore(join(mkdtempSync(join(tmpdir(), 'baton-history-')), 'h.db'));
    try {
      const big = { input: ['x'.repeat(100_000)] };
      await store.append('workflow-h', [0, 1, 2].map(() => ({ id: randomUUID(), type: 'Big', data: big })));
      // A fresh store on the file: what the first one holds in memory of its own appends does not count.
      const reader = new SqliteEventStore(store.file);
      const parse = jest.spyOn(JSON, 'parse');
      try {
        expect(await historyLength(reader, 'workflow-h')).toBe(3);
        expect(await historyLength(reader, 'workflow-none')).toBe(0);
        expect(parse.mock.calls.filter(([text]) => typeof text === 'string' && text.length > 1000)).toHaveLength(0);
      } finally {
        parse.mockRestore();
        await reader.close();
      }
    } finally {
      await store.close();
    }
  });
});
