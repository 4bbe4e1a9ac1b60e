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

/** The history without what every retry rewound (see above). A history without retries is returned as it is. */
export function replayableHistory<E extends RetryHistoryEvent>(history: E[]): E[] {
  if (!history.some((e) => e.type === 'WorkflowRetried')) return history;
  let kept: E[] = [];
  for (const event of history) {
    if (event.type !== 'WorkflowRetried') {
      kept.push(event);
      continue;
    }
    const cause = failureCause(kept);
    if (!cause) continue;
    const reset = new Set<number>(event.data.resetTasks ?? []);
    kept = kept.filter((e, i) => {
      if (i >= cause.decisionIndex && REWOUND.has(e.type)) return false;
      if (i > cause.previousIndex && e.type === 'TaskFailed' && reset.has(e.data.seq)) return false;
      // A step that failed in the failing decision runs again; the steps it completed stay done.
      if (i >= cause.decisionIndex && e.type === 'StepFailed') return false;
      return true;
    });
  }
  return kept;
}
