import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  GraphQLSchema,
  buildSchema,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  isSpecifiedDirective,
  isSpecifiedScalarType,
} from 'graphql';
import { ROOT } from '../support/service.js';

/**
 * `schema.graphql` is committed: it must be exactly what `npm run schema` prints from the
 * code-first types now, and every element of the schema must carry a description.
 */

const run = promisify(execFile);
const COMMITTED = join(ROOT, 'schema.graphql');

/** Runs the compiled script (`npm run schema`'s own code) with a temporary output file. */
async function generateSchema(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'baton-schema-'));
  try {
    const target = join(dir, 'schema.graphql');
    await run(process.execPath, [join(ROOT, 'dist/src/graphql/print-schema.js'), target], { cwd: ROOT, timeout: 60_000 });
    return readFileSync(target, 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Types, fields, arguments, input fields, enum values and directives without a description. */
function undocumented(schema: GraphQLSchema): string[] {
  const missing: string[] = [];
  const described = (element: { description?: string | null }) => typeof element.description === 'string' && element.description.trim() !== '';
  // Nest's code-first API has no way to describe the root operation types; their fields are checked.
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].map((t) => t?.name));
  for (const type of Object.values(schema.getTypeMap())) {
    if (isIntrospectionType(type) || isSpecifiedScalarType(type)) continue;
    if (!roots.has(type.name) && !described(type)) missing.push(`type ${type.name}`);
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        if (!described(field)) missing.push(`field ${type.name}.${field.name}`);
        for (const arg of field.args) if (!described(arg)) missing.push(`argument ${type.name}.${field.name}(${arg.name})`);
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) if (!described(field)) missing.push(`input field ${type.name}.${field.name}`);
    } else if (isEnumType(type)) {
      for (const value of type.getValues()) if (!described(value)) missing.push(`enum value ${type.name}.${value.name}`);
    }
  }
  for (const directive of schema.getDirectives()) {
    if (isSpecifiedDirective(directive)) continue;
    if (!described(directive)) missing.push(`directive @${directive.name}`);
    for (const arg of directive.args) if (!described(arg)) missing.push(`argument @${directive.name}(${arg.name})`);
  }
  return missing;
}

function firstDifference(expected: string, actual: string): string {
  const a = expected.split('\n');
  const b = actual.split('\n');
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `first difference at line ${i + 1}:\n  committed: ${JSON.stringify(a[i] ?? '<end of file>')}\n  generated: ${JSON.stringify(b[i] ?? '<end of file>')}`;
  }
  return 'no difference';
}

describe('schema.graphql', () => {
  let generated: string;

  it('is up to date with the code-first types', async () => {
    generated = await generateSchema();
    if (!existsSync(COMMITTED)) throw new Error('schema.graphql is missing: run npm run schema (and commit it)');
    const committed = readFileSync(COMMITTED, 'utf8');
    if (committed !== generated) {
      throw new Error(`schema.graphql is out of date: run npm run schema\n${firstDifference(committed, generated)}`);
    }
  });

  it('describes every type, field, argument, input field and enum value', async () => {
    generated ??= await generateSchema();
    const missing = undocumented(buildSchema(generated));
    if (missing.length > 0) {
      throw new Error(`${missing.length} schema element(s) without a description (add \`description\` to the decorator):\n  ${missing.join('\n  ')}`);
    }
    expect(missing).toEqual([]);
  });
});
