/**
 * Baton's one error taxonomy. Domain and application code throws these; the GraphQL error
 * formatter maps them to `extensions.code` (and the HTTP status where one applies). Resolvers
 * never build error strings of their own.
 */
export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'BAD_USER_INPUT'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'RATE_LIMITED'
  | 'PAYLOAD_TOO_LARGE'
  | 'STORE_UNAVAILABLE'
  | 'INTERNAL_SERVER_ERROR';

export abstract class BatonError extends Error {
  abstract readonly code: ErrorCode;
  /** HTTP status to answer with when this error ends a request on its own. */
  readonly httpStatus: number = 200;
  /** Extra fields for `extensions` (e.g. the offending field). */
  readonly details: Record<string, unknown> = {};
}

export class BadUserInputError extends BatonError {
  readonly code = 'BAD_USER_INPUT';
  readonly details: { field: string; reason?: string; [more: string]: unknown };
  /** `extra` adds fields to `extensions`, e.g. `{ cronField: 'minute' }`. */
  constructor(field: string, message: string, extra: Record<string, string> = {}) {
    super(`${field}: ${message}`);
    this.details = { ...extra, field };
  }
}

export class NotFoundError extends BatonError {
  readonly code = 'NOT_FOUND';
  constructor(what: string, id: string) {
    super(`${what} ${id} not found`);
  }
}

export class ConflictError extends BatonError {
  readonly code = 'CONFLICT';
}

export class UnauthenticatedError extends BatonError {
  readonly code = 'UNAUTHENTICATED';
  readonly httpStatus = 401;
}

export class ForbiddenError extends BatonError {
  readonly code = 'FORBIDDEN';
}

export class RateLimitedError extends BatonError {
  readonly code = 'RATE_LIMITED';
  readonly httpStatus = 429;
  constructor(readonly retryAfterSeconds: number, message = `rate limit exceeded; retry after ${retryAfterSeconds}s`) {
    super(message);
  }
}

/** A token already has as many long polls waiting as it may (MAX_POLLS_PER_TOKEN). */
export class TooManyPollsError extends BatonError {
  readonly code = 'RATE_LIMITED';
  readonly httpStatus = 429;
  readonly details = { limit: 'MAX_POLLS_PER_TOKEN' };
  constructor(limit: number) {
    super(`this token already has ${limit} pollWork requests waiting (MAX_POLLS_PER_TOKEN); wait for one to answer`);
  }
}

/** An app already has as many schedules that can fire as it may (MAX_SCHEDULES_PER_APP). */
export class TooManySchedulesError extends BatonError {
  readonly code = 'RATE_LIMITED';
  readonly details = { limit: 'MAX_SCHEDULES_PER_APP' };
  constructor(appId: string, limit: number) {
    super(`app ${JSON.stringify(appId)} already has ${limit} schedules that can fire, active or paused (MAX_SCHEDULES_PER_APP); delete one first`);
  }
}

/**
 * A workflow already keeps back as many events as it may (MAX_QUEUED_EVENTS, a backlog its code
 * has not taken yet): the send is refused and nothing is recorded.
 */
export class TooManyQueuedEventsError extends BatonError {
  readonly code = 'RATE_LIMITED';
  readonly details: Record<string, unknown>;
  /** `picked`: a `{ name }` selector's counts: how many it matched, changed (received the event) and refused. */
  constructor(
    workflowId: string,
    readonly limit: number,
    picked?: { matched: number; changed: number; refused: number },
  ) {
    super(
      picked === undefined
        ? `workflow ${workflowId} already keeps back ${limit} events its code has not taken (MAX_QUEUED_EVENTS); this event was not recorded: ` +
            'resume the workflow (or run its workers) and send it again once the backlog goes down'
        : `${picked.refused} of the ${picked.matched} workflows picked (the first: ${workflowId}) already keep back ${limit} events their code has not taken (MAX_QUEUED_EVENTS) ` +
            `and did not record this event; the other ${picked.changed} recorded it: send it again to those refused alone ({ id } selectors)`,
    );
    this.details = { limit: 'MAX_QUEUED_EVENTS', workflowId, ...(picked ?? {}) };
  }
}

/** A token already has as many awaitWorkflow long polls waiting as it may (MAX_AWAITS_PER_TOKEN). */
export class TooManyAwaitsError extends BatonError {
  readonly code = 'RATE_LIMITED';
  readonly httpStatus = 429;
  readonly details = { limit: 'MAX_AWAITS_PER_TOKEN' };
  constructor(limit: number) {
    super(`this token already has ${limit} awaitWorkflow polls waiting (MAX_AWAITS_PER_TOKEN, every alias counts); wait for one to answer`);
  }
}

export class StoreUnavailable extends BatonError {
  readonly code = 'STORE_UNAVAILABLE';
  readonly httpStatus = 503;
}
