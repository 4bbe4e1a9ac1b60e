/**
 * docs/OPERATIONS.md's metrics table against a real `/metrics` scrape: the same `baton_` series
 * (prom-client's process defaults apart), each with the labels the table gives it.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, Service, startService } from '../support/service.js';

function documented(): Map<string, string[]> {
  const text = readFileSync(join(ROOT, 'docs/OPERATIONS.md'), 'utf8');
  const rows = new Map<string, string[]>();
  for (const m of text.matchAll(/^\| `(baton_[a-z_]+)` \| [a-z]* \|([^|]*)\|/gm)) {
    rows.set(m[1], [...m[2].matchAll(/`([a-z_]+)`/g)].map((l) => l[1]).sort());
  }
  return rows;
}

describe('OPERATIONS.md metrics table', () => {
  let service: Service;
  beforeAll(async () => {
    service = await startService();
    // Some work, so that labelled series have samples.
    await service.gql('mutation { dispatchWorkflow(input: { appId: "demo", environment: "dev", name: "Nobody", input: "[]" }) { id } }');
  });
  afterAll(() => service.stop());

  it('lists exactly the series /metrics serves, with their labels', async () => {
    const text = await (await fetch(`${service.url}/metrics`)).text();
    const served = new Set([...text.matchAll(/^# TYPE (baton_\w+) /gm)].map((m) => m[1]).filter((n) => !/^baton_(process|nodejs)_/.test(n)));
    const rows = documented();
    expect([...rows.keys()].sort()).toEqual([...served].sort());
    const labels = new Map<string, Set<string>>();
    for (const m of text.matchAll(/^(baton_\w+?)(?:_bucket|_sum|_count)?\{([^}]*)\}/gm)) {
      for (const l of m[2].matchAll(/(\w+)="/g)) if (l[1] !== 'le') (labels.get(m[1]) ?? labels.set(m[1], new Set()).get(m[1])!).add(l[1]);
    }
    const wrong = [...labels].filter(([name, set]) => rows.has(name) && JSON.stringify([...set].sort()) !== JSON.stringify(rows.get(name)));
    expect(wrong.map(([name, set]) => `${name}: served ${[...set].sort()}, documented ${rows.get(name)}`)).toEqual([]);
    expect(labels.size).toBeGreaterThan(5);
  });
});
