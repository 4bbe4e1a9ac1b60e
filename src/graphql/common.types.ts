import { Type } from '@nestjs/common';
import { ArgsType, Field, ID, InputType, Int, ObjectType } from '@nestjs/graphql';
import { IsInt, IsNotEmpty, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { QUERY_COUNT_CAP } from '../event-store/read-model-db.js';
import { BadUserInputError } from '../shared/errors.js';
import { canonicalId } from '../shared/ids.js';

export { PRINTABLE } from '../shared/printable.js';
import { PRINTABLE } from '../shared/printable.js';
/** What a value that fails `PRINTABLE` is told. */
export const PRINTABLE_MESSAGE = 'must not contain control characters or unpaired surrogates';

/** Fields every input (and query arguments) carry: which application, in which environment. */
@InputType({ isAbstract: true })
@ArgsType()
export abstract class AppScopedInput {
  @Field({ description: 'Identifier of the application (1–128 characters, no control characters).' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(128)
  @Matches(PRINTABLE, { message: PRINTABLE_MESSAGE })
  appId: string;

  @Field({ description: 'Environment of the application, a free string such as "production" (1–128 characters).' })
  @IsString()
  @IsNotEmpty()
  @MaxLength(128)
  @Matches(PRINTABLE, { message: PRINTABLE_MESSAGE })
  environment: string;
}

/** A task or workflow name: 1–256 characters, no control characters. */
export function NameField(description: string): PropertyDecorator {
  return (target, key) => {
    Field({ description })(target, key);
    IsString()(target, key);
    IsNotEmpty()(target, key);
    MaxLength(256)(target, key);
    Matches(PRINTABLE, { message: PRINTABLE_MESSAGE })(target, key);
  };
}

/** A string that must hold a JSON array (checked, with the field named, when parsed). */
export function JsonArrayField(description: string): PropertyDecorator {
  return (target, key) => {
    Field({ description })(target, key);
    IsString()(target, key);
  };
}

export function OptionalTagField(description: string): PropertyDecorator {
  return (target, key) => {
    Field(() => String, { nullable: true, description })(target, key);
    IsOptional()(target, key);
    IsString()(target, key);
    IsNotEmpty()(target, key);
    MaxLength(256)(target, key);
    Matches(PRINTABLE, { message: PRINTABLE_MESSAGE })(target, key);
  };
}

@ObjectType({ description: 'Where a page of results ends.' })
export class PageInfo {
  @Field(() => String, {
    nullable: true,
    description: 'Cursor where this page ends (its last item, or the last row searched when a filtered page came back short); pass it as `after` for the next page.',
  })
  endCursor: string | null;

  @Field({
    description:
      'Whether more items may follow this page. A page searches a bounded number of rows when no single index serves its filter, so it can hold fewer items than asked for, even none, while this is true: go on from `endCursor`.',
  })
  hasNextPage: boolean;
}

export interface Page<T> {
  nodes: T[];
  totalCount: number;
  /** The count stopped (more than `QUERY_COUNT_CAP` match, or only part of the matches was searched): `totalCount` is a lower bound. */
  totalCountCapped: boolean;
  pageInfo: PageInfo;
}

/** A cursor-paginated list type for `T` (`nodes`, `totalCount`, `pageInfo`). */
export function Paginated<T>(item: Type<T>) {
  @ObjectType({ isAbstract: true })
  class Connection implements Page<T> {
    @Field(() => [item], { description: 'The items of this page, in the list\'s order (oldest first unless it is asked for newest first).' })
    nodes: T[];

    @Field(() => Int, {
      description: `How many items match the filter, over all pages, counted up to ${QUERY_COUNT_CAP.toLocaleString('en')} (see \`totalCountCapped\`). When no single index serves the filter, the matches among the newest ${QUERY_COUNT_CAP.toLocaleString('en')} rows of the index read.`,
    })
    totalCount: number;

    @Field({
      description: `True when the count stopped: more than ${QUERY_COUNT_CAP.toLocaleString('en')} items match, or the filter was checked on the newest ${QUERY_COUNT_CAP.toLocaleString('en')} rows only. \`totalCount\` is then a lower bound (counting further would read every match).`,
    })
    totalCountCapped: boolean;

    @Field(() => PageInfo, { description: 'Where this page ends.' })
    pageInfo: PageInfo;
  }
  return Connection;
}

/** `appId`, `environment` and the id of one workflow, task or schedule. */
@ArgsType()
export class AppScopedIdArgs extends AppScopedInput {
  @Field(() => ID, { description: 'Id of the workflow, task or schedule.' })
  @IsString()
  @MaxLength(64)
  id: string;
}

/** Which part of a stream's history to return. */
@ArgsType()
export class HistoryArgs extends AppScopedIdArgs {
  @Field(() => Int, { nullable: true, description: 'First revision to return (default 0).' })
  @IsOptional()
  @IsInt()
  @Min(0)
  fromRevision?: number;

  @Field(() => Int, { nullable: true, description: 'Most events to return (default 1000, at most 10000).' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(10_000)
  first?: number;
}

/** A list's `after`: an `endCursor` (`<seq>:<id>`), or an id Baton handed out (the cursors of earlier versions). */
const LIST_CURSOR = /^(?:\d{1,16}:)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `after` as the `workflows`, `tasks` and `schedules` lists read it, or a `BAD_USER_INPUT` on
 * `after` for anything else: a string that is neither would otherwise be read as an id "between"
 * two ids and page from an arbitrary place without a word.
 */
export function listCursor(after: string | null | undefined): string | null {
  if (after == null || after === '') return null;
  if (!LIST_CURSOR.test(after)) throw new BadUserInputError('after', 'must be a cursor (endCursor) from an earlier page');
  return canonicalId(after);
}

/** Cursor pagination: a page size and where the previous page ended. */
@ArgsType()
export abstract class PageArgs {
  @Field(() => Int, { nullable: true, description: 'Page size (default 50, at most 500).' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(500)
  first?: number;

  @Field(() => String, { nullable: true, description: 'Cursor: return the items after this one (`pageInfo.endCursor`).' })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  after?: string;
}
