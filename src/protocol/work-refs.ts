/**
 * Work items are named by refs the worker echoes back: `wf:<id>` for a workflow's decision,
 * `wf:<id>#<seq>` for a task a workflow scheduled, `task:<id>` for a standalone task.
 */
export type WorkRef =
  | { kind: 'decision'; workflowId: string }
  | { kind: 'workflowTask'; workflowId: string; seq: number }
  | { kind: 'task'; taskId: string };

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
  m = /^wf:([0-9a-f-]{36})#(\d{1,9})$/i.exec(ref);
  if (m) return { kind: 'workflowTask', workflowId: m[1], seq: Number(m[2]) };
  m = /^task:([0-9a-f-]{36})$/i.exec(ref);
  if (m) return { kind: 'task', taskId: m[1] };
  return null;
}
