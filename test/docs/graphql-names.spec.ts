/**
 * Where the docs or the SDK's TSDoc name a GraphQL operation ("the `awaitWorkflow` query",
 * "`x` in GraphQL", "the `scheduleWorkflow` mutation", "the `queries` field"), that name is in the
 * generated schema: a reader who follows it finds it.
 */
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
const schema = readFileSync(join(ROOT, 'schema.graphql'), 'utf8');

/** Fields of the schema's types, root operations apart. */
function fields(): { roots: Set<string>; all: Set<string> } {
  const roots = new Set<string>();
  const all = new Set<string>();
  for (const type of schema.matchAll(/^(?:type|input|interface) (\w+)[^{]*\{([\s\S]*?)^\}/gm)) {
    for (const field of type[2].matchAll(/^ {2}(\w+)[(:]/gm)) {
      all.add(field[1]);
      if (type[1] === 'Query' || type[1] === 'Mutation') roots.add(field[1]);
    }
  }
  return { roots, all };
}

function texts(): Array<[string, string]> {
  const files: string[] = ['README.md', 'packages/sdk/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  for (const dir of ['src/sdk', 'src/protocol']) {
    for (const f of readdirSync(join(ROOT, dir))) if (f.endsWith('.ts') && !f.includes('spec')) files.push(`${dir}/${f}`);
  }
  return files.map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]);
}

describe('GraphQL names in the docs and the SDK TSDoc', () => {
  it('every operation or field named as such exists in schema.graphql', () => {
    const { roots, all } = fields();
    expect(roots.has('awaitWorkflow')).toBe(true);
    const unknown: string[] = [];
    for (const [file, text] of texts()) {
      for (const m of text.matchAll(/`([a-z][A-Za-z]+)` (in GraphQL|query|mutation|field)\b/g)) {
        const known = m[2] === 'field' ? all.has(m[1]) : roots.has(m[1]);
        if (!known) unknown.push(`${file}: ${m[0]}`);
      }
    }
    expect(unknown).toEqual([]);
  });
});
