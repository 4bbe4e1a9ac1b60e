import { BadUserInputError, BatonError } from '../shared/errors.js';
import { InputLimits, MAX_NAME_LENGTH, checkJsonValue, parseLimitedJson } from '../shared/limits.js';
import type { Json } from '../event-store/event-store.port.js';
import { DECISION_COMMAND_TYPES, type DecisionCommand } from '../workflows/domain/workflow-commands.js';
import type { DecisionReportInput, HeartbeatInput, ReportRejection, ReportWorkInput, TaskReportInput } from './worker-protocol.types.js';

/**
 * The input limits applied to what workers send, before the engine sees it: the same limits as
 * the public mutations (bytes, depth, array and string sizes), plus the item count of a report and
 * the shape of decision commands (arguments and event data are JSON arrays, names are bounded).
 * A bad item is rejected on its own (`BAD_USER_INPUT` in `rejected`); the others go on.
 */
export function screenReport(input: ReportWorkInput, limits: InputLimits): { input: ReportWorkInput; rejected: ReportRejection[] } {
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
        rejected.push({ ref: item.ref, code: error.code, message: error.message });
        return false;
      }
    });
  const screened = {
    ...input,
    decisions: input.decisions ? keep(decisions, (d) => checkDecision(d, limits)) : input.decisions,
    tasks: input.tasks ? keep(tasks, (t) => checkTask(t, limits)).map((t) => screenNext(t, limits, rejected)) : input.tasks,
  } as ReportWorkInput;
  return { input: screened, rejected };
}

export function checkHeartbeat(input: HeartbeatInput, limits: InputLimits): void {
  if (input.attempts.length > limits.reportItems) {
    throw new BadUserInputError('attempts', `one heartbeat holds at most ${limits.reportItems} attempts (MAX_REPORT_ITEMS); split it`);
  }
}

function checkTask(report: TaskReportInput, limits: InputLimits): void {
  if (!report.error && report.result != null) parseLimitedJson('tasks.result', report.result, limits);
}

/**
 * A task report's next decision, checked as a decision report is. A bad one is dropped and
 * rejected on its own (`BAD_USER_INPUT`, under the task's ref, with a `tasks.next.*` field): the
 * task's outcome is still recorded, and the decision is then claimed and made as usual.
 */
function screenNext(report: TaskReportInput, limits: InputLimits, rejected: ReportRejection[]): TaskReportInput {
  const next = report.next;
  if (!next) return report;
  try {
    if (report.error || report.released) throw new BadUserInputError('tasks.next', 'goes only with a result');
    if (Number.isNaN(Date.parse(next.startedAt))) throw new BadUserInputError('tasks.next.startedAt', 'must be an ISO 8601 date');
    const commands = checkDecision({ ref: report.ref, decisionId: next.basisDecisionId, commands: next.commands, queries: next.queries }, limits, 'tasks.next');
    commandShapes(commands, 'tasks.next.commands');
    return report;
  } catch (error) {
    if (!(error instanceof BatonError)) throw error;
    rejected.push({ ref: report.ref, code: error.code, message: `next decision not recorded (the task's outcome is): ${error.message}` });
    return { ...report, next: null };
  }
}

/** Checks a decision's commands and queries against the limits; answers the commands, parsed (none for a failure). */
function checkDecision(report: DecisionReportInput, limits: InputLimits, prefix = 'decisions'): unknown[] | undefined {
  if (report.queries != null) parseLimitedJson(`${prefix}.queries`, report.queries, limits, 'object');
  if (report.failureCode || report.commands == null) return undefined;
  const field = `${prefix}.commands`;
  // One decision may start many tasks: its own byte and length limits, the others as for any value.
  const decisionLimits = { ...limits, payloadBytes: limits.decisionBytes, arrayLength: Math.max(limits.arrayLength, limits.decisionCommands) };
  const commands = parseLimitedJson(field, report.commands, decisionLimits, 'array') as unknown[];
  if (commands.length > limits.decisionCommands) throw new BadUserInputError(field, `one decision holds at most ${limits.decisionCommands} commands (MAX_DECISION_COMMANDS)`);
  commands.forEach((command, i) => {
    if (typeof command !== 'object' || command === null || Array.isArray(command)) throw new BadUserInputError(field, `command ${i} is not an object`);
    const c = command as Record<string, unknown>;
    const name = (key: string, value: unknown, optional = false) => {
      if (optional && value == null) return;
      if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
        throw new BadUserInputError(field, `command ${i} (${String(c.type)}): ${key} must be a string of 1 to ${MAX_NAME_LENGTH} characters`);
      }
    };
    const array = (key: string, value: unknown) => {
      if (!Array.isArray(value)) throw new BadUserInputError(field, `command ${i} (${String(c.type)}): ${key} must be a JSON array`);
    };
    switch (c.type) {
      case 'ScheduleTask':
      case 'DispatchTask':
        name('name', c.name);
        array('args', c.args);
        break;
      case 'StartChildWorkflow':
        name('name', c.name);
        name('tag', c.tag, true);
        array('args', c.args);
        break;
      case 'CreateSchedule':
        name('name', c.name);
        name('cron', c.cron);
        name('timezone', c.timezone, true);
        name('tag', c.tag, true);
        array('args', c.args);
        if (c.kind !== 'workflow' && c.kind !== 'task') throw new BadUserInputError(field, `command ${i} (CreateSchedule): kind must be workflow or task`);
        break;
      case 'ContinueAsNew':
        array('args', c.args);
        break;
      case 'ControlWorkflows': {
        const selector = c.selector as Record<string, unknown> | null | undefined;
        if (typeof selector !== 'object' || selector === null || Array.isArray(selector)) throw new BadUserInputError(field, `command ${i} (ControlWorkflows): selector must be an object`);
        if (selector.id !== undefined) name('selector.id', selector.id);
        else {
          name('selector.name', selector.name);
          name('selector.tag', selector.tag, true);
        }
        if (!['send', 'pause', 'resume', 'terminate'].includes(c.action as string)) throw new BadUserInputError(field, `command ${i} (ControlWorkflows): unknown action`);
        if (c.action === 'send' || c.event != null) {
          const event = c.event as Record<string, unknown> | null | undefined;
          if (typeof event !== 'object' || event === null) throw new BadUserInputError(field, `command ${i} (ControlWorkflows): event must be an object`);
          name('event.name', event.name);
          array('event.data', event.data);
        }
        break;
      }
      case 'RecordStep': {
        name('name', c.name);
        if (c.result !== undefined && c.error !== undefined) throw new BadUserInputError(field, `command ${i} (RecordStep): a result or an error, not both`);
        const error = c.error as Record<string, unknown> | null | undefined;
        if (error !== undefined && (typeof error !== 'object' || error === null || typeof error.message !== 'string')) {
          throw new BadUserInputError(field, `command ${i} (RecordStep): error must be an object with a message`);
        }
        break;
      }
      case 'FailWorkflow': {
        const error = c.error as Record<string, unknown> | null | undefined;
        if (typeof error !== 'object' || error === null || typeof error.message !== 'string') {
          throw new BadUserInputError(field, `command ${i} (FailWorkflow): error must be an object with a message`);
        }
        break;
      }
      default:
        break; // the engine checks types, seq numbers and timers
    }
    checkJsonValue(field, c, limits);
  });
  return commands;
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

/** Checks the shape of parsed decision commands; the decider checks what they mean. */
export function commandShapes(value: unknown, field: string): DecisionCommand[] {
  if (!Array.isArray(value)) throw new BadUserInputError(field, 'must be a JSON array');
  return value.map((c, i) => {
    if (typeof c !== 'object' || c === null || Array.isArray(c) || typeof c.type !== 'string' || !COMMAND_TYPES.has(c.type)) {
      throw new BadUserInputError(field, `command ${i} has no known type`);
    }
    const needsSeq = c.type !== 'CompleteWorkflow' && c.type !== 'FailWorkflow';
    if (needsSeq && (typeof c.seq !== 'number' || !Number.isInteger(c.seq) || c.seq < 0)) {
      throw new BadUserInputError(field, `command ${i} (${c.type}) needs a whole-number seq`);
    }
    if ((c.type === 'ScheduleTask' || c.type === 'StartChildWorkflow' || c.type === 'DispatchTask') && (typeof c.name !== 'string' || !Array.isArray(c.args))) {
      throw new BadUserInputError(field, `command ${i} (${c.type}) needs a name and args`);
    }
    if (c.type === 'ContinueAsNew' && (!Array.isArray(c.args) || typeof c.at !== 'string' || Number.isNaN(Date.parse(c.at)))) {
      throw new BadUserInputError(field, `command ${i} (ContinueAsNew) needs args and an ISO at`);
    }
    if (c.type === 'StartTimer' && (typeof c.fireAt !== 'string' || Number.isNaN(Date.parse(c.fireAt)))) {
      throw new BadUserInputError(field, `command ${i} (StartTimer) needs an ISO fireAt`);
    }
    return c as unknown as DecisionCommand;
  });
}
