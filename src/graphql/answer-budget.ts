import { type FieldNode, type FragmentDefinitionNode, type GraphQLResolveInfo, Kind, type SelectionNode, type SelectionSetNode } from 'graphql';
import { BatonError } from '../shared/errors.js';
import { type RequestContext, currentRequestContext } from '../shared/request-context.js';

/** What an answer over its budget is told (the whole answer is then replaced by it: response-budget.ts). */
export class AnswerTooLargeError extends BatonError {
  readonly code = 'PAYLOAD_TOO_LARGE';
  readonly details = { limit: 'response' };
  constructor(maxBytes: number) {
    super(`the answer would exceed the response limit of ${maxBytes} bytes; ask for smaller pages or fewer fields`);
  }
}

/**
 * One GraphQL request's room for stored values (MAX_RESPONSE_BYTES), spent while its root fields
 * read, not once the whole answer is built. Checking only the finished answer let a query of
 * many aliases over pages of big stored values (inputs, outputs, history data) read and hold
 * every page first: 40 aliases over 4 MB of inputs aborted a service with a 160 MB heap, 99 over
 * 500 inputs of 256 KiB one with the default 4 GB.
 *
 * The reads of one request take turns, each a turn of the event loop after the one before, so
 * what an earlier read brought in and the answer does not keep (columns not asked for) is let
 * go before the next read; each read first checks that room is left, and charges what the
 * answer keeps of it, as the query selects it.
 */
export class AnswerBudget {
  private left: number;
  private reads = 0;
  private tail: Promise<void> = Promise.resolve();
  /** Set once a read did not fit: the whole answer is replaced by PAYLOAD_TOO_LARGE. */
  exceeded = false;

  /** `held`: what the request holds of the instance's bytes in flight, which the answer's bytes count in too. */
  constructor(
    readonly maxBytes: number,
    private readonly held?: { add(bytes: number): void },
  ) {
    this.left = maxBytes;
  }

  /**
   * Runs `read` in its turn and charges what the answer keeps of its value (the field of `info`),
   * unless `charged`: the read charged its parts itself as it went (a long history).
   */
  read<T>(info: GraphQLResolveInfo | undefined, read: () => T | Promise<T>, charged = false): Promise<T> {
    const previous = this.tail;
    const first = this.reads++ === 0;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    return (async () => {
      try {
        await previous;
        if (!first) await new Promise<void>((resolve) => setImmediate(resolve));
        this.ensureRoom();
        const value = await read();
        if (!charged) this.charge(value, info);
        return value;
      } finally {
        release();
      }
    })();
  }

  /** Bytes the answer has left. */
  get remaining(): number {
    return this.exceeded ? 0 : Math.max(0, this.left);
  }

  /** Throws when the answer has no room left. */
  ensureRoom(): void {
    if (this.exceeded) throw new AnswerTooLargeError(this.maxBytes);
  }

  /**
   * Counts what the answer keeps of `value` without refusing it: for a result that must be
   * answered (what a report recorded), whose size its own claims were already bounded by.
   */
  spend(value: unknown, info: GraphQLResolveInfo | undefined): void {
    const selections = info ? info.fieldNodes.map((f) => f.selectionSet).filter((s): s is SelectionSetNode => s !== undefined) : undefined;
    const spent = answerSize(value, selections && selections.length > 0 ? selections : undefined, info?.fragments ?? {}, Math.max(0, this.left));
    this.left -= spent;
    this.held?.add(spent);
  }

  /** Counts what the answer keeps of `value` (all of it without `info`); throws when it does not fit. */
  charge(value: unknown, info: GraphQLResolveInfo | undefined): void {
    this.ensureRoom();
    const selections = info ? info.fieldNodes.map((f) => f.selectionSet).filter((s): s is SelectionSetNode => s !== undefined) : undefined;
    const spent = answerSize(value, selections && selections.length > 0 ? selections : undefined, info?.fragments ?? {}, this.left);
    this.left -= spent;
    this.held?.add(spent);
    if (this.left < 0) {
      this.exceeded = true;
      throw new AnswerTooLargeError(this.maxBytes);
    }
  }
}

const budgets = new WeakMap<RequestContext, AnswerBudget>();

/** Gives the request being served a budget of `maxBytes` (responseBudgetPlugin, as Apollo starts on it). */
export function startAnswerBudget(maxBytes: number): AnswerBudget {
  const context = currentRequestContext();
  const budget = new AnswerBudget(maxBytes, context?.held);
  if (context) budgets.set(context, budget);
  return budget;
}

/** The budget of the GraphQL request being served, if any. */
export function currentAnswerBudget(): AnswerBudget | undefined {
  const context = currentRequestContext();
  return context ? budgets.get(context) : undefined;
}

/** `read` within the current request's answer budget (see `AnswerBudget.read`); as it is outside a request. */
export async function readWithinAnswer<T>(info: GraphQLResolveInfo | undefined, read: () => T | Promise<T>, charged = false): Promise<T> {
  const budget = currentAnswerBudget();
  return budget ? budget.read(info, read, charged) : read();
}

/** The names of the fields `info`'s field selects directly (fragments included): what a resolver may leave out. */
export function selectedFieldNames(info: GraphQLResolveInfo | undefined): Set<string> | undefined {
  if (!info) return undefined;
  const names = new Set<string>();
  for (const node of info.fieldNodes) {
    if (!node.selectionSet) return undefined;
    for (const field of fieldsOf([node.selectionSet], info.fragments)) names.add(field.name.value);
  }
  return names;
}

/**
 * The fields of selection sets, fragments expanded (whatever their type condition: an upper bound).
 * `keep`, when given, leaves out a selection it refuses (a field, an inline fragment or a spread).
 */
export function fieldsOf(
  sets: readonly SelectionSetNode[],
  fragments: Record<string, FragmentDefinitionNode>,
  keep?: (selection: SelectionNode) => boolean,
  seen = new Set<string>(),
): FieldNode[] {
  const out: FieldNode[] = [];
  for (const set of sets) {
    for (const selection of set.selections) {
      if (keep && !keep(selection)) continue;
      if (selection.kind === Kind.FIELD) out.push(selection);
      else if (selection.kind === Kind.INLINE_FRAGMENT) out.push(...fieldsOf([selection.selectionSet], fragments, keep, seen));
      else {
        const fragment = fragments[selection.name.value];
        if (!fragment || seen.has(fragment.name.value)) continue;
        seen.add(fragment.name.value);
        out.push(...fieldsOf([fragment.selectionSet], fragments, keep, seen));
        seen.delete(fragment.name.value);
      }
    }
  }
  return out;
}

/**
 * About the bytes `value` takes in a JSON answer, as far as `selections` select it (the whole
 * value without them); stops counting once past `limit`.
 */
export function answerSize(value: unknown, selections: readonly SelectionSetNode[] | undefined, fragments: Record<string, FragmentDefinitionNode>, limit: number): number {
  let total = 0;
  const walk = (v: unknown, sets: readonly SelectionSetNode[] | undefined): boolean => {
    if (typeof v === 'string') total += Buffer.byteLength(v, 'utf8') + 2;
    else if (typeof v === 'number') total += 24;
    else if (v === null || v === undefined || typeof v !== 'object') total += 5;
    else if (v instanceof Date) total += 26;
    else if (Array.isArray(v)) {
      total += 2 + v.length;
      for (const item of v) if (walk(item, sets)) return true;
    } else if (sets) {
      total += 2;
      for (const field of fieldsOf(sets, fragments)) {
        total += (field.alias ?? field.name).value.length + 4;
        const child = (v as Record<string, unknown>)[field.name.value];
        if (walk(typeof child === 'function' ? null : child, field.selectionSet ? [field.selectionSet] : undefined)) return true;
      }
    } else {
      total += 2;
      for (const [key, item] of Object.entries(v)) {
        total += key.length + 4;
        if (walk(item, undefined)) return true;
      }
    }
    return total > limit;
  };
  walk(value, selections);
  return total;
}
