import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { AnswerTooLargeError, startAnswerBudget } from './answer-budget.js';

/**
 * An upper bound on an answer's size: whatever the query limits let through (big stored values,
 * many aliases of a large page), an answer whose JSON would exceed `maxBytes` is replaced by one
 * `PAYLOAD_TOO_LARGE` error (`extensions.limit: "response"`) before anything is serialised.
 * Mutations answer small results, so this never hides the outcome of a write.
 *
 * The queries that read stored values spend the same budget as they read (answer-budget.ts), so
 * an answer too large is refused before all of it sits in memory; one refused that way is
 * replaced the same way.
 */
export function responseBudgetPlugin(maxBytes: number): ApolloServerPlugin<BaseContext> {
  return {
    async requestDidStart() {
      const budget = startAnswerBudget(maxBytes);
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single') return;
          const result = response.body.singleResult;
          if (!budget.exceeded && (result.data == null || !exceeds(result, maxBytes))) return;
          const error = new AnswerTooLargeError(maxBytes);
          response.body.singleResult = { errors: [{ message: error.message, extensions: { code: error.code, ...error.details } }] };
        },
      };
    },
  };
}

/** Whether `value` serialised as JSON would take more than `budget` bytes; stops as soon as it would. */
export function exceeds(value: unknown, budget: number): boolean {
  // Most answers are far below the budget: a cheap upper bound settles those without measuring
  // any string's UTF-8 length; only an answer the bound cannot clear is measured exactly.
  return upperBound(value, budget) > budget && exactlyExceeds(value, budget);
}

/** At least the JSON size of `value` (stops counting once past `limit`). */
function upperBound(value: unknown, limit: number): number {
  let total = 0;
  const walk = (v: unknown): boolean => {
    if (typeof v === 'string') total += 3 * v.length + 2; // at most 3 UTF-8 bytes a UTF-16 unit
    else if (typeof v === 'number') total += 24; // the longest a double prints
    else if (v === null || v === undefined || typeof v !== 'object') total += String(v).length;
    else if (v instanceof Date) total += 26;
    else if (Array.isArray(v)) {
      total += 2 + v.length;
      for (const item of v) if (walk(item)) return true;
    } else {
      total += 2;
      for (const key in v) {
        total += 3 * key.length + 4;
        if (walk((v as Record<string, unknown>)[key])) return true;
      }
    }
    return total > limit;
  };
  walk(value);
  return total;
}

function exactlyExceeds(value: unknown, budget: number): boolean {
  let remaining = budget;
  const walk = (v: unknown): boolean => {
    if (typeof v === 'string') remaining -= Buffer.byteLength(v, 'utf8') + 2;
    else if (v === null || v === undefined || typeof v !== 'object') remaining -= String(v).length;
    else if (v instanceof Date) remaining -= 26;
    else if (Array.isArray(v)) {
      remaining -= 2 + v.length;
      for (const item of v) if (walk(item)) return true;
    } else {
      for (const [key, item] of Object.entries(v)) {
        remaining -= key.length + 4;
        if (walk(item)) return true;
      }
    }
    return remaining < 0;
  };
  return walk(value);
}
