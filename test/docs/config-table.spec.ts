/**
 * README's configuration table against the config loader: every variable `loadConfig` reads is
 * listed, every listed variable is read by something, and a default the table states is the one
 * the loader uses (setting the variable to the documented default changes nothing).
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** `| \`NAME\` | default | meaning |` rows of README's *Configuration* section. */
function tableRows(): Map<string, string> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1));
  const rows = new Map<string, string>();
  for (const line of section.split('\n')) {
    const m = /^\| `([A-Z_]+)` \| ([^|]*) \|/.exec(line);
    if (m) rows.set(m[1], m[2].trim());
  }
  return rows;
}

/** The variables `loadConfig` reads, by watching its accesses to the environment. */
function variablesRead(): Set<string> {
  const read = new Set<string>();
  const env = new Proxy({} as Record<string, string | undefined>, {
    get(_target, key) {
      if (typeof key === 'string') read.add(key);
      return undefined;
    },
  });
  loadConfig(env);
  return read;
}

/** Variables read outside the loader (by the process itself or a library), listed in the table too. */
const READ_ELSEWHERE = ['NODE_ENV', 'BATON_FAULTS', 'OTEL_EXPORTER_OTLP_ENDPOINT'];

describe('README configuration table', () => {
  it('lists every variable the config loader reads, and nothing else', () => {
    const rows = tableRows();
    expect(rows.size).toBeGreaterThan(30);
    expect([...variablesRead()].filter((v) => !rows.has(v)).sort()).toEqual([]);
    const read = new Set([...variablesRead(), ...READ_ELSEWHERE]);
    expect([...rows.keys()].filter((v) => !read.has(v)).sort()).toEqual([]);
  });

  it('states the defaults the loader uses', () => {
    const defaults = loadConfig({ READ_MODEL_PATH: 'x.db' });
    const wrong: string[] = [];
    for (const [name, cell] of tableRows()) {
      const m = /^`([^`]*)`/.exec(cell);
      if (!m || READ_ELSEWHERE.includes(name)) continue;
      let config;
      try {
        config = loadConfig({ READ_MODEL_PATH: 'x.db', [name]: m[1] });
      } catch (error) {
        wrong.push(`${name}=${m[1]}: ${(error as Error).message}`);
        continue;
      }
      if (JSON.stringify(config) !== JSON.stringify(defaults)) wrong.push(`${name}=${m[1]} is not the default`);
    }
    expect(wrong).toEqual([]);
  });
});
