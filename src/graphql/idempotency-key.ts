import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { Field } from '@nestjs/graphql';
import { IsNotEmpty, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { GqlExecutionContext } from '@nestjs/graphql';
import { BadUserInputError } from '../shared/errors.js';
import { PRINTABLE, PRINTABLE_MESSAGE } from './common.types.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const MAX_KEY_LENGTH = 256;

/** The `Idempotency-Key` request header, or null. */
export const IdempotencyKeyHeader = createParamDecorator((_: unknown, ctx: ExecutionContext): string | null => {
  const req = GqlExecutionContext.create(ctx).getContext<{ req?: { headers?: Record<string, string | string[] | undefined> } }>().req;
  const raw = req?.headers?.[IDEMPOTENCY_HEADER];
  if (raw === undefined) return null;
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value;
});

/**
 * The key a dispatch runs under: the input's `idempotencyKey` or the header, which must agree when
 * both are given, without the whitespace around it. Null when neither is.
 */
export function idempotencyKeyOf(input: string | null | undefined, header: string | null): string | null {
  const fromHeader = header === null ? null : header.trim();
  if (fromHeader !== null) {
    if (fromHeader === '' || fromHeader.length > MAX_KEY_LENGTH || !PRINTABLE.test(fromHeader)) {
      throw new BadUserInputError('idempotencyKey', `the Idempotency-Key header must be 1 to ${MAX_KEY_LENGTH} printable characters`);
    }
  }
  // HTTP drops the whitespace around a header value: the field's is dropped too, so a key is the
  // same key whichever way it is sent (a retry may send by header what the first try sent in the field).
  const fromInput = input == null ? null : input.trim();
  if (fromInput === '') throw new BadUserInputError('idempotencyKey', `must be 1 to ${MAX_KEY_LENGTH} printable characters, not only spaces`);
  if (fromInput !== null && fromHeader !== null && fromInput !== fromHeader) {
    throw new BadUserInputError('idempotencyKey', 'differs from the Idempotency-Key header; give one or the same in both');
  }
  return fromInput ?? fromHeader;
}

/** The optional `idempotencyKey` input field of dispatchWorkflow and dispatchTask. */
export function IdempotencyKeyField(what: 'workflow' | 'task'): PropertyDecorator {
  return (target, key) => {
    Field(() => String, {
      nullable: true,
      description: `Optional key (1 to ${MAX_KEY_LENGTH} characters) that makes the dispatch safe to retry: the same key in this app and environment within the retention window (IDEMPOTENCY_WINDOW_MS, default 24 h, counted from the first dispatch) answers with the first dispatch's id and starts no second ${what}. The Idempotency-Key HTTP header does the same. A key reused for another ${what} name within the window is a CONFLICT.`,
    })(target, key);
    IsOptional()(target, key);
    IsString()(target, key);
    IsNotEmpty()(target, key);
    MaxLength(MAX_KEY_LENGTH)(target, key);
    Matches(PRINTABLE, { message: PRINTABLE_MESSAGE })(target, key);
  };
}
