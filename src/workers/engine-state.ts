import { Inject, Injectable } from '@nestjs/common';
import type { IEventHandler } from '@nestjs/cqrs';
import { Projection, StoredEvent } from '../event-store/event-registry.js';
import { CLOCK, type Clock } from '../shared/clock.js';
import { TASK_EVENT_TYPES, TaskEvent, TaskState, taskDecider, taskNextDueAt } from '../tasks/domain/task.decider.js';
import { ATTEMPT_EVENT_TYPES, isClaimable } from '../tasks/domain/task-attempts.js';
import {
  ExistingWorkflow,
  FINAL_STATUSES,
  WORKFLOW_EVENT_TYPES,
  WorkflowEvent,
  WorkflowState,
  baseName,
  claimableTasks,
  decisionClaimable,
  nextDueAt,
  pickVersion,
  workflowDecider,
} from '../workflows/domain/workflow.decider.js';
import { MinHeap } from './min-heap.js';
import { formatRef } from './work-refs.js';

type ExistingTask = Exclude<TaskState, { status: 'none' }>;

interface Waiter {
  workflows: Set<string>;
  tasks: Set<string>;
  wake: () => void;
}

interface ScopeIndex {
  /** Base workflow name → workflow ids with a claimable decision. */
  decisions: Map<string, Set<string>>;
  /** Task name → refs of claimable task attempts. */
  tasks: Map<string, Set<string>>;
  waiters: Set<Waiter>;
}

interface Indexed {
  scope: string;
  entries: Array<{ kind: 'decisions' | 'tasks'; name: string; ref: string }>;
  due: number | undefined;
}

export interface Candidate {
  ref: string;
  kind: 'decision' | 'task';
}

const scopeKey = (appId: string, environment: string) => `${appId}\u0000${environment}`;

/**
 * The engine's view of every workflow and standalone task that is not final: their folded
 * decider state, an index of the work a worker can claim now (per app and environment, by
 * name), parked pollers, and a heap of due times (timers, leases, retries). Fed by the
 * projection below, in log order; the store stays the authority (claims are appends with an
 * expected revision), this only says where to look.
 */
@Injectable()
export class EngineState {
  readonly workflows = new Map<string, ExistingWorkflow>();
  readonly tasks = new Map<string, ExistingTask>();
  private readonly scopes = new Map<string, ScopeIndex>();
  private readonly indexed = new Map<string, Indexed>();
  private readonly due = new MinHeap<{ ref: string; at: number }>();
  private dueListener: ((at: number) => void) | undefined;

  constructor(@Inject(CLOCK) private readonly clock: Clock) {}

  /** Told whenever a due time earlier than any before may have been added. */
  onDue(listener: (at: number) => void): void {
    this.dueListener = listener;
  }

  applyWorkflow(id: string, event: WorkflowEvent): void {
    const current: WorkflowState = this.workflows.get(id) ?? workflowDecider.initialState();
    if (current.status === 'none' && event.type !== 'WorkflowDispatched') return;
    const next = workflowDecider.evolve(current, event);
    if (next.status === 'none') return;
    // Failed workflows are kept (not indexed: nothing is claimable) so that a retry can resume them.
    if (FINAL_STATUSES.has(next.status) && next.status !== 'failed') this.workflows.delete(id);
    else this.workflows.set(id, next);
    this.reindexWorkflow(id);
  }

  applyTask(id: string, event: TaskEvent): void {
    const current: TaskState = this.tasks.get(id) ?? taskDecider.initialState();
    if (current.status === 'none' && event.type !== 'TaskDispatched') return;
    const next = taskDecider.evolve(current, event);
    if (next.status === 'none') return;
    // Failed tasks are kept (not claimable) so that retryTask can give them a fresh round.
    if (next.attempt.status === 'completed') this.tasks.delete(id);
    else this.tasks.set(id, next);
    this.reindexTask(id);
  }

  reindexWorkflow(id: string): void {
    const state = this.workflows.get(id);
    const now = this.clock.now();
    const entries: Indexed['entries'] = [];
    if (state) {
      if (decisionClaimable(state, now)) {
        entries.push({ kind: 'decisions', name: baseName(state.version ?? state.name), ref: id });
      }
      for (const seq of claimableTasks(state, now)) {
        entries.push({ kind: 'tasks', name: state.tasks[seq].name, ref: formatRef({ kind: 'workflowTask', workflowId: id, seq }) });
      }
    }
    this.reindex(`wf:${id}`, state ? scopeKey(state.appId, state.environment) : '', entries, state ? nextDueAt(state, now) : undefined);
  }

  reindexTask(id: string): void {
    const state = this.tasks.get(id);
    const now = this.clock.now();
    const entries: Indexed['entries'] = [];
    if (state && isClaimable(state.attempt, now)) entries.push({ kind: 'tasks', name: state.name, ref: formatRef({ kind: 'task', taskId: id }) });
    this.reindex(`task:${id}`, state ? scopeKey(state.appId, state.environment) : '', entries, state ? taskNextDueAt(state, now) : undefined);
  }

  /** Re-examines whatever was due by now (called by the ticker). */
  reindexRef(ref: string): void {
    if (ref.startsWith('wf:')) this.reindexWorkflow(ref.slice(3));
    else this.reindexTask(ref.slice(5));
  }

  private reindex(key: string, scope: string, entries: Indexed['entries'], due: number | undefined): void {
    const previous = this.indexed.get(key);
    if (previous) {
      const index = this.scopes.get(previous.scope);
      for (const entry of previous.entries) {
        const set = index?.[entry.kind].get(entry.name);
        set?.delete(entry.ref);
        if (set?.size === 0) index![entry.kind].delete(entry.name);
      }
    }
    if (entries.length === 0 && due === undefined) {
      this.indexed.delete(key);
      return;
    }
    this.indexed.set(key, { scope, entries, due });
    if (entries.length > 0) {
      const index = this.scope(scope);
      for (const entry of entries) {
        let set = index[entry.kind].get(entry.name);
        if (!set) index[entry.kind].set(entry.name, (set = new Set()));
        set.add(entry.ref);
      }
      this.wakeWaiters(index, entries);
    }
    if (due !== undefined && due !== previous?.due) {
      const top = this.due.peek();
      this.due.push(due, { ref: key, at: due });
      if (!top || due < top.key) this.dueListener?.(due);
    }
  }

  /** Refs whose due time has come, each once per scheduled due time still current. */
  takeDue(now: number): string[] {
    const refs = new Set<string>();
    for (let top = this.due.peek(); top && top.key <= now; top = this.due.peek()) {
      this.due.pop();
      const indexed = this.indexed.get(top.value.ref);
      if (indexed?.due === top.value.at) {
        indexed.due = undefined;
        refs.add(top.value.ref);
      }
    }
    return [...refs];
  }

  nextDue(): number | undefined {
    return this.due.peek()?.key;
  }

  /**
   * Up to `max` claimable items for a worker serving these workflow names (with versions) and
   * task names, skipping refs in `exclude` (claims already under way on this instance).
   */
  candidates(appId: string, environment: string, workflows: string[], tasks: string[], max: number, exclude: Set<string>): Candidate[] {
    const index = this.scopes.get(scopeKey(appId, environment));
    if (!index || max <= 0) return [];
    const found: Candidate[] = [];
    for (const base of new Set(workflows.map(baseName))) {
      for (const id of index.decisions.get(base) ?? []) {
        if (found.length >= max) return found;
        if (exclude.has(`wf:${id}`)) continue;
        const state = this.workflows.get(id);
        if (!state) continue;
        const version = state.version ?? pickVersion(state.name, workflows);
        if (version !== null && workflows.includes(version)) found.push({ ref: `wf:${id}`, kind: 'decision' });
      }
    }
    for (const name of tasks) {
      for (const ref of index.tasks.get(name) ?? []) {
        if (found.length >= max) return found;
        if (!exclude.has(ref)) found.push({ ref, kind: 'task' });
      }
    }
    return found;
  }

  /** How many decisions (by base workflow name) and task attempts (by task name) are claimable now in a scope. */
  waiting(appId: string, environment: string): { decisions: Map<string, number>; tasks: Map<string, number> } {
    const index = this.scopes.get(scopeKey(appId, environment));
    const count = (m: Map<string, Set<string>> | undefined) => new Map([...(m ?? [])].filter(([, s]) => s.size > 0).map(([name, s]) => [name, s.size]));
    return { decisions: count(index?.decisions), tasks: count(index?.tasks) };
  }

  /** Resolves when work for these names may have arrived, or after `timeoutMs`. */
  waitForWork(appId: string, environment: string, workflows: string[], tasks: string[], timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const index = this.scope(scopeKey(appId, environment));
    return new Promise((resolve) => {
      const waiter: Waiter = {
        workflows: new Set(workflows.map(baseName)),
        tasks: new Set(tasks),
        wake: () => {
          clearTimeout(timer);
          index.waiters.delete(waiter);
          signal?.removeEventListener('abort', waiter.wake);
          resolve();
        },
      };
      const timer = setTimeout(waiter.wake, timeoutMs);
      signal?.addEventListener('abort', waiter.wake, { once: true });
      index.waiters.add(waiter);
    });
  }

  private wakeWaiters(index: ScopeIndex, entries: Indexed['entries']): void {
    for (const waiter of index.waiters) {
      if (entries.some((e) => (e.kind === 'decisions' ? waiter.workflows : waiter.tasks).has(e.name))) waiter.wake();
    }
  }

  private scope(key: string): ScopeIndex {
    let index = this.scopes.get(key);
    if (!index) this.scopes.set(key, (index = { decisions: new Map(), tasks: new Map(), waiters: new Set() }));
    return index;
  }
}

@Projection([...WORKFLOW_EVENT_TYPES, ...TASK_EVENT_TYPES, ...ATTEMPT_EVENT_TYPES])
export class EngineProjection implements IEventHandler<StoredEvent> {
  constructor(private readonly engine: EngineState) {}

  handle(stored: StoredEvent): void {
    const { streamId } = stored.recorded;
    const event = { type: stored.type, data: stored.data };
    if (streamId.startsWith('workflow-')) this.engine.applyWorkflow(streamId.slice(9), event as WorkflowEvent);
    else if (streamId.startsWith('task-')) this.engine.applyTask(streamId.slice(5), event as TaskEvent);
  }
}
