/**
 * The happy path of `ValidationPipe` (class-transformer's `plainToInstance`, then class-validator's
 * `validate`), compiled once per input class from the two libraries' metadata.
 *
 * `fastPlainToValidInstance` answers with the instance `plainToInstance` would build, and only when
 * class-validator would find nothing wrong with it; `undefined` otherwise, and for anything it does
 * not reason about, and the caller then runs the original pipe (which words the errors). It never
 * answers for a value the original pipe would change in place (a sparse array, a `__proto__`,
 * `constructor` or `prototype` key) or turn into something other than a copy of plain data.
 *
 * A class is compiled when, with its ancestors, it has: no methods or accessors; no class-transformer
 * metadata other than `@Type()` without discriminator; and only these class-validator rules, without
 * groups, `always` or `validateIf`: `@IsOptional()`, `@ValidateNested()` and the built-in constraints
 * of `BUILT_INS`. Any other class (custom constraints, `@ValidateIf`, `@IsDefined`, `@Transform`,
 * `@Expose`, `@Exclude`, ...) is always left to the original pipe.
 */
import { Type, type TypeMetadata } from 'class-transformer';
import * as transformerStorageModule from 'class-transformer/cjs/storage.js';
import {
  ValidationTypes,
  arrayMaxSize,
  arrayMinSize,
  getMetadataStorage,
  isArray,
  isBoolean,
  isDate,
  isEnum,
  isIn,
  isInt,
  isNotEmpty,
  isNumber,
  isObject,
  matches,
  max,
  maxLength,
  min,
  minLength,
  type IsNumberOptions,
} from 'class-validator';

type ValidatorStorage = ReturnType<typeof getMetadataStorage>;
type ValidationMetadata = ReturnType<ValidatorStorage['getTargetValidationMetadatas']>[number];
type ConstraintMetadata = ReturnType<ValidatorStorage['getTargetValidatorConstraints']>[number];
type Predicate = (value: unknown) => boolean;
type PlainObject = Record<string, unknown>;

interface PropertyPlan {
  readonly name: string;
  /** `@IsOptional()`: null and undefined skip every other rule of the property. */
  readonly optional: boolean;
  readonly checks: readonly Predicate[];
  /** `@ValidateNested()`. */
  readonly nested: boolean;
}

interface ClassPlan {
  readonly cls: new () => object;
  /** What class-validator checks on an instance, by property. */
  readonly properties: readonly PropertyPlan[];
  /** `@Type()` of the class and its ancestors by property, the nearest class's first (as class-transformer finds it). */
  readonly types: ReadonlyMap<string, TypeMetadata>;
}

/** class-transformer's metadata maps, by target class (they are not part of its typed API). */
interface TransformerMaps {
  readonly _typeMetadatas: Map<Function, Map<string, TypeMetadata>>;
  readonly _transformMetadatas: Map<Function, unknown>;
  readonly _exposeMetadatas: Map<Function, unknown>;
  readonly _excludeMetadatas: Map<Function, unknown>;
}

/** Something the compiled path does not reason about: the original pipe takes the whole value. */
const UNSURE = Symbol('unsure');
type Built = unknown;

/**
 * The instance of `metatype` that `plainToInstance(metatype, value)` would build, when class-validator
 * would accept it; `undefined` when it would not, or may not, or when the value is not plain data.
 */
export function fastPlainToValidInstance(metatype: unknown, value: unknown): object | undefined {
  try {
    if (!isPlainObject(value)) return undefined;
    const plan = planFor(metatype);
    if (plan === null) return undefined;
    const instance = build(plan, value);
    return instance !== UNSURE && isValid(plan, instance) ? instance : undefined;
  } catch {
    // A constructor or a type function that throws: the original pipe meets (and reports) it too.
    return undefined;
  }
}

/** Whether inputs of `metatype` can take the compiled path at all (for tests and diagnostics). */
export function hasFastPath(metatype: unknown): boolean {
  return planFor(metatype) !== null;
}

// ---------------------------------------------------------------------------------------------
// Building the instance, as class-transformer's plainToInstance does with its default options

function build(plan: ClassPlan, raw: PlainObject): PlainObject | typeof UNSURE {
  const instance = new plan.cls() as PlainObject;
  for (const key of Object.keys(raw)) {
    // The original pipe deletes these from the caller's value before transforming it.
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') return UNSURE;
    const value = raw[key];
    const type = plan.types.get(key);
    const target = type === undefined ? undefined : type.typeFunction({ newObject: instance, object: raw, property: key });
    // class-transformer does not overwrite what the instance has as a function (field or inherited method).
    if (instance[key] instanceof Function) continue;
    const transformed = type === undefined ? untyped(value) : typedProperty(value, target, type.reflectedType);
    if (transformed === UNSURE) return UNSURE;
    instance[key] = transformed;
  }
  return instance;
}

/** A property with `@Type()`: an array of it takes class-transformer's array type (`design:type`). */
function typedProperty(value: unknown, target: unknown, arrayType: unknown): Built {
  if (Array.isArray(value)) {
    // `new arrayType()` is what class-transformer starts from: an empty array for these.
    if (arrayType !== undefined && arrayType !== Array && arrayType !== Object) return UNSURE;
    return arrayOf(value, (item) => typed(item, target));
  }
  return typed(value, target);
}

function typed(value: unknown, target: unknown): Built {
  if (target === undefined) return untyped(value);
  // Only plain classes: class-transformer converts primitives to String, Number, Boolean, Date, Buffer.
  const plan = planFor(target);
  if (plan === null) return UNSURE;
  if (Array.isArray(value)) return arrayOf(value, (item) => typed(item, target));
  if (value === null || typeof value !== 'object') return typeof value === 'function' ? UNSURE : value;
  if (value instanceof Date) return new Date(value.valueOf());
  return isPlainObject(value) ? build(plan, value) : UNSURE;
}

/** A value without `@Type()`: primitives as they are, plain objects and arrays copied, dates cloned. */
function untyped(value: unknown): Built {
  if (value === null || typeof value !== 'object') return typeof value === 'function' ? UNSURE : value;
  if (Array.isArray(value)) return arrayOf(value, untyped);
  if (value instanceof Date) return new Date(value.valueOf());
  if (!isPlainObject(value)) return UNSURE;
  const copy: PlainObject = {};
  for (const key of Object.keys(value)) {
    if (key === '__proto__' || key === 'constructor' || key === 'prototype') return UNSURE;
    // Keys such as "toString" name what every object inherits: class-transformer leaves them out.
    if (copy[key] instanceof Function) continue;
    const item = untyped(value[key]);
    if (item === UNSURE) return UNSURE;
    copy[key] = item;
  }
  return copy;
}

function arrayOf(array: unknown[], transform: (item: unknown) => Built): unknown[] | typeof UNSURE {
  if (Object.getPrototypeOf(array) !== Array.prototype) return UNSURE;
  const copy: unknown[] = [];
  for (let index = 0; index < array.length; index++) {
    // A gap: the original pipe closes it in the caller's array first.
    if (!(index in array)) return UNSURE;
    const item = transform(array[index]);
    if (item === UNSURE) return UNSURE;
    copy.push(item);
  }
  return copy;
}

function isPlainObject(value: unknown): value is PlainObject {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

// ---------------------------------------------------------------------------------------------
// Validating the instance, as class-validator does with the pipe's options (no groups, no whitelist)

function isValid(plan: ClassPlan, instance: PlainObject): boolean {
  for (const property of plan.properties) {
    const value = instance[property.name];
    if (property.optional && (value === null || value === undefined)) continue;
    for (const check of property.checks) {
      if (!check(value)) return false;
    }
    if (property.nested && !isValidNested(value)) return false;
  }
  return true;
}

/** class-validator's nested validation: undefined passes, arrays item by item, objects by their class. */
function isValidNested(value: unknown): boolean {
  if (value === undefined) return true;
  if (Array.isArray(value)) {
    for (const item of value) {
      if (!isValidNested(item)) return false;
    }
    return true;
  }
  if (value === null || typeof value !== 'object' || value instanceof Set || value instanceof Map) return false;
  const plan = planFor(value.constructor);
  return plan !== null && isValid(plan, value as PlainObject);
}

// ---------------------------------------------------------------------------------------------
// Compiling a class

const plans = new WeakMap<Function, ClassPlan | null>();

function planFor(cls: unknown): ClassPlan | null {
  if (typeof cls !== 'function') return null;
  let plan = plans.get(cls);
  if (plan === undefined) {
    plan = compile(cls);
    plans.set(cls, plan);
  }
  return plan;
}

function compile(cls: Function): ClassPlan | null {
  const transformer = transformerMaps();
  if (transformer === null || !isPlainClass(cls)) return null;

  const lineage = [cls, ...ancestorsOf(cls)];
  const transformerMetadata = [transformer._transformMetadatas, transformer._exposeMetadatas, transformer._excludeMetadatas];
  if (lineage.some((target) => transformerMetadata.some((metadata) => metadata.has(target)))) return null;
  const types = new Map<string, TypeMetadata>();
  for (const target of [...lineage].reverse()) {
    for (const [property, type] of transformer._typeMetadatas.get(target) ?? []) types.set(property, type);
  }
  for (const type of types.values()) {
    if (typeof type.typeFunction !== 'function' || type.options?.discriminator !== undefined) return null;
  }

  const metadatas = getMetadataStorage().getTargetValidationMetadatas(cls, undefined as unknown as string, false, false, undefined);
  const byProperty = new Map<string, ValidationMetadata[]>();
  for (const metadata of metadatas) {
    const list = byProperty.get(metadata.propertyName);
    if (list) list.push(metadata);
    else byProperty.set(metadata.propertyName, [metadata]);
  }
  const properties: PropertyPlan[] = [];
  for (const [name, list] of byProperty) {
    // Read through the instance, a property the prototype chain has would not be the input's.
    if (typeof name !== 'string' || name in cls.prototype) return null;
    let optional = false;
    let nested = false;
    const checks: Predicate[] = [];
    for (const metadata of list) {
      if ((metadata.groups && metadata.groups.length > 0) || metadata.always !== undefined || metadata.validateIf !== undefined) return null;
      if (metadata.type === ValidationTypes.CONDITIONAL_VALIDATION) {
        if (metadata.name !== 'isOptional' || !skipsNil(metadata)) return null;
        optional = true;
      } else if (metadata.type === ValidationTypes.NESTED_VALIDATION) {
        nested = true;
      } else if (metadata.type === ValidationTypes.CUSTOM_VALIDATION) {
        const check = builtInCheck(metadata);
        if (check === undefined) return null;
        checks.push(check);
      } else {
        return null;
      }
    }
    properties.push({ name, optional, checks, nested });
  }
  return { cls: cls as new () => object, properties, types };
}

/** A class whose prototypes (up to Object's) hold nothing but their constructor. */
function isPlainClass(cls: Function): boolean {
  const prototype: unknown = cls.prototype;
  if (typeof prototype !== 'object' || prototype === null || (prototype as { constructor?: unknown }).constructor !== cls) return false;
  for (let proto: object | null = prototype; proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    if (proto === null || Object.getOwnPropertySymbols(proto).length > 0) return false;
    if (Object.getOwnPropertyNames(proto).some((name) => name !== 'constructor')) return false;
  }
  return true;
}

/** The ancestors class-transformer looks its metadata up in. */
function ancestorsOf(cls: Function): Function[] {
  const ancestors: Function[] = [];
  for (let base = Object.getPrototypeOf(cls.prototype.constructor); typeof base?.prototype !== 'undefined'; base = Object.getPrototypeOf(base.prototype.constructor)) {
    ancestors.push(base);
  }
  return ancestors;
}

/** class-validator skips the property's rules for null and undefined, as `@IsOptional()` does. */
function skipsNil(metadata: ValidationMetadata): boolean {
  const condition: unknown = metadata.constraints?.[0];
  if (typeof condition !== 'function') return false;
  const property = metadata.propertyName;
  return condition({ [property]: null }, null) === false && condition({ [property]: undefined }, undefined) === false;
}

/** Whether a regular expression tests the same as `string.match(pattern)` does (no g or y flag, nothing overridden). */
function isPlainRegExp(pattern: unknown): pattern is RegExp {
  return (
    pattern instanceof RegExp &&
    Object.getPrototypeOf(pattern) === RegExp.prototype &&
    !pattern.global &&
    !pattern.sticky &&
    Object.getOwnPropertySymbols(pattern).length === 0 &&
    Object.getOwnPropertyNames(pattern).every((name) => name === 'lastIndex')
  );
}

/**
 * class-validator's built-in constraints by name, as predicates over the value given the decorator's
 * arguments. Each is the library's own function, or a cheaper test that implies it.
 */
const BUILT_INS: Record<string, (args: readonly unknown[]) => Predicate> = {
  // A String object passes isString but fails maxLength and matches: left to class-validator.
  isString: () => (value) => typeof value === 'string',
  isNotEmpty: () => isNotEmpty,
  isBoolean: () => isBoolean,
  isInt: () => isInt,
  isNumber: ([options]) => (value) => isNumber(value, options as IsNumberOptions),
  isDate: () => isDate,
  isArray: () => isArray,
  isObject: () => isObject,
  isIn: ([values]) => (value) => isIn(value, values as readonly unknown[]),
  isEnum: ([entity]) => (value) => isEnum(value, entity),
  min: ([bound]) => (value) => min(value, bound as number),
  max: ([bound]) => (value) => max(value, bound as number),
  arrayMaxSize: ([bound]) => (value) => arrayMaxSize(value, bound as number),
  arrayMinSize: ([bound]) => (value) => arrayMinSize(value, bound as number),
  minLength: ([bound]) => (value) => minLength(value, bound as number),
  // validator.js counts a surrogate pair (and a character with its variation selector) as one: a
  // string no longer than the bound in UTF-16 units is within it; a longer one is counted its way.
  maxLength: ([bound]) => (value) => typeof value === 'string' && ((typeof bound === 'number' && value.length <= bound) || maxLength(value, bound as number)),
  matches: ([pattern, modifiers]) => {
    if (isPlainRegExp(pattern)) return (value) => typeof value === 'string' && pattern.test(value);
    const matchesAny = matches as (value: unknown, pattern: unknown, modifiers: unknown) => boolean;
    return (value) => matchesAny(value, pattern, modifiers);
  },
};

/** The predicate of a built-in constraint, `each` applied; undefined for anything else. */
function builtInCheck(metadata: ValidationMetadata): Predicate | undefined {
  const constraints = getMetadataStorage().getTargetValidatorConstraints(metadata.constraintCls);
  if (constraints.length !== 1 || constraints[0].async) return undefined;
  const constraint = constraints[0];
  const make = Object.hasOwn(BUILT_INS, constraint.name) ? BUILT_INS[constraint.name] : undefined;
  if (make === undefined) return undefined;
  const predicate = make(metadata.constraints ?? []);
  if (!impliesConstraint(predicate, constraint, metadata)) return undefined;
  if (!metadata.each) return predicate;
  return (value) => {
    if (Array.isArray(value)) {
      for (const item of value) {
        if (!predicate(item)) return false;
      }
      return true;
    }
    // class-validator validates the items of a Set or a Map too: not worth reasoning about here.
    if (value instanceof Set || value instanceof Map) return false;
    return predicate(value);
  };
}

/**
 * A check on a sample of values that the constraint registered under a built-in name is the built-in
 * one: wherever the predicate accepts a value, the constraint's own `validate` must accept it too.
 */
function impliesConstraint(predicate: Predicate, constraint: ConstraintMetadata, metadata: ValidationMetadata): boolean {
  const instance = constraint.instance;
  for (const probe of probesFor(metadata.constraints ?? [])) {
    if (!predicate(probe)) continue;
    const args = { targetName: metadata.target instanceof Function ? metadata.target.name : String(metadata.target), property: metadata.propertyName, object: {}, value: probe, constraints: metadata.constraints };
    if (instance.validate(probe, args) !== true) return false;
  }
  return true;
}

const SAMPLES: readonly unknown[] = [
  undefined, null, true, false, 0, -0, 1, -1, 1.5, NaN, Infinity, -Infinity, 2 ** 53,
  '', ' ', 'a', 'v2', 'abc', '\u0000', 'a\nb', '\u007f', '\u0085', '\u{1F600}'.repeat(3), 'a\uFE0F',
  [], ['a'], [1, 2], [null], [{}], {}, { a: 1 }, new Date(0), new Date(NaN),
];

function probesFor(constraints: readonly unknown[]): unknown[] {
  const probes = [...SAMPLES];
  for (const constraint of constraints) {
    if (typeof constraint !== 'number' || !Number.isFinite(constraint)) continue;
    for (const bound of [constraint - 1, constraint, constraint + 1]) {
      probes.push(bound);
      if (bound >= 0 && bound <= 100_000) {
        const length = Math.floor(bound);
        probes.push('x'.repeat(length), '\u{1F600}'.repeat(length), new Array<string>(length).fill('a'));
      }
    }
  }
  return probes;
}

// ---------------------------------------------------------------------------------------------
// class-transformer's metadata

let liveTransformerMaps: TransformerMaps | null | undefined;

function transformerMaps(): TransformerMaps | null {
  if (liveTransformerMaps === undefined) liveTransformerMaps = findTransformerMaps();
  return liveTransformerMaps;
}

/** class-transformer's storage, once a probe shows it is the one its decorators write to. */
function findTransformerMaps(): TransformerMaps | null {
  try {
    const storage = transformerStorageModule.defaultMetadataStorage ?? transformerStorageModule.default?.defaultMetadataStorage;
    if (!storage) return null;
    class Probe {
      probe?: Probe;
    }
    Type(() => Probe)(Probe.prototype, 'probe');
    if (storage.findTypeMetadata(Probe, 'probe')?.typeFunction() !== Probe) return null;
    const maps = storage as unknown as TransformerMaps;
    const all = [maps._typeMetadatas, maps._transformMetadatas, maps._exposeMetadatas, maps._excludeMetadatas];
    return all.every((map) => map instanceof Map) ? maps : null;
  } catch {
    return null;
  }
}
