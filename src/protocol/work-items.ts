/**
 * The worker protocol's operations and the shapes they carry on the wire, shared by the server's
 * GraphQL types (which must match them) and the SDK's worker (which sends and reads them).
 */

/** A claimed decision or task attempt, as `pollWork` answers it. */
export interface WireWorkItem {
  kind: 'DECISION' | 'TASK';
  ref: string;
  workflowId: string | null;
  taskId: string | null;
  name: string;
  version: string | null;
  decisionId: string | null;
  attemptId: string | null;
  attempt: number | null;
  /** JSON array: the task's arguments, or the current run's input. */
  input: string;
  /** DECISION: JSON array of history events from `historyFrom` to this decision's DecisionStarted. */
  history: string | null;
  historyFrom: number | null;
  runFrom: number | null;
  leaseExpiresAt: string;
}

export interface WireDecisionReport {
  ref: string;
  decisionId: string;
  /** JSON array of `DecisionCommand`s. */
  commands?: string;
  /** JSON object: each query handler's answer on the state this decision left (read through `Workflow.queries`). */
  queries?: string;
  failureCode?: string;
  failureMessage?: string;
  historyPosition?: number | null;
}

export interface WireTaskReport {
  ref: string;
  attemptId: string;
  result?: string;
  error?: { message: string; name?: string; nonRetryable?: boolean; retryAfterMs?: number };
  /** The worker gives the attempt back unfinished (it is shutting down, or was told to stop because its workflow failed): retried at once, not counted. */
  released?: boolean;
  /** The decision this result makes pending, made already by this worker on the run it holds (see `WireNextDecision`). */
  next?: WireNextDecision;
}

/**
 * A decision a worker made right after a task of the workflow succeeded, on the run it held since
 * its decision `basisDecisionId`: recorded with the result in one append when nothing else
 * happened to the workflow since (`reportWork` then lists it in `decided`), else ignored, and the
 * decision is claimed and made as usual.
 */
export interface WireNextDecision {
  basisDecisionId: string;
  /** The `Name_vN` the worker ran. */
  version: string;
  /** The decision's clock (ISO), as the code saw it through `ctx.now()`. */
  startedAt: string;
  /** JSON array of `DecisionCommand`s. */
  commands: string;
  /** JSON object of query answers, as in a decision report. */
  queries?: string;
}

/** A next decision the server recorded with its task's result. */
export interface WireDecided {
  /** The task item's ref. */
  ref: string;
  workflowId: string;
  decisionId: string;
  /** Revision of its DecisionStarted: the worker's run continues from the event after it. */
  revision: number;
}

const WORK_ITEM = '{ kind ref workflowId taskId name version decisionId attemptId attempt input history historyFrom runFrom leaseExpiresAt }';
export const POLL_WORK = `mutation($input: PollWorkInput!) { pollWork(input: $input) ${WORK_ITEM} }`;
export const REPORT_WORK = `mutation($input: ReportWorkInput!) { reportWork(input: $input) { accepted rejected { ref code message } items ${WORK_ITEM} decided { ref workflowId decisionId revision } } }`;
export const HEARTBEAT = `mutation($input: HeartbeatInput!) { heartbeat(input: $input) { ref cancel reason } }`;
export const DECISION_HISTORY = `query($input: DecisionHistoryInput!) { decisionHistory(input: $input) }`;
