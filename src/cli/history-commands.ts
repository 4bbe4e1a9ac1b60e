import type { EventStore } from '../event-store/event-store.port.js';
import { NonDeterminismError } from '../sdk/errors.js';
import { type HistoryEvent, WorkflowReplay } from '../sdk/workflow-context.js';
import { replayableHistory } from '../workflows/domain/workflow-retry.js';
import { loadDefinitions } from './worker-command.js';

async function readWorkflow(store: EventStore, workflowId: string): Promise<HistoryEvent[]> {
  const events = await store.readStream(`workflow-${workflowId}`);
  return events.map((e) => ({ revision: Number(e.revision), type: e.type, data: e.data }));
}

/** `baton history <workflowId>`: every event of a workflow's stream, one per line, for auditors. */
export async function historyCommand(store: EventStore, workflowId: string | undefined, json: boolean): Promise<number> {
  if (!workflowId) {
    process.stderr.write('usage: baton history <workflowId> [--json]\n');
    return 2;
  }
  const events = await store.readStream(`workflow-${workflowId}`);
  if (events.length === 0) {
    process.stderr.write(`no workflow ${workflowId} in this store\n`);
    return 1;
  }
  for (const e of events) {
    process.stdout.write(
      json
        ? `${JSON.stringify({ revision: Number(e.revision), position: String(e.position), type: e.type, recordedAt: e.recordedAt, data: e.data, metadata: e.metadata })}\n`
        : `${String(e.revision).padStart(4)}  ${e.recordedAt.toISOString()}  ${e.type.padEnd(24)} ${JSON.stringify(e.data)}\n`,
    );
  }
  return 0;
}

/**
 * `baton replay <module> <workflowId>`: replays a recorded history against the workflow code a
 * module exports, and says whether the code still makes the decisions the history recorded —
 * the check to run before deploying changed workflow code.
 */
export async function replayCommand(store: EventStore, modulePath: string | undefined, workflowId: string | undefined): Promise<number> {
  if (!modulePath || !workflowId) {
    process.stderr.write('usage: baton replay <module> <workflowId>\n');
    return 2;
  }
  const history = replayableHistory(await readWorkflow(store, workflowId));
  if (history.length === 0) {
    process.stderr.write(`no workflow ${workflowId} in this store\n`);
    return 1;
  }
  const dispatched = history[0].data as { name: string; input: unknown[] };
  const version = (history.find((e) => e.type === 'DecisionStarted')?.data as { version?: string } | undefined)?.version ?? dispatched.name;
  const { workflows } = await loadDefinitions(modulePath);
  const definition = workflows.find((w) => w.name === version);
  if (!definition) {
    process.stderr.write(`${modulePath} exports no workflow ${version}\n`);
    return 1;
  }
  const decisions = history.filter((e) => e.type === 'DecisionCompleted').length;
  try {
    await new WorkflowReplay(definition, workflowId, dispatched.input, history).execute();
  } catch (error) {
    if (error instanceof NonDeterminismError) {
      process.stdout.write(`NON_DETERMINISTIC at revision ${error.historyPosition}: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
  process.stdout.write(`OK: ${version} replays ${decisions} recorded decisions of workflow ${workflowId} (${history.length} events) without a mismatch\n`);
  return 0;
}
