import type { EventStore, RecordedEvent } from '../event-store/event-store.port.js';
import { readLatestRun } from '../event-store/read-run.js';
import { WORKFLOW_RESET_TYPES, baseName } from '../workflows/domain/workflow.decider.js';
import { NonDeterminismError } from '../sdk/errors.js';
import { type HistoryEvent, WorkflowReplay } from '../sdk/workflow-context.js';
import type { WorkflowDefinition } from '../sdk/definitions.js';
import { replayableHistory } from '../protocol/workflow-retry.js';
import { startProgress } from './progress.js';
import { loadDefinitions } from './worker-command.js';
import { CliError } from './store-commands.js';
import { withReleasedData } from '../workflows/released-events.js';

/** A workflow's current run (from its last `WorkflowContinuedAsNew`, or its start): what a replay checks, read from the end. */
async function readCurrentRun(store: EventStore, workflowId: string): Promise<HistoryEvent[]> {
  const events = await readLatestRun(store, `workflow-${workflowId}`, WORKFLOW_RESET_TYPES);
  // As the engine hands it to workers: no queued event, each release with the data it released.
  const run = events.filter((e) => e.type !== 'WorkflowEventQueued').map((e) => ({ revision: Number(e.revision), type: e.type, data: e.data }));
  return withReleasedData(store, `workflow-${workflowId}`, run);
}

/** Events read from the store at a time: the CLI's memory holds one page, whatever the stream's length. */
const PAGE = 1000;

/** Writes a line to stdout, waiting while the pipe is full (an export to a slow reader stays bounded). */
async function writeLine(line: string): Promise<void> {
  if (!process.stdout.write(`${line}\n`)) await new Promise((resolve) => process.stdout.once('drain', resolve));
}

/** One event as `--json` prints it: the envelope, its data and its metadata. */
function eventJson(e: RecordedEvent): string {
  return JSON.stringify({ position: String(e.position), streamId: e.streamId, revision: Number(e.revision), type: e.type, recordedAt: e.recordedAt, id: e.id, data: e.data, metadata: e.metadata });
}

/** `baton history <workflowId>`: every event of a workflow's stream, one per line, for auditors (read a page at a time). */
export async function historyCommand(store: EventStore, workflowId: string | undefined, json: boolean): Promise<number> {
  if (!workflowId) {
    process.stderr.write('usage: baton history <workflowId> [--json]\n');
    return 2;
  }
  const streamId = `workflow-${workflowId}`;
  for (let fromRevision = 0n; ; ) {
    const events = await store.readStream(streamId, { fromRevision, maxCount: PAGE });
    if (fromRevision === 0n && events.length === 0) {
      process.stderr.write(`no workflow ${workflowId} in this store\n`);
      return 1;
    }
    for (const e of events) {
      await writeLine(json ? eventJson(e) : `${String(e.revision).padStart(4)}  ${e.recordedAt.toISOString()}  ${e.type.padEnd(24)} ${JSON.stringify(e.data)}`);
    }
    if (events.length < PAGE) return 0;
    fromRevision = events[events.length - 1].revision + 1n;
  }
}

export interface EventsOptions {
  /** Print events whose position is greater than this one (a position printed by an earlier run). */
  after?: bigint;
  /** Only streams whose id starts with one of these (`workflow-`, `schedule-<id>`). */
  streams?: string[];
  /** Only events of these types. */
  types?: string[];
  /** Stop after printing this many events. */
  limit?: number;
}

/**
 * `baton events`: the global log in commit order, one JSON object per line (its position, stream,
 * revision, type, time, id, data and metadata), for auditors exporting or following what was
 * recorded. Reads a page at a time and filters as it reads, so memory stays flat however long
 * the log; the last line on stderr gives the position to resume from with `--after`.
 */
export async function eventsCommand(store: EventStore, options: EventsOptions): Promise<number> {
  const types = options.types?.length ? new Set(options.types) : null;
  const streams = options.streams?.length ? options.streams : null;
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  let printed = 0;
  let read = 0;
  let after = options.after;
  for (; printed < limit; ) {
    const page = await store.readAll({ after, maxCount: PAGE });
    for (const e of page) {
      read++;
      after = e.position;
      if (types && !types.has(e.type)) continue;
      if (streams && !streams.some((prefix) => e.streamId.startsWith(prefix))) continue;
      await writeLine(eventJson(e));
      if (++printed >= limit) break;
    }
    if (page.length < PAGE) break;
  }
  process.stderr.write(`${printed} events printed of ${read} read; last position read: ${after ?? 'none'} (resume with --after ${after ?? 0})\n`);
  return 0;
}

/** `version`: the workflow (versioned name) the run runs, once its history says (absent for no history). */
export type ReplayOutcome = { status: 'ok' | 'non_deterministic' | 'missing'; message: string; version?: string };

/**
 * Replays one recorded history against the workflow code a module exports, and says whether the
 * code still makes the decisions the history recorded — the check to run before deploying
 * changed workflow code.
 */
export async function replayOne(store: EventStore, workflows: WorkflowDefinition[], modulePath: string, workflowId: string): Promise<ReplayOutcome> {
  const history = replayableHistory(await readCurrentRun(store, workflowId));
  if (history.length === 0) return { status: 'missing', message: `no workflow ${workflowId} in this store` };
  const dispatched = history[0].data as { name: string; input: unknown[] };
  const version = (history.find((e) => e.type === 'DecisionStarted')?.data as { version?: string } | undefined)?.version ?? dispatched.name;
  const definition = workflows.find((w) => w.name === version);
  if (!definition) return { status: 'missing', message: `${modulePath} exports no workflow ${version}`, version };
  const decisions = history.filter((e) => e.type === 'DecisionCompleted').length;
  try {
    // A check runs no step: a decision in flight, or one lost, must not cause its side effects here.
    await new WorkflowReplay(definition, workflowId, dispatched.input, history, { verifyOnly: true }).execute();
  } catch (error) {
    if (error instanceof NonDeterminismError) {
      return { status: 'non_deterministic', message: `NON_DETERMINISTIC at revision ${error.historyPosition}: ${error.message}`, version };
    }
    throw error;
  }
  return { status: 'ok', message: `OK: ${version} replays ${decisions} recorded decisions of workflow ${workflowId} (${history.length} events) without a mismatch`, version };
}

/** `baton replay <module> <workflowId>`: one workflow, its verdict on stdout. */
export async function replayCommand(store: EventStore, modulePath: string, workflowId: string): Promise<number> {
  const { workflows } = await loadDefinitions(modulePath);
  const outcome = await replayOne(store, workflows, modulePath, workflowId);
  if (outcome.status === 'missing') {
    process.stderr.write(`${outcome.message}\n`);
    return 1;
  }
  process.stdout.write(`${outcome.message}\n`);
  return outcome.status === 'ok' ? 0 : 1;
}

/**
 * `baton replay <module> --all [--name N]`: every recorded workflow (of that name) that the module
 * defines, with a progress bar on a terminal; prints the mismatches and a summary.
 */
export async function replayAllCommand(store: EventStore, modulePath: string, name: string | undefined): Promise<number> {
  const { workflows } = await loadDefinitions(modulePath);
  // Else every recorded workflow counted as "not defined" and the check passed, having checked nothing.
  if (workflows.length === 0) throw new CliError(`${modulePath} exports no workflow definition (defineWorkflow values exported by name): nothing to replay against`);
  // `--name N`: the workflows dispatched as N or running N (a dispatch of `Order` runs the highest
  // version served, `Order_v2`), and for an unversioned N every version of it. Candidates are
  // those of N's base name; a versioned N keeps those whose run turns out to be N.
  const wanted = (dispatched: string, version: string | undefined) =>
    !name || dispatched === name || version === name || (name === baseName(name) && baseName(dispatched) === name);
  const ids: Array<{ id: string; dispatched: string }> = [];
  for (let after: bigint | undefined; ; ) {
    const page = await store.readAll({ after, maxCount: 1000 });
    if (page.length === 0) break;
    for (const e of page) {
      after = e.position;
      const data = e.data as { workflowId?: string; name?: string };
      if (e.type === 'WorkflowDispatched' && data.workflowId && (!name || baseName(data.name ?? '') === baseName(name))) {
        ids.push({ id: data.workflowId, dispatched: data.name ?? '' });
      }
    }
  }
  const progress = startProgress('replay', ids.length);
  const counts = { ok: 0, non_deterministic: 0, missing: 0 };
  const mismatches: string[] = [];
  let replayed = 0;
  for (const { id, dispatched } of ids) {
    const outcome = await replayOne(store, workflows, modulePath, id);
    progress.increment();
    if (!wanted(dispatched, outcome.version)) continue;
    replayed++;
    counts[outcome.status]++;
    if (outcome.status === 'non_deterministic') mismatches.push(`${id}: ${outcome.message}`);
  }
  progress.stop();
  for (const line of mismatches) process.stdout.write(`${line}\n`);
  process.stdout.write(`replayed ${replayed} workflows: ${counts.ok} OK, ${counts.non_deterministic} NON_DETERMINISTIC, ${counts.missing} not defined by ${modulePath}\n`);
  return counts.non_deterministic > 0 ? 1 : 0;
}

