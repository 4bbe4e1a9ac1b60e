/**
 * Work items are named by refs the worker echoes back: `wf:<id>` for a workflow's decision,
 * `wf:<id>#<seq>` for a task a workflow scheduled, `task:<id>` for a standalone task.
 */
export type WorkRef =
  | { kind: 'decision'; workflowId: string }
  | { kind: 'workflowTask'; workflowId: string; seq: number }
  | { kind: 'task'; taskId: string };

/** Digits a call number (`seq`) takes in a ref: calls are numbered 0 to `MAX_SEQ`. */
const SEQ_DIGITS = 9;
/**
 * The highest call number (`seq`) a decision command may carry: a larger one could not be named by
 * a `wf:<id>#<seq>` ref, so the task it scheduled could never be claimed.
 */
export const MAX_SEQ = 10 ** SEQ_DIGITS - 1;
const WORKFLOW_TASK_REF = new RegExp(`^wf:([0-9a-f-]{36})#(\\d{1,${SEQ_DIGITS}})$`, 'i');

export function formatRef(ref: WorkRef): string {
  switch (ref.kind) {
    case 'decision':
      return `wf:${ref.workflowId}`;
    case 'workflowTask':
      return `wf:${ref.workflowId}#${ref.seq}`;
    case 'task':
      return `task:${ref.taskId}`;
  }
}

export function parseRef(ref: string): WorkRef | null {
  let m = /^wf:([0-9a-f-]{36})$/i.exec(ref);
  if (m) return { kind: 'decision', workflowId: m[1] };
  m = WORKFLOW_TASK_REF.exec(ref);
  if (m) return { kind: 'workflowTask', workflowId: m[1], seq: Number(m[2]) };
  m = /^task:([0-9a-f-]{36})$/i.exec(ref);
  if (m) return { kind: 'task', taskId: m[1] };
  return null;
}
