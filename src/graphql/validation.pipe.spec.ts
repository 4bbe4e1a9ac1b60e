/**
 * The compiled validation path against Nest's ValidationPipe: for every input class of the app with
 * validation rules, a corpus of valid, boundary and invalid values (generated from each class's own
 * rules) must give the same thrown error or a transformed value of the same shape, prototypes
 * included, and leave the caller's value in the same state. The worker protocol and dispatch inputs
 * must actually take the compiled path.
 */
import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import type { ArgumentMetadata, Paramtype } from '@nestjs/common';
import { ARGS_TYPE_METADATA, Field, InputType, Int } from '@nestjs/graphql';
import { Exclude, Expose, Transform, Type } from 'class-transformer';
import * as transformerStorageModule from 'class-transformer/cjs/storage.js';
import {
  IsInt,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  Validate,
  ValidateIf,
  ValidateNested,
  ValidatorConstraint,
  getMetadataStorage,
  registerDecorator,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { AppModule } from '../app.module.js';
import { loadConfig } from '../config/config.js';
import { DispatchTaskInput } from '../tasks/commands/dispatch-task/dispatch-task.js';
import { DispatchWorkflowInput } from '../workflows/commands/dispatch-workflow/dispatch-workflow.js';
import { DecisionHistoryInput, HeartbeatInput, PollWorkInput, ReportWorkInput } from '../workers/worker-protocol.types.js';
import { PRINTABLE } from './common.types.js';
import { hasFastPath } from './fast-validation.js';
import { batonValidationPipe, classicValidationPipe } from './validation.pipe.js';

const transformerStorage = (transformerStorageModule.defaultMetadataStorage ?? transformerStorageModule.default?.defaultMetadataStorage)!;
const validatorStorage = getMetadataStorage();

/** How Nest's GraphQL context hands an `@Args()` value to the pipes. */
const GQL_ARGS = 3 as unknown as Paramtype;

// ---------------------------------------------------------------------------------------------
// The input classes of the app

/** Every class an `@Args()` of a resolver of the app declares, read from the module graph. */
function appArgsClasses(): Set<Function> {
  const modules = new Set<unknown>();
  const providers = new Set<Function>();
  const visit = (entry: unknown): void => {
    if (!entry || modules.has(entry)) return;
    modules.add(entry);
    if (typeof entry === 'object' && 'forwardRef' in entry) return visit((entry as { forwardRef: () => unknown }).forwardRef());
    const dynamic = typeof entry === 'object' ? (entry as { module?: Function; imports?: unknown[]; providers?: unknown[]; controllers?: unknown[] }) : {};
    const moduleClass = typeof entry === 'function' ? entry : dynamic.module;
    const listed = (key: 'imports' | 'providers' | 'controllers'): unknown[] => [
      ...((dynamic[key] as unknown[] | undefined) ?? []),
      ...((moduleClass && (Reflect.getMetadata(key, moduleClass) as unknown[] | undefined)) ?? []),
    ];
    for (const provider of [...listed('providers'), ...listed('controllers')]) {
      const cls = typeof provider === 'function' ? provider : (provider as { useClass?: unknown } | undefined)?.useClass;
      if (typeof cls === 'function') providers.add(cls);
    }
    for (const imported of listed('imports')) visit(imported);
  };
  visit(AppModule.with(loadConfig({})));

  const classes = new Set<Function>();
  for (const provider of providers) {
    for (let proto = provider.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const method of Object.getOwnPropertyNames(proto)) {
        const argsTypes = (Reflect.getMetadata(ARGS_TYPE_METADATA, provider, method) ?? []) as Array<{ index: number; typeFn?: () => unknown }>;
        const paramtypes = (Reflect.getMetadata('design:paramtypes', proto, method) ?? []) as unknown[];
        for (const { index, typeFn } of argsTypes) {
          let type = typeFn?.() ?? paramtypes[index];
          while (Array.isArray(type)) type = type[0];
          if (typeof type === 'function' && ![String, Number, Boolean, Date, Object, Array].includes(type as never)) classes.add(type);
        }
      }
    }
  }
  return classes;
}

function ancestorsOf(cls: Function): Function[] {
  const ancestors: Function[] = [];
  for (let base = Object.getPrototypeOf(cls); base && base !== Function.prototype; base = Object.getPrototypeOf(base)) ancestors.push(base);
  return ancestors;
}

interface Rule {
  name: string;
  constraints: unknown[];
  each: boolean;
}

/** The rules class-validator applies to each property of `cls`, by constraint name. */
function rulesOf(cls: Function): Map<string, Rule[]> {
  const rules = new Map<string, Rule[]>();
  for (const metadata of validatorStorage.getTargetValidationMetadatas(cls, undefined as unknown as string, false, false, undefined)) {
    const name =
      metadata.type === 'customValidation'
        ? (validatorStorage.getTargetValidatorConstraints(metadata.constraintCls)[0]?.name ?? 'custom')
        : metadata.type === 'nestedValidation'
          ? 'validateNested'
          : (metadata.name ?? metadata.type);
    const list = rules.get(metadata.propertyName) ?? [];
    list.push({ name, constraints: metadata.constraints ?? [], each: metadata.each ?? false });
    rules.set(metadata.propertyName, list);
  }
  return rules;
}

function nestedType(cls: Function, property: string): Function {
  const type = transformerStorage.findTypeMetadata(cls, property)?.typeFunction();
  if (typeof type !== 'function') throw new Error(`${cls.name}.${property}: @ValidateNested without @Type`);
  return type;
}

/** Every class the app's inputs reach: the @Args classes, their ancestors and their nested types. */
function reachableClasses(roots: Iterable<Function>): Set<Function> {
  const reached = new Set<Function>();
  const pending = [...roots];
  while (pending.length > 0) {
    const cls = pending.pop()!;
    if (reached.has(cls)) continue;
    reached.add(cls);
    pending.push(...ancestorsOf(cls));
    for (const [property, rules] of rulesOf(cls)) {
      if (rules.some((rule) => rule.name === 'validateNested')) pending.push(nestedType(cls, property));
    }
  }
  return reached;
}

// ---------------------------------------------------------------------------------------------
// The corpus

type Make = () => unknown;
type Case = [label: string, make: Make];

/**
 * Values compared in a full parent only, not again in a parent with its required fields only: a
 * nested value's own rules (its class is compared on its own too) and full-size arrays do not
 * depend on the parent's optional siblings.
 */
const FULL_PARENT_ONLY = new WeakSet<Make>();
const fullParentOnly = (cases: Case[]): Case[] => {
  for (const [, make] of cases) FULL_PARENT_ONLY.add(make);
  return cases;
};

const rule = (rules: Rule[], name: string) => rules.find((r) => r.name === name);
const has = (rules: Rule[], name: string) => rules.some((r) => r.name === name);

/** A value every rule of the property accepts. */
function sample(cls: Function, property: string, rules: Rule[]): unknown {
  if (has(rules, 'validateNested')) {
    const type = nestedType(cls, property);
    return has(rules, 'isArray') ? [full(type), minimal(type)] : full(type);
  }
  if (has(rules, 'isArray')) return ['Item_v1', 'Other'];
  const matches = rule(rules, 'matches');
  if (has(rules, 'isString') || matches) {
    if (!matches) return 'sample text';
    const source = (matches.constraints[0] as RegExp).source;
    const known: Record<string, string> = { [PRINTABLE.source]: 'printable ✓ text', '^v\\d+$': 'v2', '^[A-Za-z0-9_-]+$': 'poll-7_Ab' };
    if (!(source in known)) throw new Error(`${cls.name}.${property}: give the spec a sample for /${source}/`);
    return known[source];
  }
  const low = rule(rules, 'min')?.constraints[0] as number | undefined;
  const high = rule(rules, 'max')?.constraints[0] as number | undefined;
  if (has(rules, 'isInt')) return Math.min(high ?? Infinity, Math.max(low ?? 0, 7));
  if (has(rules, 'isNumber')) return Math.min(high ?? Infinity, (low ?? 0) + 1.5);
  if (has(rules, 'isBoolean')) return true;
  if (has(rules, 'isDate')) return new Date(1_700_000_000_000);
  const isEnum = rule(rules, 'isEnum');
  if (isEnum) return Object.values(isEnum.constraints[0] as object)[0];
  const isIn = rule(rules, 'isIn');
  if (isIn) return (isIn.constraints[0] as unknown[])[0];
  if (rules.every((r) => r.name === 'isOptional')) return 'anything';
  throw new Error(`${cls.name}.${property}: give the spec a sample for ${rules.map((r) => r.name).join(', ')}`);
}

function full(cls: Function): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const [property, rules] of rulesOf(cls)) value[property] = sample(cls, property, rules);
  return value;
}

function minimal(cls: Function): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  for (const [property, rules] of rulesOf(cls)) {
    if (!has(rules, 'isOptional')) value[property] = sample(cls, property, rules);
  }
  return value;
}

const CONTROL_CHARACTERS = ['\u0000', '\n', '\t', '\r', '\u001b', '\u001f', '\u007f', '\u0080', '\u0085', '\u009f'];
const PRINTABLE_EDGES = ['\u00a0', '\u2028', '\uFEFF', 'é', '\u{1F600}'];

/** Values for one property: each rule's boundaries on both sides, and wrong types. */
function valuesFor(cls: Function, property: string, rules: Rule[], depth: number): Case[] {
  const cases: Case[] = [
    ['undefined', () => undefined],
    ['null', () => null],
    ['0', () => 0],
    ['-1', () => -1],
    ['1.5', () => 1.5],
    ['NaN', () => NaN],
    ['Infinity', () => Infinity],
    ['true', () => true],
    ['false', () => false],
    ['""', () => ''],
    ['" "', () => ' '],
    ['a string', () => 'text'],
    ['a String object', () => new String('text')],
    ['[]', () => []],
    ['["x"]', () => ['x']],
    ['[1]', () => [1]],
    ['{}', () => ({})],
    ['{ a: 1 }', () => ({ a: 1 })],
    ['a null-prototype object', () => Object.assign(Object.create(null), { a: 1 })],
    ['a date', () => new Date(0)],
    ['an invalid date', () => new Date(NaN)],
    ['an ISO string', () => '2024-01-01T00:00:00.000Z'],
  ];
  const valid = () => sample(cls, property, rules);
  const validString = typeof valid() === 'string' ? (valid() as string) : 'text';
  for (const r of rules) {
    const [bound] = r.constraints as [number];
    switch (r.name) {
      case 'maxLength':
        cases.push(
          [`${bound} characters`, () => 'a'.repeat(bound)],
          [`${bound + 1} characters`, () => 'a'.repeat(bound + 1)],
          [`${bound} astral characters (${2 * bound} UTF-16 units)`, () => '\u{1F600}'.repeat(bound)],
          [`${bound + 1} astral characters`, () => '\u{1F600}'.repeat(bound + 1)],
          [`${bound} characters with variation selectors`, () => '\u2764\uFE0F'.repeat(bound)],
          [`${bound} characters and a lone surrogate`, () => 'a'.repeat(bound) + '\uD800'],
        );
        break;
      case 'matches':
        for (const c of CONTROL_CHARACTERS) cases.push([`with ${JSON.stringify(c)}`, () => `${validString}${c}x`]);
        for (const c of PRINTABLE_EDGES) cases.push([`with ${JSON.stringify(c)}`, () => `${validString}${c}`]);
        for (const v of ['v', 'v0', 'v123456789', 'v1234567890', 'V2', 'v2\n', ' v2', 'v-1', 'v\u0661', 'v2 ']) cases.push([JSON.stringify(v), () => v]);
        break;
      case 'min':
      case 'max':
        for (const v of [bound - 1, bound - 0.5, bound, bound + 0.5, bound + 1]) cases.push([`${v}`, () => v]);
        cases.push(['-0', () => -0], ['2^31', () => 2 ** 31], ['2^53 + 2', () => 2 ** 53 + 2]);
        break;
      case 'isEnum':
        for (const v of Object.values(r.constraints[0] as object)) {
          cases.push([JSON.stringify(v), () => v]);
          if (typeof v === 'string') cases.push([JSON.stringify(v.toLowerCase() + 'x'), () => v.toLowerCase() + 'x']);
        }
        break;
      case 'arrayMaxSize': {
        // The full-size arrays once, where the class is an input of its own: not again in each parent.
        if (depth > 0) break;
        const item = () => (valid() as unknown[])[0];
        cases.push(...fullParentOnly([[`${bound} items`, () => Array.from({ length: bound }, item)], [`${bound + 1} items`, () => Array.from({ length: bound + 1 }, item)]]));
        break;
      }
      case 'isString':
        if (r.each) {
          cases.push(
            ['strings and a number', () => ['a', 1, 'b']],
            ['strings and null', () => ['a', null]],
            ['a nested array of strings', () => [['a']]],
            ['a sparse array of strings', () => ['a', , 'b']], // eslint-disable-line no-sparse-arrays
            ['many strings', () => Array.from({ length: 50 }, (_, i) => `w${i}`)],
          );
        }
        break;
    }
  }
  if (has(rules, 'validateNested')) {
    const type = nestedType(cls, property);
    const inner = variants(type, 1);
    if (has(rules, 'isArray')) {
      for (const [label, make] of inner) cases.push(...fullParentOnly([[`[ok, ${label}, ok]`, () => [full(type), make(), minimal(type)]]]));
      cases.push(
        ['[null]', () => [null]],
        ['[ok, null]', () => [full(type), null]],
        ['[ok, undefined]', () => [full(type), undefined]],
        ['["text"]', () => ['text']],
        ['[[ok]]', () => [[full(type)]]],
        ['[ok, date]', () => [full(type), new Date(0)]],
        ['a sparse [ , ok]', () => [, full(type)]], // eslint-disable-line no-sparse-arrays
        ['a lone object', () => full(type)],
        ['a null-prototype item', () => [nullPrototype(full(type))]],
      );
    } else {
      for (const [label, make] of inner) cases.push(...fullParentOnly([[`{ ${label} }`, make]]));
      cases.push(['[ok]', () => [full(type)]], ['[]', () => []], ['a null-prototype object', () => nullPrototype(full(type))]);
    }
  }
  return cases;
}

/** Unknown keys, as class-transformer copies (or skips) them. */
const EXTRA_KEYS: Case[] = [
  ['extra string', () => ({ extra: 'x' })],
  ['extra number', () => ({ extra: 1 })],
  ['extra null', () => ({ extra: null })],
  ['extra undefined', () => ({ extra: undefined })],
  ['extra nested object', () => ({ extra: { a: 1, b: [1, { c: 2 }], d: null } })],
  ['extra array', () => ({ extra: [1, 'a', null, [2]] })],
  ['extra date', () => ({ extra: new Date(5) })],
  ['extra null-prototype object', () => ({ extra: Object.assign(Object.create(null), { a: 1 }) })],
  ['extra sparse array', () => ({ extra: [1, , 2] })], // eslint-disable-line no-sparse-arrays
  ['extra function', () => ({ extra: () => 1 })],
  ['extra map', () => ({ extra: new Map([[1, 2]]) })],
  ['extra set', () => ({ extra: new Set([1]) })],
  ['extra buffer', () => ({ extra: Buffer.from('ab') })],
  ['extra typed array', () => ({ extra: new Uint8Array(2) })],
  ['extra bigint', () => ({ extra: 10n })],
  ['key toString', () => ({ toString: 'x' })],
  ['key hasOwnProperty', () => ({ hasOwnProperty: 1 })],
  ['key valueOf object', () => ({ valueOf: { a: 1 } })],
  ['key then', () => ({ then: 'x' })],
  ['own key __proto__', () => JSON.parse('{"__proto__": {"polluted": 1}}')],
  ['key constructor', () => JSON.parse('{"constructor": {"prototype": {"polluted": 1}}}')],
  ['key prototype', () => ({ prototype: 1 })],
  ['nested key __proto__', () => ({ extra: JSON.parse('{"__proto__": 1, "a": 2}') })],
  ['nested key toString', () => ({ extra: { toString: 1, a: 2 } })],
];

/** Values of `cls` (as a property at depth > 0): valid ones, each property varied, unknown keys. */
function variants(cls: Function, depth: number): Case[] {
  const cases: Case[] = [
    ['all fields', () => full(cls)],
    ['required fields only', () => minimal(cls)],
  ];
  for (const [property, rules] of rulesOf(cls)) {
    cases.push([`without ${property}`, () => without(full(cls), property)]);
    const values = valuesFor(cls, property, rules, depth);
    // Deeper down, the boundaries of each nested property, not every combination again.
    for (const [label, make] of depth === 0 ? values : values.filter(([l]) => !l.startsWith('[ok, {') && !l.startsWith('{ {'))) {
      cases.push([`${property}: ${label}`, () => ({ ...full(cls), [property]: make() })]);
      if (depth === 0 && !FULL_PARENT_ONLY.has(make)) cases.push([`${property} (required only): ${label}`, () => ({ ...minimal(cls), [property]: make() })]);
    }
  }
  for (const [label, make] of EXTRA_KEYS) {
    cases.push([label, () => withOwnKeys(full(cls), make() as object)]);
  }
  return cases;
}

/** Adds the own keys of `keys` as data properties (`__proto__` too, as JSON.parse makes it). */
function withOwnKeys(value: Record<string, unknown>, keys: object): Record<string, unknown> {
  for (const key of Object.keys(keys)) {
    Object.defineProperty(value, key, { value: (keys as Record<string, unknown>)[key], enumerable: true, writable: true, configurable: true });
  }
  return value;
}

function without(value: Record<string, unknown>, property: string): Record<string, unknown> {
  delete value[property];
  return value;
}

/** graphql-js builds the input objects of query literals without a prototype. */
function nullPrototype(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(nullPrototype);
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value;
  const copy = Object.create(null) as Record<string, unknown>;
  for (const [key, item] of Object.entries(value)) copy[key] = nullPrototype(item);
  return copy;
}

function topLevelCases(cls: Function): Case[] {
  return [
    ...variants(cls, 0),
    ['null-prototype objects throughout', () => nullPrototype(full(cls))],
    ['null-prototype, required fields only', () => nullPrototype(minimal(cls))],
    ['undefined', () => undefined],
    ['null', () => null],
    ['a string', () => 'text'],
    ['a number', () => 5],
    ['an array', () => [full(cls)]],
    ['a buffer', () => Buffer.from('{}')],
    ['a date', () => new Date(0)],
  ];
}

// ---------------------------------------------------------------------------------------------
// Comparing

type Outcome = { value: unknown; error?: undefined } | { error: unknown; value?: undefined };

async function outcome(run: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { value: await run() };
  } catch (error) {
    return { error };
  }
}

/** Where `actual` differs from `expected` (prototypes, own keys in order, values), or undefined. */
function difference(actual: unknown, expected: unknown, path = '$', seen = new Set<unknown>()): string | undefined {
  if (typeof expected === 'function') return typeof actual === 'function' ? undefined : `${path}: not a function`;
  if (expected === null || typeof expected !== 'object') {
    return Object.is(actual, expected) ? undefined : `${path}: ${show(actual)} instead of ${show(expected)}`;
  }
  if (actual === null || typeof actual !== 'object') return `${path}: ${show(actual)} instead of an object`;
  if (seen.has(expected)) return undefined;
  seen.add(expected);
  if (Object.getPrototypeOf(actual) !== Object.getPrototypeOf(expected)) {
    return `${path}: prototype ${Object.getPrototypeOf(actual)?.constructor?.name} instead of ${Object.getPrototypeOf(expected)?.constructor?.name}`;
  }
  if (expected instanceof Date && !Object.is((actual as Date).getTime(), expected.getTime())) return `${path}: another date`;
  if (expected instanceof String && String(actual) !== String(expected)) return `${path}: another String`;
  if (expected instanceof Map || expected instanceof Set) {
    return difference([...(actual as Map<unknown, unknown>).entries()], [...expected.entries()], `${path}.entries`, seen);
  }
  const actualKeys = Reflect.ownKeys(actual).map(String);
  const expectedKeys = Reflect.ownKeys(expected).map(String);
  if (actualKeys.join() !== expectedKeys.join()) return `${path}: keys [${actualKeys}] instead of [${expectedKeys}]`;
  for (const key of Reflect.ownKeys(expected)) {
    const a = Object.getOwnPropertyDescriptor(actual, key)!;
    const e = Object.getOwnPropertyDescriptor(expected, key)!;
    if (a.enumerable !== e.enumerable || a.writable !== e.writable || ('value' in a) !== ('value' in e)) return `${path}.${String(key)}: another descriptor`;
    const found = difference(a.value, e.value, `${path}.${String(key)}`, seen);
    if (found) return found;
  }
  return undefined;
}

/** The paths of `output` that hold an object of `input` itself rather than a copy. */
function sharedPaths(output: unknown, input: unknown): string[] {
  const objects = new Set<unknown>();
  const collect = (value: unknown): void => {
    if (value === null || typeof value !== 'object' || objects.has(value)) return;
    objects.add(value);
    for (const key of Reflect.ownKeys(value)) collect(Object.getOwnPropertyDescriptor(value, key)?.value);
  };
  collect(input);
  const paths: string[] = [];
  const seen = new Set<unknown>();
  const walk = (value: unknown, path: string): void => {
    if (value === null || typeof value !== 'object' || seen.has(value)) return;
    seen.add(value);
    if (objects.has(value)) paths.push(path);
    for (const key of Reflect.ownKeys(value)) walk(Object.getOwnPropertyDescriptor(value, key)?.value, `${path}.${String(key)}`);
  };
  walk(output, '$');
  return paths;
}

function show(value: unknown): string {
  try {
    return typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : String(value);
  } catch {
    return typeof value;
  }
}

function errorDifference(actual: unknown, expected: unknown): string | undefined {
  if (!(expected instanceof Error)) return `the original pipe threw ${show(expected)}`;
  if (!(actual instanceof Error)) return `threw ${show(actual)} instead of ${expected.constructor.name}`;
  if (actual.constructor !== expected.constructor) return `threw ${actual.constructor.name} instead of ${expected.constructor.name}`;
  if (actual.message !== expected.message) return `message ${JSON.stringify(actual.message)} instead of ${JSON.stringify(expected.message)}`;
  return difference({ ...actual }, { ...expected }, 'error');
}

const classic = classicValidationPipe();
const fast = batonValidationPipe();

/** Runs both pipes on fresh copies of one case; the differences found (none expected). */
async function compare(metadata: ArgumentMetadata, label: string, make: Make): Promise<string[]> {
  const classicInput = make();
  const fastInput = make();
  const expected = await outcome(() => classic.transform(classicInput, metadata));
  const actual = await outcome(() => fast.transform(fastInput, metadata));
  const found: string[] = [];
  const where = `${metadata.metatype?.name} ${label}`;
  if ('error' in expected && expected.error !== undefined) {
    if (!('error' in actual) || actual.error === undefined) found.push(`${where}: answered where the original pipe threw ${show((expected.error as Error).message)}`);
    else {
      const d = errorDifference(actual.error, expected.error);
      if (d) found.push(`${where}: ${d}`);
    }
  } else if ('error' in actual && actual.error !== undefined) {
    found.push(`${where}: threw ${show((actual.error as Error).message)} where the original pipe answered`);
  } else {
    const d = difference(actual.value, expected.value);
    if (d) found.push(`${where}: ${d}`);
    // class-transformer copies: whatever of the caller's value the result still holds, it holds the same.
    const shared = sharedPaths(actual.value, fastInput).join();
    const expectedShared = sharedPaths(expected.value, classicInput).join();
    if (shared !== expectedShared) found.push(`${where}: shares [${shared}] with the input instead of [${expectedShared}]`);
  }
  // The original pipe changes the caller's value in place (gaps closed, prototype keys deleted).
  const input = difference(fastInput, classicInput, 'input');
  if (input) found.push(`${where}: ${input}`);
  return found;
}

// ---------------------------------------------------------------------------------------------
// Classes of this spec: what the compiled path does not reason about, and edge cases it does

@ValidatorConstraint({ name: 'evenLength' })
class EvenLength implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && value.length % 2 === 0;
  }
}

/** A constraint that calls itself isString and is not class-validator's. */
function FakeIsString(): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({ name: 'isString', target: target.constructor, propertyName: propertyName as string, validator: { validate: (value: unknown) => value === 'only this' } });
}

@InputType('SpecCustomConstraintInput')
class CustomConstraintInput {
  @Field() @IsString() @Validate(EvenLength) name: string;
}
@InputType('SpecFakeIsStringInput')
class FakeIsStringInput {
  @Field() @FakeIsString() name: string;
}
@InputType('SpecValidateIfInput')
class ValidateIfInput {
  @Field() @ValidateIf((o: { kind?: string }) => o.kind === 'x') @IsString() name: string;
  @Field() @IsOptional() @IsString() kind?: string;
}
@InputType('SpecGroupsInput')
class GroupsInput {
  @Field() @IsString({ groups: ['admin'] }) name: string;
}
@InputType('SpecAlwaysInput')
class AlwaysInput {
  @Field() @IsString({ always: true }) name: string;
}
@InputType('SpecTransformInput')
class TransformInput {
  @Field() @Transform(({ value }) => (typeof value === 'string' ? value.trim() : value)) @IsString() @MaxLength(3) name: string;
}
@InputType('SpecExposeInput')
class ExposeInput {
  @Field() @Expose({ name: 'label' }) @IsString() name: string;
}
@InputType('SpecExcludeInput')
class ExcludeInput {
  @Field() @IsString() name: string;
  @Exclude() secret?: string;
}
@InputType('SpecMethodInput')
class MethodInput {
  @Field() @IsString() name: string;
  shout(): string {
    return this.name.toUpperCase();
  }
}
@InputType('SpecEachInput')
class EachInput {
  @Field(() => [String]) @IsString({ each: true }) @MaxLength(3, { each: true }) words: string[] | string;
  @Field(() => [Int]) @IsOptional() @IsInt({ each: true }) @Min(0, { each: true }) counts?: number[] | number;
}
@InputType('SpecDefaultsChild')
class DefaultsChild {
  @Field() @IsInt() @Min(1) @Max(9) level: number = 5;
}
@InputType('SpecSetInput')
class SetInput {
  @Field(() => [DefaultsChild]) @ValidateNested({ each: true }) @Type(() => DefaultsChild) items: Set<DefaultsChild>;
}
@InputType('SpecDefaultsInput')
class DefaultsInput {
  @Field() @IsOptional() @IsString() label?: string = 'default label';
  @Field() @IsOptional() @IsInt() count: number = 10;
  callback = (): number => 1;
  @Field(() => DefaultsChild) @IsOptional() @ValidateNested() @Type(() => DefaultsChild) child?: DefaultsChild = new DefaultsChild();
}
@InputType('SpecDefaultsDerived')
class DefaultsDerived extends DefaultsInput {
  @Field() @IsString() extra: string = 'extra';
}

const SPEC_CLASSES = new Set<Function>([
  SetInput,
  EachInput,
  CustomConstraintInput,
  FakeIsStringInput,
  ValidateIfInput,
  GroupsInput,
  AlwaysInput,
  TransformInput,
  ExposeInput,
  ExcludeInput,
  MethodInput,
  DefaultsChild,
  DefaultsInput,
  DefaultsDerived,
]);

// ---------------------------------------------------------------------------------------------

const argsClasses = appArgsClasses();

/** The classes class-validator holds rules of (this spec's own, declared above, left out). */
function classesWithRules(): Function[] {
  const targets = (validatorStorage as unknown as { validationMetadatas: Map<unknown, unknown> }).validationMetadatas.keys();
  return [...targets].filter((target): target is Function => typeof target === 'function' && !SPEC_CLASSES.has(target));
}

/** The @Args classes with what they reach, and every other class with rules (compared on their own too). */
const classes = [...new Set([...reachableClasses(argsClasses), ...classesWithRules()])].filter((cls) => rulesOf(cls).size > 0);

describe('the compiled validation path', () => {
  it('finds the input classes of the app, and every class with validation rules among them', () => {
    expect([...argsClasses].map((cls) => cls.name)).toEqual(
      expect.arrayContaining(['DispatchWorkflowInput', 'DispatchTaskInput', 'PollWorkInput', 'ReportWorkInput', 'HeartbeatInput', 'DecisionHistoryInput', 'AppScopedIdArgs']),
    );
    const withRules = classesWithRules();
    expect(withRules.length).toBeGreaterThan(20);
    const tested = new Set(classes);
    expect(withRules.filter((cls) => !tested.has(cls)).map((cls) => cls.name)).toEqual([]);
    expect([...argsClasses].filter((cls) => rulesOf(cls).size > 0 && !tested.has(cls)).map((cls) => cls.name)).toEqual([]);
    // Every class with rules is reached by the pipe (as an @Args class, an ancestor or a nested
    // type): a class whose rules were never applied (an argument without @ValidateNested and
    // @Type, as the list queries' filters once were) fails here.
    const reached = reachableClasses(argsClasses);
    expect(withRules.filter((cls) => !reached.has(cls)).map((cls) => cls.name)).toEqual([]);
  });

  it.each(classes.map((cls) => [cls.name, cls] as const))('%s: the same answer as ValidationPipe on every value of the corpus', async (_name, cls) => {
    const metadata: ArgumentMetadata = { type: GQL_ARGS, metatype: cls as ArgumentMetadata['metatype'], data: argsClasses.has(cls) ? undefined : 'input' };
    const found: string[] = [];
    const cases = topLevelCases(cls);
    const before = { ...fast.counts };
    for (const [label, make] of cases) found.push(...(await compare(metadata, label, make)));
    expect(found).toEqual([]);
    expect(cases.length).toBeGreaterThan(40);
    // Every class of the app is compiled today, and its valid values answered without the original pipe.
    expect(hasFastPath(cls)).toBe(true);
    expect(fast.counts.fast - before.fast).toBeGreaterThan(2);
    expect(fast.counts.fallback - before.fallback).toBeGreaterThan(10);
  });

  it.each([DispatchWorkflowInput, DispatchTaskInput, PollWorkInput, ReportWorkInput, HeartbeatInput, DecisionHistoryInput].map((cls) => [cls.name, cls] as const))(
    '%s takes the compiled path when valid, and the original pipe when not',
    async (_name, cls) => {
      expect(hasFastPath(cls)).toBe(true);
      const metadata: ArgumentMetadata = { type: GQL_ARGS, metatype: cls, data: 'input' };
      const pipe = batonValidationPipe();
      for (const make of [() => full(cls), () => minimal(cls), () => nullPrototype(full(cls))]) {
        const before = { ...pipe.counts };
        const instance = await pipe.transform(make(), metadata);
        expect(instance).toBeInstanceOf(cls);
        expect(pipe.counts).toEqual({ fast: before.fast + 1, fallback: before.fallback });
      }
      await expect(pipe.transform({ ...full(cls), appId: '' }, metadata)).rejects.toMatchObject({ details: { field: 'appId' } });
      expect(pipe.counts.fallback).toBe(1);
    },
  );

  it('builds nested instances for @Type fields, in a reportWork input with every kind of outcome', async () => {
    const pipe = batonValidationPipe();
    const input = {
      appId: 'demo',
      environment: 'dev',
      workerId: 'w-1',
      decisions: [{ ref: 'r1', decisionId: 'd1', commands: '[]' }, { ref: 'r2', decisionId: 'd2', failureCode: 'NON_DETERMINISTIC', failureMessage: 'boom', historyPosition: 3 }],
      tasks: [{ ref: 'r3', attemptId: 'a3', result: '1' }, { ref: 'r4', attemptId: 'a4', error: { message: 'failed', nonRetryable: true } }],
      claim: { workflows: ['Flow_v1'], tasks: [{ name: 'send', retry: { maxAttempts: 3, initialDelayMs: 10, backoffFactor: 2, maxDelayMs: 100 } }], maxItems: 4 },
    };
    // A JSON copy: structuredClone is the outer realm's under jest, and its objects are not plain here.
    const copy = (value: unknown): unknown => JSON.parse(JSON.stringify(value));
    const result = (await pipe.transform(copy(input), { type: GQL_ARGS, metatype: ReportWorkInput, data: 'input' })) as ReportWorkInput;
    expect(pipe.counts).toEqual({ fast: 1, fallback: 0 });
    expect(difference(result, await classic.transform(copy(input), { type: GQL_ARGS, metatype: ReportWorkInput, data: 'input' }))).toBeUndefined();
    expect(result.tasks?.[1].error?.constructor.name).toBe('TaskErrorInput');
    expect(result.claim?.tasks[0].retry?.constructor.name).toBe('RetryPolicyInput');
  });

  it('leaves scalars, custom decorators and class-less values to the original pipe', async () => {
    const cases: Array<[ArgumentMetadata, unknown]> = [
      [{ type: 'param', metatype: String, data: 'name' }, 42],
      [{ type: 'query', metatype: Number, data: 'n' }, '42'],
      [{ type: 'query', metatype: Boolean, data: 'b' }, 'true'],
      [{ type: GQL_ARGS, metatype: String, data: 'id' }, 'x'],
      [{ type: 'custom', metatype: DispatchWorkflowInput, data: undefined }, { appId: 1 }],
      [{ type: GQL_ARGS, metatype: undefined, data: 'x' }, { a: 1 }],
      [{ type: GQL_ARGS, metatype: Object, data: 'x' }, { a: 1 }],
    ];
    for (const [metadata, value] of cases) {
      expect(difference(await fast.transform(value, metadata), await classic.transform(value, metadata))).toBeUndefined();
    }
  });
});

describe('classes of this spec: what the compiled path leaves to the original pipe, and what it keeps', () => {
  const cases: Array<[Function, boolean, Make[]]> = [
    [CustomConstraintInput, false, [() => ({ name: 'ab' }), () => ({ name: 'abc' })]],
    [FakeIsStringInput, false, [() => ({ name: 'only this' }), () => ({ name: 'other' })]],
    [ValidateIfInput, false, [() => ({ name: 1 }), () => ({ name: 1, kind: 'x' }), () => ({ name: 'a', kind: 'x' })]],
    [GroupsInput, false, [() => ({ name: 'a' }), () => ({ name: 1 })]],
    [AlwaysInput, false, [() => ({ name: 'a' }), () => ({ name: 1 })]],
    [TransformInput, false, [() => ({ name: ' abc ' }), () => ({ name: 'abcd' })]],
    [ExposeInput, false, [() => ({ label: 'a' }), () => ({ name: 'a' })]],
    [ExcludeInput, false, [() => ({ name: 'a', secret: 's' })]],
    [MethodInput, false, [() => ({ name: 'a' }), () => ({ name: 'a', shout: 'x' })]],
    [
      EachInput,
      true,
      [
        () => ({ words: ['a', 'abc'] }),
        () => ({ words: 'abc' }),
        () => ({ words: 'abcd' }),
        () => ({ words: 3 }),
        () => ({ words: [] }),
        () => ({ words: ['a', 'abcd'] }),
        () => ({ words: ['a', 1] }),
        () => ({ words: new Set(['a']) }),
        () => ({ words: ['a'], counts: [0, 2] }),
        () => ({ words: ['a'], counts: 4 }),
        () => ({ words: ['a'], counts: [-1] }),
        () => ({ words: ['a'], counts: [1.5] }),
        () => ({ words: ['a'], counts: null }),
      ],
    ],
    // design:type Set: class-transformer fills a Set from the array; left to it.
    [SetInput, true, [() => ({ items: [{ level: 2 }] }), () => ({ items: [{ level: 0 }] }), () => ({ items: { level: 2 } })]],
    [
      DefaultsInput,
      true,
      [() => ({}), () => ({ label: 'x' }), () => ({ label: undefined }), () => ({ count: null }), () => ({ callback: 'x' }), () => ({ child: { level: 3 } }), () => ({ child: {} }), () => ({ child: { level: 0 } })],
    ],
    [DefaultsDerived, true, [() => ({}), () => ({ extra: 'e', count: 2 }), () => ({ extra: 1 }), () => ({ child: null, extra: 'x' })]],
  ];

  it.each(cases.map(([cls, compiled, makes]) => [cls.name, cls, compiled, makes] as const))('%s', async (_name, cls, compiled, makes) => {
    expect(hasFastPath(cls)).toBe(compiled);
    const found: string[] = [];
    for (const make of makes) found.push(...(await compare({ type: GQL_ARGS, metatype: cls as ArgumentMetadata['metatype'], data: 'input' }, JSON.stringify(make()), make)));
    expect(found).toEqual([]);
  });

  it('keeps the field initializers, as class-transformer does', async () => {
    const value = (await fast.transform({ extra: 'e' }, { type: GQL_ARGS, metatype: DefaultsDerived, data: 'input' })) as DefaultsDerived;
    expect(value).toBeInstanceOf(DefaultsDerived);
    expect(value.child).toBeInstanceOf(DefaultsChild);
    expect({ label: value.label, count: value.count, extra: value.extra }).toEqual({ label: 'default label', count: 10, extra: 'e' });
  });
});
