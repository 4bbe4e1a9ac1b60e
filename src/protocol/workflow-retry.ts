/**
 * Retrying a failed workflow (`retryWorkflows`) resumes it from its last successful decision:
 * the failure "never happened". Two pure functions over a workflow's history say what that means:
 *
 * - `failureCause`: the tasks whose failure the failing decision saw (their `TaskFailed` was
 *   recorded after the last decision before it that was recorded started). Those run again;
 *   tasks that failed earlier and that the code handled stay failed.
 * - `replayableHistory`: the history as workflow code must see it after a retry: for every
 *   `WorkflowRetried`, the failing decision (`DecisionStarted`, `DecisionCompleted`, the
 *   `StepFailed` of the inline steps it ran), the `WorkflowFailed`, and the `TaskFailed` of the
 *   reset tasks are left out, so the code replays
 *   up to its last successful decision and then waits on the reset tasks as if they were still
 *   running. Everything else (results of other tasks, timers, events) stays and is seen at the
 *   next decision. The stored history is never changed; this is a view of it.
 */

export interface RetryHistoryEvent {
  revision: number;
  type: string;
  data: any;
}

/** The seqs to reset, and where the failing decision started, in a (replayable) history. */
export function failureCause(history: RetryHistoryEvent[]): { resetTasks: number[]; decisionIndex: number; previousIndex: number } | null {
  let failed = -1;
  for (let i = history.length - 1; i >= 0; i--) {
    if (history[i].type === 'WorkflowFailed') {
      failed = i;
      break;
    }
  }
  if (failed === -1) return null;
  let decisionId: string | null = null;
  for (let i = failed - 1; i >= 0 && decisionId === null; i--) if (history[i].type === 'DecisionCompleted') decisionId = history[i].data.decisionId;
  let decisionIndex = -1;
  for (let i = failed - 1; i >= 0; i--) {
    if (history[i].type === 'DecisionStarted' && history[i].data.decisionId === decisionId) {
      decisionIndex = i;
      break;
    }
  }
  if (decisionIndex === -1) return null;
  // The decision before it whose outcome was recorded: one discarded (paused), lapsed or failed
  // in between saw those failures too, but nothing of what it saw was kept.
  const completed = new Set<string>();
  for (let i = 0; i < decisionIndex; i++) if (history[i].type === 'DecisionCompleted') completed.add(history[i].data.decisionId);
  let previousIndex = -1;
  for (let i = decisionIndex - 1; i >= 0; i--) {
    if (history[i].type === 'DecisionStarted' && completed.has(history[i].data.decisionId)) {
      previousIndex = i;
      break;
    }
  }
  const resetTasks = new Set<number>();
  for (let i = previousIndex + 1; i < decisionIndex; i++) {
    if (history[i].type === 'TaskFailed' && typeof history[i].data.seq === 'number') resetTasks.add(history[i].data.seq);
  }
  return { resetTasks: [...resetTasks].sort((a, b) => a - b), decisionIndex, previousIndex };
}

const REWOUND = new Set(['DecisionStarted', 'DecisionCompleted', 'DecisionFailed', 'DecisionTimedOut', 'DecisionDiscarded', 'WorkflowFailed', 'WorkflowRetried']);

/**
 * The history without what every retry rewound (see above). A history without retries is returned as it is.
 *
 * One pass, as `failureCause` and a filter of the whole history at each `WorkflowRetried` would
 * give, but at a cost linear in the history: a run retried a thousand times through an outage
 * cost 338 reads of each event (every retry scanned and filtered everything before it), and the
 * server computes it at every claim that carries a whole run. Rewound events become holes
 * (`null`), so indexes stay put; each retry looks only at the events since the one before (its
 * failing decision started after it), at the completed decision before that, and at the
 * `TaskFailed` events recorded after that decision.
 */
export function replayableHistory<E extends RetryHistoryEvent>(history: E[]): E[] {
  if (!history.some((e) => e.type === 'WorkflowRetried')) return history;
  const kept: Array<E | null> = [];
  /** Where each decision started (the latest `DecisionStarted` of its id) in `kept`. */
  const startedAt = new Map<string, number>();
  /** Indexes of the `DecisionCompleted` and `WorkflowFailed` events in `kept`, in order (holes skipped when read). */
  const completed: number[] = [];
  const failures: number[] = [];
  /** Indexes of the `TaskFailed` events in `kept`, in order. */
  const taskFailures: number[] = [];
  for (const event of history) {
    if (event.type !== 'WorkflowRetried') {
      const i = kept.length;
      kept.push(event);
      if (event.type === 'DecisionStarted') startedAt.set(event.data.decisionId, i);
      else if (event.type === 'DecisionCompleted') completed.push(i);
      else if (event.type === 'WorkflowFailed') failures.push(i);
      else if (event.type === 'TaskFailed') taskFailures.push(i);
      continue;
    }
    // failureCause over what is kept: the last WorkflowFailed,
    while (failures.length > 0 && kept[failures[failures.length - 1]] === null) failures.pop();
    const failed = failures.length > 0 ? failures[failures.length - 1] : -1;
    if (failed === -1) continue;
    // the last decision completed before it, and where that decision started,
    let c = completed.length - 1;
    while (c >= 0 && (kept[completed[c]] === null || completed[c] > failed)) c--;
    if (c < 0) continue;
    const decisionId = kept[completed[c]]!.data.decisionId;
    const decisionIndex = lastStartBefore(kept, startedAt, decisionId, failed);
    if (decisionIndex === -1) continue;
    // and the start of the last decision before it that completed before it (completions come in
    // the order their decisions started: a decision lapsed or discarded never completes).
    let previousIndex = -1;
    for (let p = c; p >= 0; p--) {
      const at = completed[p];
      if (at >= decisionIndex || kept[at] === null) continue;
      const start = lastStartBefore(kept, startedAt, kept[at]!.data.decisionId, decisionIndex);
      if (start !== -1) {
        previousIndex = start;
        break;
      }
    }
    // The tasks this retry reset (as recorded) fail no more after that decision.
    const reset = new Set<number>(event.data.resetTasks ?? []);
    const firstFailure = firstAfter(taskFailures, previousIndex);
    // The failing decision on is rewound, and the reset tasks' failures after the decision before it.
    for (let i = decisionIndex; i < kept.length; i++) {
      const e = kept[i];
      if (e !== null && (REWOUND.has(e.type) || e.type === 'StepFailed')) kept[i] = null;
    }
    const left: number[] = [];
    for (let t = firstFailure; t < taskFailures.length; t++) {
      const at = taskFailures[t];
      const e = kept[at];
      if (e === null) continue;
      if (reset.has(e.data.seq)) kept[at] = null;
      else left.push(at);
    }
    taskFailures.length = firstFailure;
    for (const at of left) taskFailures.push(at);
    // Every completion and failure from the failing decision on was rewound: off the stacks.
    while (completed.length > 0 && completed[completed.length - 1] >= decisionIndex) completed.pop();
    while (failures.length > 0 && failures[failures.length - 1] >= decisionIndex) failures.pop();
  }
  return kept.filter((e): e is E => e !== null);
}

/** Where decision `decisionId` started in `kept`, if that is before `before` and not rewound; -1 otherwise. */
function lastStartBefore(kept: Array<RetryHistoryEvent | null>, startedAt: Map<string, number>, decisionId: string, before: number): number {
  const at = startedAt.get(decisionId);
  return at !== undefined && at < before && kept[at] !== null ? at : -1;
}

/** The first position in `sorted` whose value is greater than `value`. */
function firstAfter(sorted: number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] > value) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
