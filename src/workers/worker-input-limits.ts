import { BadUserInputError, BatonError } from '../shared/errors.js';
import { InputLimits, MAX_ID_LENGTH, MAX_NAME_LENGTH, MAX_TIMEZONE_LENGTH, checkJsonValue, parseLimitedJson } from '../shared/limits.js';
import type { Json } from '../event-store/event-store.port.js';
import { PRINTABLE, PRINTABLE_MESSAGE } from '../graphql/common.types.js';
import { MAX_SEQ } from '../protocol/work-refs.js';
import { MAX_ERROR_MESSAGE_LENGTH, MAX_ERROR_NAME_LENGTH } from '../protocol/decision-commands.js';
import { normalizeTimezone, validateCron } from '../schedules/domain/cron.js';
import { toSelector } from '../workflows/commands/selector-actions.js';
import { DECISION_COMMAND_TYPES, type DecisionCommand } from '../workflows/domain/workflow-commands.js';
import type { WorkflowSelectorInput } from '../workflows/workflow.types.js';
import type { DecisionReportInput, HeartbeatInput, ReportRejection, ReportWorkInput, TaskReportInput } from './worker-protocol.types.js';

/**
 * The input limits applied to what workers send, before the engine sees it: the same limits as
 * the public mutations (bytes, depth, array and string sizes), plus the item count of a report and
 * the shape of decision commands (arguments and event data are JSON arrays; seq numbers are ones a
 * ref can name, one per call; nothing follows a command that ends the run), whose names, tags,
 * selectors, cron expressions, time zones and dates follow the public API's rules for the same values.
 * A bad item is rejected on its own (`BAD_USER_INPUT` in `rejected`, nothing of it recorded); the
 * others go on. `now` is what a cron expression must fire after.
 */
export function screenReport(input: ReportWorkInput, limits: InputLimits, now = Date.now()): { input: ReportWorkInput; rejected: ReportRejection[] } {
  const decisions = input.decisions ?? [];
  const tasks = input.tasks ?? [];
  if (decisions.length + tasks.length > limits.reportItems) {
    throw new BadUserInputError(decisions.length > tasks.length ? 'decisions' : 'tasks', `one report holds at most ${limits.reportItems} items (MAX_REPORT_ITEMS); split it`);
  }
  const rejected: ReportRejection[] = [];
  const keep = <T extends { ref: string }>(items: T[], check: (item: T) => void): T[] =>
    items.filter((item) => {
      try {
        check(item);
        return true;
      } catch (error) {
        if (!(error instanceof BatonError)) throw error;
        rejected.push(rejection(item.ref, error));
        return false;
      }
    });
  const screened = {
    ...input,
    decisions: input.decisions ? keep(decisions, (d) => checkDecision(checkOutcome(d), limits, 'decisions', now)) : input.decisions,
    tasks: input.tasks ? keep(tasks, (t) => checkTask(t, limits)).map((t) => screenNext(t, limits, rejected, now)) : input.tasks,
  } as ReportWorkInput;
  return { input: screened, rejected };
}

/** An item refused on its own: its ref, the error's code and message, and the field it names (BAD_USER_INPUT). */
export function rejection(ref: string, error: BatonError, message = error.message): ReportRejection {
  const field = error.details.field;
  return { ref, code: error.code, message, field: typeof field === 'string' ? field : null };
}

export function checkHeartbeat(input: HeartbeatInput, limits: InputLimits): void {
  if (input.attempts.length > limits.reportItems) {
    throw new BadUserInputError('attempts', `one heartbeat holds at most ${limits.reportItems} attempts (MAX_REPORT_ITEMS); split it`);
  }
}

/**
 * A decision report's outcome: its commands (`[]` for none) or its failure, one of them. Without
 * either it recorded an empty decision (a worker that lost its commands left the workflow waiting
 * on nothing); with both, the failure, the commands silently dropped.
 */
function checkOutcome(report: DecisionReportInput): DecisionReportInput {
  const failed = Boolean(report.failureCode);
  if (failed && report.commands != null) throw new BadUserInputError('decisions', 'a decision has one outcome: commands or a failureCode, not both');
  if (!failed && report.commands == null) throw new BadUserInputError('decisions', 'a decision has one outcome: commands (a JSON array, [] for none) or a failureCode; this report has neither');
  return report;
}

/** A task report's outcome: a result, an error, or the attempt given back (`released`), exactly one of them. */
function checkTask(report: TaskReportInput, limits: InputLimits): void {
  const outcomes = [report.result != null && 'result', report.error != null && 'error', report.released === true && 'released'].filter(Boolean);
  if (outcomes.length > 1) throw new BadUserInputError('tasks', `an attempt has one outcome: a result, an error or released, not ${outcomes.join(' and ')}`);
  // None is not a result of null (the SDK sends "null" for one): a worker that lost it must not complete the task.
  if (outcomes.length === 0) throw new BadUserInputError('tasks', 'an attempt has one outcome: a result, an error or released; this report has none');
  if (report.result != null) parseLimitedJson('tasks.result', report.result, limits);
}

/**
 * A task report's next decision, checked as a decision report is. A bad one is dropped and
 * rejected on its own (`BAD_USER_INPUT`, under the task's ref, with a `tasks.next.*` field): the
 * task's outcome is still recorded, and the decision is then claimed and made as usual.
 */
function screenNext(report: TaskReportInput, limits: InputLimits, rejected: ReportRejection[], now: number): TaskReportInput {
  const next = report.next;
  if (!next) return report;
  try {
    if (report.error || report.released) throw new BadUserInputError('tasks.next', 'goes only with a result');
    if (!isIsoDateTime(next.startedAt)) throw new BadUserInputError('tasks.next.startedAt', 'must be an ISO 8601 date-time');
    checkDecision({ ref: report.ref, decisionId: next.basisDecisionId, commands: next.commands, queries: next.queries }, limits, 'tasks.next', now, next);
    return report;
  } catch (error) {
    if (!(error instanceof BatonError)) throw error;
    rejected.push(rejection(report.ref, error, `next decision not recorded (the task's outcome is): ${error.message}`));
    return { ...report, next: null };
  }
}

/**
 * Checks a decision's commands and queries against the limits and against the rules the public API
 * applies to the same values (names, tags, selectors, cron expressions and time zones); answers the
 * commands, parsed (none for a failure). A refusal is BAD_USER_INPUT on `<prefix>.commands`, its
 * message naming the command and its field.
 */
function checkDecision(report: DecisionReportInput, limits: InputLimits, prefix = 'decisions', now = Date.now(), carrier: { queries?: string | null } = report): unknown[] | undefined {
  if (report.queries != null) carrier.queries = report.queries = screenQueries(`${prefix}.queries`, report.queries, limits);
  if (report.failureCode || report.commands == null) return undefined;
  const field = `${prefix}.commands`;
  // One decision may start many tasks: its own byte and length limits, the others as for any value.
  // Its depth is its values' (a result, arguments) plus the envelope: the commands array and each command.
  const decisionLimits = { ...limits, payloadBytes: limits.decisionBytes, arrayLength: Math.max(limits.arrayLength, limits.decisionCommands), jsonDepth: limits.jsonDepth + ENVELOPE_DEPTH };
  let commands: unknown[];
  try {
    commands = parseLimitedJson(field, report.commands, decisionLimits, 'array') as unknown[];
  } catch (refused) {
    throw (refused instanceof BadUserInputError && stepAtFault(field, report.commands, limits)) || refused;
  }
  if (commands.length > limits.decisionCommands) throw new BadUserInputError(field, `one decision holds at most ${limits.decisionCommands} commands (MAX_DECISION_COMMANDS)`);
  // Types, seq numbers (range, reuse), what may follow a final command, and timer dates.
  const shaped = commandShapes(commands, field);
  commands.forEach((command, i) => {
    const c = command as Record<string, unknown>;
    const bad = (message: string, extra?: Record<string, string>) => new BadUserInputError(field, `command ${i} (${String(c.type)}): ${message}`, extra);
    /** A name, tag or event name, as the public API takes it (`NameField`): 1 to 256 characters, no control characters. */
    const text = (key: string, value: unknown, options: { optional?: boolean; max?: number; printable?: boolean } = {}) => {
      const { optional = false, max = MAX_NAME_LENGTH, printable = true } = options;
      if (optional && value == null) return;
      if (typeof value !== 'string' || value.length === 0 || value.length > max) throw bad(`${key} must be a string of 1 to ${max} characters`);
      if (printable && !PRINTABLE.test(value)) throw bad(`${key} ${PRINTABLE_MESSAGE}`);
    };
    const array = (key: string, value: unknown) => {
      if (!Array.isArray(value)) throw bad(`${key} must be a JSON array`);
    };
    const error = (key: string, value: unknown) => {
      const e = value as Record<string, unknown> | null | undefined;
      if (typeof e !== 'object' || e === null || Array.isArray(e) || typeof e.message !== 'string') throw bad(`${key} must be an object with a message`);
      if (e.name != null && typeof e.name !== 'string') throw bad(`${key}.name must be a string`);
      // As a task's error (TaskErrorInput) is bounded: the longest the service records from a worker.
      if (e.message.length > MAX_ERROR_MESSAGE_LENGTH) throw bad(`${key}.message must be at most ${MAX_ERROR_MESSAGE_LENGTH} characters`);
      if (typeof e.name === 'string' && e.name.length > MAX_ERROR_NAME_LENGTH) throw bad(`${key}.name must be at most ${MAX_ERROR_NAME_LENGTH} characters`);
      if (e.nonRetryable != null && typeof e.nonRetryable !== 'boolean') throw bad(`${key}.nonRetryable must be a boolean`);
      if (e.retryAfterMs != null && !(typeof e.retryAfterMs === 'number' && Number.isInteger(e.retryAfterMs) && e.retryAfterMs >= 0)) throw bad(`${key}.retryAfterMs must be a whole number of milliseconds, 0 or more`);
    };
    switch (c.type) {
      case 'ScheduleTask':
      case 'DispatchTask':
        text('name', c.name);
        array('args', c.args);
        break;
      case 'StartChildWorkflow':
        text('name', c.name);
        text('tag', c.tag, { optional: true });
        array('args', c.args);
        if (c.wait != null && typeof c.wait !== 'boolean') throw bad('wait must be a boolean');
        break;
      case 'CreateSchedule': {
        text('name', c.name);
        text('tag', c.tag, { optional: true });
        array('args', c.args);
        if (c.kind !== 'workflow' && c.kind !== 'task') throw bad('kind must be workflow or task');
        text('cron', c.cron);
        if (c.timezone != null && (typeof c.timezone !== 'string' || c.timezone.length > MAX_TIMEZONE_LENGTH)) throw bad(`timezone must be a string of at most ${MAX_TIMEZONE_LENGTH} characters, or null for UTC`);
        // As scheduleWorkflow and scheduleTask check them: a schedule that cannot be created is refused now, not skipped later.
        try {
          validateCron(c.cron as string, normalizeTimezone(c.timezone as string | null | undefined), now);
        } catch (refused) {
          if (!(refused instanceof BadUserInputError)) throw refused;
          const { cronField } = refused.details;
          throw bad(refused.message, typeof cronField === 'string' ? { cronField } : undefined);
        }
        break;
      }
      case 'ContinueAsNew':
        array('args', c.args);
        if (c.events != null) {
          if (!Array.isArray(c.events)) throw bad('events must be an array');
          c.events.forEach((event: unknown, j: number) => {
            if (typeof event !== 'object' || event === null || Array.isArray(event)) throw bad(`events[${j}] must be an object`);
            text(`events[${j}].name`, (event as Record<string, unknown>).name);
            array(`events[${j}].data`, (event as Record<string, unknown>).data);
            const causeId = (event as Record<string, unknown>).causeId;
            if (causeId !== undefined) text(`events[${j}].causeId`, causeId, { max: MAX_ID_LENGTH });
          });
        }
        break;
      case 'ControlWorkflows': {
        const selector = c.selector as Record<string, unknown> | null | undefined;
        if (typeof selector !== 'object' || selector === null || Array.isArray(selector)) throw bad('selector must be an object');
        // As WorkflowSelectorInput takes them; a key given must hold a value (the effect tells `{ id }` selectors by the key).
        if (selector.id !== undefined) text('selector.id', selector.id, { max: MAX_ID_LENGTH, printable: false });
        if (selector.name !== undefined) text('selector.name', selector.name);
        text('selector.tag', selector.tag, { optional: true });
        try {
          toSelector(selector as WorkflowSelectorInput);
        } catch (refused) {
          if (!(refused instanceof BadUserInputError)) throw refused;
          throw bad(refused.message);
        }
        if (!['send', 'pause', 'resume', 'terminate'].includes(c.action as string)) throw bad('unknown action');
        if (c.action === 'send' || c.event != null) {
          const event = c.event as Record<string, unknown> | null | undefined;
          if (typeof event !== 'object' || event === null) throw bad('event must be an object');
          text('event.name', event.name);
          array('event.data', event.data);
        }
        break;
      }
      case 'RecordStep':
        text('name', c.name);
        if (c.result !== undefined && c.error !== undefined) throw bad('a result or an error, not both');
        if (c.error !== undefined) error('error', c.error);
        break;
      case 'FailWorkflow':
        error('error', c.error);
        break;
      default:
        break; // StartTimer, CancelTimer, CompleteWorkflow: their shape is all commandShapes checks
    }
    const step = stepResultRefusal(field, c, i, limits);
    if (step) throw step;
    checkCommandValues(field, c, limits);
  });
  screenedCommands.set(carrier, shaped);
  return commands;
}

/**
 * A decision's query answers (a JSON object, one answer per handler), each answer within the
 * limits of any value. Answers are read-only side data: one that breaks a limit (the workflow's
 * state grew past MAX_PAYLOAD_BYTES, a string past MAX_JSON_STRING_LENGTH, ...) is replaced by
 * `{ error }`, as the SDK answers for a handler that throws, and the decision is recorded. Refusing
 * it stopped the workflow: the same decision, made again, carried the same answers. Text that is
 * not a JSON object, or an object of more handlers than MAX_JSON_ARRAY_LENGTH, is refused.
 */
function screenQueries(field: string, raw: string, limits: InputLimits): string {
  try {
    parseLimitedJson(field, raw, limits, 'object');
    return raw;
  } catch (refused) {
    if (!(refused instanceof BadUserInputError)) throw refused;
    let value: unknown;
    try {
      value = JSON.parse(raw); // any depth: each answer is then checked to the limits only
    } catch {
      throw refused;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.keys(value).length > limits.arrayLength) throw refused;
    const answers = Object.entries(value as Record<string, unknown>).map(([name, answer]): [string, unknown] => {
      try {
        if (name.length > limits.stringLength) throw new BadUserInputError(field, `holds a key longer than ${limits.stringLength} characters`);
        checkJsonValue(field, answer, limits);
        return [name, answer];
      } catch (error) {
        if (!(error instanceof BadUserInputError)) throw error;
        return [name, { error: `the answer was not recorded: it ${error.message.slice(field.length + 2)}` }];
      }
    });
    // Within the byte limit as a whole: the largest answers give way first.
    // `"name":answer,` for each (one comma too many, for the braces' one byte too few).
    const bytes = (name: string, answer: unknown) => Buffer.byteLength(JSON.stringify(name), 'utf8') + Buffer.byteLength(JSON.stringify(answer), 'utf8') + 2;
    const sizes = answers.map(([name, answer]) => bytes(name, answer));
    let total = sizes.reduce((a, b) => a + b, 1);
    const tooLarge = { error: `the answer was not recorded: the answers together must be at most ${limits.payloadBytes} bytes of JSON` };
    for (const i of [...sizes.keys()].sort((a, b) => sizes[b] - sizes[a])) {
      if (total <= limits.payloadBytes) break;
      answers[i] = [answers[i][0], tooLarge];
      total -= sizes[i] - bytes(answers[i][0], tooLarge);
    }
    if (total > limits.payloadBytes) throw refused; // the handlers' names alone are over it
    return JSON.stringify(Object.fromEntries(answers));
  }
}

/**
 * An inline step's result over a limit, refused under a message that names the step
 * (`command <i> (RecordStep): the result of step #<seq> ...`), so that the SDK fails that step
 * instead of making the same decision again and again (running the step each time).
 */
function stepResultRefusal(field: string, c: Record<string, unknown>, i: number, limits: InputLimits): BadUserInputError | null {
  if (c.type !== 'RecordStep' || c.result === undefined) return null;
  try {
    checkJsonValue(field, c.result, limits);
    return null;
  } catch (refused) {
    if (!(refused instanceof BadUserInputError)) throw refused;
    return new BadUserInputError(field, `command ${i} (RecordStep): the result of step #${String(c.seq)} ${refused.message.slice(field.length + 2)}`);
  }
}

/**
 * When the decision as a whole broke a JSON limit: the step whose result did, if one did. Also
 * when it is too deep (JSON.parse takes any depth; each result is then checked to the limit only).
 */
function stepAtFault(field: string, raw: string, limits: InputLimits): BadUserInputError | null {
  if (Buffer.byteLength(raw, 'utf8') > limits.decisionBytes) return null;
  let commands: unknown;
  try {
    commands = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!Array.isArray(commands)) return null;
  for (let i = 0; i < commands.length; i++) {
    const c = commands[i] as Record<string, unknown> | null;
    if (typeof c !== 'object' || c === null) continue;
    const step = stepResultRefusal(field, c, i, limits);
    if (step) return step;
  }
  return null;
}

/**
 * Levels of a decision's JSON that are not its values: the commands array, each command object,
 * and a continue-as-new's events array and event objects around each event's data.
 */
const ENVELOPE_DEPTH = 4;

/**
 * A command's values (a result, arguments, an event's data) against the limits, each measured as
 * the value it is, as the public API would take it: the command object, and the event objects
 * around event data (already shape-checked), are envelope.
 */
function checkCommandValues(field: string, c: Record<string, unknown>, limits: InputLimits): void {
  const key = c.type === 'ContinueAsNew' && Array.isArray(c.events) ? 'events' : c.type === 'ControlWorkflows' && typeof c.event === 'object' && c.event !== null ? 'event' : null;
  if (key === null) return checkJsonValue(field, c, limits, -1);
  const { [key]: carried, ...rest } = c;
  checkJsonValue(field, rest, limits, -1);
  const events = Array.isArray(carried) ? carried : [carried];
  if (events.length > limits.arrayLength) throw new BadUserInputError(field, `holds an array of more than ${limits.arrayLength} elements`);
  for (const event of events) checkJsonValue(field, event, limits, -1);
}

/** The commands `screenReport` parsed and checked, by the report item (or its `next`) that carried them. */
const screenedCommands = new WeakMap<object, DecisionCommand[]>();

/**
 * A reported decision's commands (a decision report, or a task report's `next`): those
 * `screenReport` already parsed and checked, else parsed and shape-checked now.
 */
export function reportedCommands(item: { commands?: string | null }, field = 'decisions.commands'): DecisionCommand[] {
  return screenedCommands.get(item) ?? parseCommands(item.commands, field);
}

/** A worker's JSON text, or BAD_USER_INPUT on `field`. */
export function parseJson(field: string, raw: string): Json {
  try {
    return JSON.parse(raw) as Json;
  } catch (error) {
    throw new BadUserInputError(field, `is not valid JSON (${(error as Error).message})`);
  }
}

const COMMAND_TYPES = new Set<string>(DECISION_COMMAND_TYPES);

/** Parses the commands a worker reports and checks their shape (`commandShapes`). */
export function parseCommands(raw: string | null | undefined, field = 'decisions.commands'): DecisionCommand[] {
  return commandShapes(parseJson(field, raw ?? '[]'), field);
}

/** Commands that end the run: nothing may follow one in the same decision. */
const FINAL_COMMANDS = new Set<string>(['CompleteWorkflow', 'FailWorkflow', 'ContinueAsNew']);

/** A call number a ref can name (`wf:<id>#<seq>`): a whole number from 0 to MAX_SEQ. */
export function isSeq(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_SEQ;
}

/** An ISO 8601 date-time with a time zone, as `Date.prototype.toISOString` writes it (fractions and offsets allowed). */
const ISO_DATE_TIME = /^(\d{4}|[+-]\d{6})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

/**
 * Whether `value` is an ISO 8601 date-time with its time zone, on a day that exists. `Date.parse`
 * alone reads `"0"` as the year 2000 and `2030-02-31` as March 3rd.
 */
export function isIsoDateTime(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const m = ISO_DATE_TIME.exec(value);
  if (!m || !Number.isFinite(Date.parse(value))) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(0);
  date.setUTCFullYear(year, month, 0); // day 0 of the next month: the last day of this one
  return day <= date.getUTCDate();
}

/**
 * Checks the shape of parsed decision commands; the decider checks what they mean. Each command
 * has a known type; each call has its own seq, a number a ref can name (a `CancelTimer` names the
 * timer's); nothing follows a command that ends the run; timer and continue-as-new dates are ISO.
 */
export function commandShapes(value: unknown, field: string): DecisionCommand[] {
  if (!Array.isArray(value)) throw new BadUserInputError(field, 'must be a JSON array');
  const calls = new Map<number, { index: number; type: string }>();
  let final: { index: number; type: string } | undefined;
  return value.map((c, i) => {
    if (typeof c !== 'object' || c === null || Array.isArray(c) || typeof c.type !== 'string' || !COMMAND_TYPES.has(c.type)) {
      throw new BadUserInputError(field, `command ${i} has no known type`);
    }
    if (final) {
      throw new BadUserInputError(field, `command ${i} (${c.type}) follows command ${final.index} (${final.type}), which ends the run: nothing may come after it`);
    }
    if (FINAL_COMMANDS.has(c.type)) final = { index: i, type: c.type };
    const needsSeq = c.type !== 'CompleteWorkflow' && c.type !== 'FailWorkflow';
    if (needsSeq && !isSeq(c.seq)) {
      throw new BadUserInputError(field, `command ${i} (${c.type}) needs a seq: a whole number from 0 to ${MAX_SEQ}`);
    }
    if (needsSeq) {
      const earlier = calls.get(c.seq);
      if (c.type === 'CancelTimer') {
        if (earlier && earlier.type !== 'StartTimer') {
          throw new BadUserInputError(field, `command ${i} (CancelTimer) names seq ${c.seq}, which is command ${earlier.index} (${earlier.type}), not a timer`);
        }
      } else if (earlier) {
        throw new BadUserInputError(field, `command ${i} (${c.type}) reuses seq ${c.seq} of command ${earlier.index} (${earlier.type}); each call has its own`);
      } else {
        calls.set(c.seq, { index: i, type: c.type });
      }
    }
    if ((c.type === 'ScheduleTask' || c.type === 'StartChildWorkflow' || c.type === 'DispatchTask') && (typeof c.name !== 'string' || !Array.isArray(c.args))) {
      throw new BadUserInputError(field, `command ${i} (${c.type}) needs a name and args`);
    }
    if (c.type === 'ContinueAsNew' && (!Array.isArray(c.args) || !isIsoDateTime(c.at))) {
      throw new BadUserInputError(field, `command ${i} (ContinueAsNew) needs args and an ISO 8601 at (e.g. "2030-01-01T00:00:00.000Z")`);
    }
    if (c.type === 'StartTimer' && !isIsoDateTime(c.fireAt)) {
      throw new BadUserInputError(field, `command ${i} (StartTimer) needs an ISO 8601 fireAt (e.g. "2030-01-01T00:00:00.000Z")`);
    }
    return c as unknown as DecisionCommand;
  });
}
