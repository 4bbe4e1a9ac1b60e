/**
 * docs/EVENTS.md describes every event type Baton registers, with exactly the fields the code
 * writes: the types come from the registered type lists, the fields from the TypeScript types of
 * the events (read with the compiler), so an event or a field added without its description fails here.
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { WORKFLOW_EVENT_TYPES } from '../../src/workflows/domain/workflow.decider.js';
import { TASK_EVENT_TYPES } from '../../src/tasks/domain/task.decider.js';
import { ATTEMPT_EVENT_TYPES } from '../../src/tasks/domain/task-attempts.js';
import { SCHEDULE_EVENT_TYPES } from '../../src/schedules/domain/schedule.decider.js';
import { TOKEN_EVENT_TYPES } from '../../src/tokens/domain/token.decider.js';
import { WORKFLOWS_EXPIRED } from '../../src/retention/retention.service.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** Where each stream category's events are typed: a union of `{ type, data }`, or (retention) the data alone. */
const SOURCES = [
  { file: 'src/workflows/domain/workflow.decider.ts', union: 'WorkflowEvent' },
  { file: 'src/tasks/domain/task.decider.ts', union: 'TaskEvent' },
  { file: 'src/schedules/domain/schedule.decider.ts', union: 'ScheduleEvent' },
  { file: 'src/tokens/domain/token.decider.ts', union: 'TokenEvent' },
  { file: 'src/retention/retention.service.ts', data: 'WorkflowsExpiredData', type: WORKFLOWS_EXPIRED },
] as const;

/** Field names per event type, from the code's types (a type in several streams: the union of its fields). */
function fieldsInCode(): Map<string, Set<string>> {
  const program = ts.createProgram(
    SOURCES.map((s) => join(ROOT, s.file)),
    { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true, skipLibCheck: true, noEmit: true, experimentalDecorators: true },
  );
  const checker = program.getTypeChecker();
  const exported = (file: string, name: string): ts.Type => {
    const module = checker.getSymbolAtLocation(program.getSourceFile(join(ROOT, file))!)!;
    const symbol = checker.getExportsOfModule(module).find((s) => s.name === name);
    if (!symbol) throw new Error(`${file} exports no ${name}`);
    return checker.getDeclaredTypeOfSymbol(symbol);
  };
  const names = (type: ts.Type) => checker.getPropertiesOfType(type).map((p) => p.name);
  const fields = new Map<string, Set<string>>();
  const add = (type: string, props: string[]) => fields.set(type, new Set([...(fields.get(type) ?? []), ...props]));
  for (const source of SOURCES) {
    if ('data' in source) {
      add(source.type, names(exported(source.file, source.data)));
      continue;
    }
    const union = exported(source.file, source.union);
    for (const member of union.isUnion() ? union.types : [union]) {
      const type = checker.getTypeOfSymbol(member.getProperty('type')!);
      if (!type.isStringLiteral()) throw new Error(`${source.union}: a member whose type is not a string literal`);
      add(type.value, names(checker.getTypeOfSymbol(member.getProperty('data')!)));
    }
  }
  return fields;
}

/** Field names per `### \`Type\`` heading of docs/EVENTS.md: the first column of its table. */
function fieldsInDoc(): Map<string, Set<string>> {
  const doc = readFileSync(join(ROOT, 'docs/EVENTS.md'), 'utf8');
  const fields = new Map<string, Set<string>>();
  let current: Set<string> | undefined;
  for (const line of doc.split('\n')) {
    const heading = /^### `(\w+)`$/.exec(line);
    if (heading) {
      if (fields.has(heading[1])) throw new Error(`docs/EVENTS.md describes ${heading[1]} twice`);
      fields.set(heading[1], (current = new Set()));
      continue;
    }
    if (/^#{1,2} /.test(line)) current = undefined;
    const row = /^\| `(\w+)` \|/.exec(line);
    if (row && current) current.add(row[1]);
  }
  return fields;
}

describe('docs/EVENTS.md', () => {
  const registered = [...WORKFLOW_EVENT_TYPES, ...TASK_EVENT_TYPES, ...ATTEMPT_EVENT_TYPES, ...SCHEDULE_EVENT_TYPES, ...TOKEN_EVENT_TYPES, WORKFLOWS_EXPIRED];
  const code = fieldsInCode();
  const doc = fieldsInDoc();
  const sorted = (set: Iterable<string> | undefined) => [...(set ?? [])].sort();

  it('describes every registered event type, and no other', () => {
    expect(sorted(doc.keys())).toEqual(sorted(new Set(registered)));
    // The types the code declares are the registered ones (a declared but unregistered type would be skipped on read).
    expect(sorted(code.keys())).toEqual(sorted(new Set(registered)));
  });

  it('lists exactly the fields the code writes for each of them', () => {
    const mismatches = registered
      .map((type) => ({ type, code: sorted(code.get(type)), doc: sorted(doc.get(type)) }))
      .filter((m) => m.code.join() !== m.doc.join());
    expect(mismatches).toEqual([]);
  });
});
