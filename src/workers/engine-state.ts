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
  decisionClaimable,
  decisionDueAt,
  pickVersion,
  taskClaimable,
  taskDueAt,
  timerDueAt,
  workflowDecider,
} from '../workflows/domain/workflow.decider.js';
import { MinHeap } from './min-heap.js';

type ExistingTask = Exclude<TaskState, { status: 'none' }>;

/** A kind of claimable entry and its name (`decisionKeyOf`, or the task name): what a poll waits for. */
type WatchKey = `${'decisions' | 'tasks'}\u0000${string}`;
const watchKey = (kind: 'decisions' | 'tasks', name: string): WatchKey => `${kind}\u0000${name}`;

/**
 * A poll as the index sees it, from its first claim round to its answer. `running`: it has looked
 * (`candidates`) and not parked since, so what arrives now it has not seen; `parked`: waiting, the
 * next entry of one of its keys may wake it; `pending`: woken for new work and not looked yet, so
 * it will see whatever arrives before it looks; `gone`: answered.
 */
interface Watcher {
  scope: ScopeIndex;
  keys: WatchKey[];
  state: 'running' | 'parked' | 'pending' | 'gone';
  /** `arrivals` when it last looked. */
  lookedAt: number;
  /** Ends its park: woken for work (`pending`) or not (its wait ran out, its signal). */
  release?: (state: 'running' | 'pending') => void;
}

interface ScopeIndex {
  /**
   * Decision key (`decisionKeyOf`) → workflow ids with a claimable decision: the exact version a
   * workflow keeps, or `*<base name>` for one that has none yet (any version of it may take it).
   */
  decisions: Map<string, Set<string>>;
  /** Task name → refs of claimable task attempts. */
  tasks: Map<string, Set<string>>;
  /** Parked polls by what they wait for, the longest parked first (a poll is in the set of each of its keys). */
  parked: Map<WatchKey, Set<Watcher>>;
  parkedCount: number;
  /** Polls woken for work that have not looked yet, by key: a new entry of that key needs no other poll woken. */
  pending: Map<WatchKey, number>;
  /** Polls of this instance (in any state), by key. */
  watching: Map<WatchKey, number>;
  /**
   * Per watched key, `arrivals` when an entry of it last arrived with no poll parked or pending
   * for it: the polls running then have not seen it, and look again before they park.
   */
  missed: Map<WatchKey, number>;
}

/** A poll's registration with the engine's index, from its first claim round to its answer (`EngineState.watch`). */
export interface PollWatch {
  /** Claimable items for the poll (as `EngineState.candidates`): its look, which ends its being woken. */
  candidates(max: number, exclude: Set<string>, caps?: KindCaps): Candidate[];
  /**
   * Resolves when work for its names may have arrived, or after `timeoutMs`, or when `signal`
   * aborts; at once when an entry of its names arrived since its last look that no other poll was
   * woken for.
   */
  park(timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /**
   * The poll answered (or failed): what is still claimable for its names beyond `exclude`
   * (claims under way) and what this instance claimed already goes to other parked polls.
   */
  leave(exclude: Set<string>): void;
}

/** One indexed item: a workflow's decision, one of its tasks or timers, or a standalone task. */
interface Indexed {
  scope: string;
  /** What a worker can claim now, if anything; `since`: when it became claimable (for queue age metrics). */
  entry: { kind: 'decisions' | 'tasks'; name: string; ref: string; since?: number } | undefined;
  due: number | undefined;
}

/** Claimable work of one name in one app and environment (for metrics). */
export interface QueueSample {
  appId: string;
  environment: string;
  kind: 'decision' | 'task';
  name: string;
  depth: number;
  /** When the longest-waiting item became claimable (epoch ms). */
  oldestSince: number;
}

export interface Candidate {
  ref: string;
  kind: 'decision' | 'task';
}

/** Most candidates of each kind (absent: no cap but the total), for a worker whose decision and task slots are counted apart. */
export type KindCaps = Partial<Record<Candidate['kind'], number>>;

/** What an index key names: the decision (`wf:<id>`), a task (`wf:<id>#<seq>`), a timer (`tm:<id>#<seq>`), a standalone task (`task:<id>`). */
export type DueRef =
  | { kind: 'decision'; workflowId: string }
  | { kind: 'workflowTask'; workflowId: string; seq: number }
  | { kind: 'timer'; workflowId: string; seq: number }
  | { kind: 'task'; taskId: string };

/**
 * Where a workflow's claimable decision is indexed: the version it keeps (its first decision's,
 * or the versioned name it was dispatched as), which only a worker serving that exact name takes;
 * else `*<name>`, which any worker serving a version of that name takes (`pickVersion`).
 */
const decisionKeyOf = (state: ExistingWorkflow): string => state.version ?? (baseName(state.name) === state.name ? `*${state.name}` : state.name);
/** The keys whose decisions a worker serving these workflow names may take. */
const decisionKeysFor = (workflows: string[]): Set<string> => new Set([...workflows, ...workflows.map((name) => `*${baseName(name)}`)]);
/** The base workflow name of a decision key (for metrics and the `workers` query). */
const decisionBaseName = (key: string): string => baseName(key.startsWith('*') ? key.slice(1) : key);

const scopeKey = (appId: string, environment: string) => `${appId}\u0000${environment}`;
const pollKeyOf = (scope: string, workerId: string, pollId: string) => `${scope}\u0000${workerId}\u0000${pollId}`;
const decisionKey = (id: string) => `wf:${id}`;
const taskKey = (id: string, seq: number) => `wf:${id}#${seq}`;
const timerKey = (id: string, seq: number) => `tm:${id}#${seq}`;

export function parseDueRef(key: string): DueRef {
  const hash = key.indexOf('#');
  if (key.startsWith('task:')) return { kind: 'task', taskId: key.slice(5) };
  if (key.startsWith('tm:')) return { kind: 'timer', workflowId: key.slice(3, hash), seq: Number(key.slice(hash + 1)) };
  if (hash >= 0) return { kind: 'workflowTask', workflowId: key.slice(3, hash), seq: Number(key.slice(hash + 1)) };
  return { kind: 'decision', workflowId: key.slice(3) };
}

/**
 * The engine's view of every workflow and standalone task that is not final: their folded
 * decider state, an index of the work a worker can claim now (per app and environment, by
 * name), parked pollers, and a heap of due times (timers, leases, retries). Fed by the
 * projection below, in log order; the store stays the authority (claims are appends with an
 * expected revision), this only says where to look.
 *
 * Indexing is per item: an event re-examines only what it touched (the decision, one task, one
 * timer), so its cost does not grow with the number of tasks a workflow has. Only a change of the
 * workflow's status (pause, resume, end) re-examines all of its open items (tasks waiting or running, timers started), not the run's whole history.
 */
@Injectable()
export class EngineState {
  readonly workflows = new Map<string, ExistingWorkflow>();
  readonly tasks = new Map<string, ExistingTask>();
  private readonly scopes = new Map<string, ScopeIndex>();
  private readonly indexed = new Map<string, Indexed>();
  private readonly due = new MinHeap<{ key: string; at: number }>();
  /**
   * The revision each held state was folded up to (by stream id), for the states folded here from
   * their run's first event on: the write path's cold load of a stream in flight starts from it
   * (`snapshot`) instead of reading the run back. A run grows without its code doing anything (a
   * task heartbeating for a day appended 5,760 `TaskLeaseExtended` at the default lease), and was
   * read back whole after every restart or eviction (found in review). A state loaded elsewhere
   * (`adopt`) has none: its revision is not known here. Keyed by id, one map a kind, the id the
   * held state's own key (a key built per stream id cost each workflow in flight a string).
   */
  private readonly revisions = { workflow: new Map<string, number>(), task: new Map<string, number>() };
  /**
   * Per held workflow, the calls of its run that are open (tasks waiting or running, timers
   * started): what a change of its status re-examines, instead of every task and timer the run
   * ever had.
   */
  private readonly openItems = new Map<string, OpenItems>();
  /**
   * Claims held under a poll id (`PollWorkInput.pollId`): poll key (`pollKeyOf`) → item keys, and
   * back. One entry per claim in flight that was made by a named poll; an item leaves when its
   * claim ends (reported, lapsed, the workflow ended), as reindexing it finds.
   */
  private readonly byPoll = new Map<string, Set<string>>();
  private readonly pollOf = new Map<string, string>();
  private dueListener: ((at: number) => void) | undefined;
  private reviver: ((kind: 'workflow' | 'task', id: string) => void) | undefined;
  private turn = 0;
  /**
   * What parked polls cost, for metrics and specs: claim rounds of `pollWork` (`first`: the round a
   * poll starts with; `again`: each round after it parked), parked polls woken for new work, and
   * the parked polls looked at to find them.
   */
  readonly pollCounts = { firstRounds: 0, rounds: 0, reportRounds: 0, wakeups: 0, waiterVisits: 0 };
  /** Entries that became claimable (with a poll of their key watching), counted: the clock of `Watcher.lookedAt` and `ScopeIndex.missed`. */
  private arrivals = 0;
  /**
   * Refs this instance claimed whose claim its projection has not applied yet: still in the
   * claimable sets, but neither a candidate (a claim of it would be refused) nor a reason to wake
   * a poll (`leave`). Cleared when the item is reindexed (its claim's event, or anything after).
   */
  private readonly taken = new Set<string>();
  /** Entries that became claimable in the events being applied now, told to parked polls once they are (`arriving`). */
  private toTell: Array<{ key: string; index: ScopeIndex; set: Set<string>; ref: string; watch: WatchKey }> = [];

  constructor(@Inject(CLOCK) private readonly clock: Clock) {}

  /** Told whenever a due time earlier than any before may have been added. */
  onDue(listener: (at: number) => void): void {
    this.dueListener = listener;
  }

  applyWorkflow(id: string, event: WorkflowEvent): void {
    const current: WorkflowState = this.workflows.get(id) ?? workflowDecider.initialState();
    if (current.status === 'none' && event.type === 'WorkflowRetried') return this.reviver?.('workflow', id);
    if (current.status === 'none' && event.type !== 'WorkflowDispatched' && event.type !== 'WorkflowContinuedAsNew') return;
    const next = workflowDecider.evolve(current, event);
    if (next.status === 'none') return;
    // Ended workflows go, failed ones too: a retry brings one back from its stream (`onRevived`),
    // as after a restart, which loads only the workflows in flight. Kept, every failure since the
    // start stayed in memory for good (retention deleting their streams did not drop them).
    if (FINAL_STATUSES.has(next.status)) this.workflows.delete(id);
    else this.workflows.set(id, next);
    this.foldedTo('workflow', id, event.revision, FINAL_STATUSES.has(next.status) ? 'gone' : event.type === 'WorkflowDispatched' || event.type === 'WorkflowContinuedAsNew' ? 'start' : 'next');
    const seq = (event.data as { seq?: unknown }).seq;
    const wasOpen = this.openItems.get(id);
    const open = FINAL_STATUSES.has(next.status) ? undefined : this.trackOpen(id, wasOpen, event, next);
    if (!open) this.openItems.delete(id);
    if (current.status !== next.status || event.type === 'WorkflowContinuedAsNew') {
      // Everything the workflow had open may have changed (paused, resumed, ended, a new run).
      // Only an open item (a task waiting or running, a timer started) can be claimable or due,
      // in either state: a completed task or a fired timer left the index with the event that
      // ended it. Re-examining the run's whole history of tasks and timers held the event loop
      // 1.5 s at each pause and resume of a workflow that had completed 100,000 tasks (found in
      // review); the open items are kept as they change (`openItems`).
      const tasks = new Set([...(wasOpen?.tasks ?? []), ...(open?.tasks ?? [])]);
      const timers = new Set([...(wasOpen?.timers ?? []), ...(open?.timers ?? [])]);
      for (const s of tasks) this.reindexWorkflowItem(id, { kind: 'workflowTask', workflowId: id, seq: s });
      for (const s of timers) this.reindexWorkflowItem(id, { kind: 'timer', workflowId: id, seq: s });
    } else if (typeof seq === 'number') {
      if (event.type.startsWith('Timer')) this.reindexWorkflowItem(id, { kind: 'timer', workflowId: id, seq });
      else if (event.type.startsWith('Task')) this.reindexWorkflowItem(id, { kind: 'workflowTask', workflowId: id, seq });
    }
    this.reindexWorkflowItem(id, { kind: 'decision', workflowId: id });
  }

  applyTask(id: string, event: TaskEvent): void {
    const current: TaskState = this.tasks.get(id) ?? taskDecider.initialState();
    if (current.status === 'none' && event.type === 'TaskRetried') return this.reviver?.('task', id);
    if (current.status === 'none' && event.type !== 'TaskDispatched') return;
    const next = taskDecider.evolve(current, event);
    if (next.status === 'none') return;
    // Ended tasks go, failed ones too: retryTask brings one back from its stream (`onRevived`).
    const ended = next.attempt.status === 'completed' || next.attempt.status === 'failed';
    if (ended) this.tasks.delete(id);
    else this.tasks.set(id, next);
    this.foldedTo('task', id, (event as { revision?: bigint }).revision, ended ? 'gone' : event.type === 'TaskDispatched' ? 'start' : 'next');
    this.reindexTask(id);
  }

  private reindexWorkflowItem(id: string, item: Exclude<DueRef, { kind: 'task' }>): void {
    const state = this.workflows.get(id);
    const now = this.clock.now();
    const scope = state ? scopeKey(state.appId, state.environment) : '';
    switch (item.kind) {
      case 'decision': {
        const entry = state && decisionClaimable(state, now) ? { kind: 'decisions' as const, name: decisionKeyOf(state), ref: id } : undefined;
        const decision = state?.status === 'running' ? state.decision : null;
        this.claimedBy(decisionKey(id), decision?.pollId === undefined ? undefined : pollKeyOf(scope, decision.workerId, decision.pollId));
        return this.reindex(decisionKey(id), scope, entry, state ? decisionDueAt(state, now) : undefined);
      }
      case 'workflowTask': {
        const key = taskKey(id, item.seq);
        const entry = state && taskClaimable(state, item.seq, now) ? { kind: 'tasks' as const, name: state.tasks.get(item.seq)!.name, ref: key } : undefined;
        const attempt = state?.status === 'running' ? state.tasks.get(item.seq)?.attempt : undefined;
        this.claimedBy(key, attempt?.status === 'started' && attempt.pollId !== undefined ? pollKeyOf(scope, attempt.workerId, attempt.pollId) : undefined);
        return this.reindex(key, scope, entry, state ? taskDueAt(state, item.seq, now) : undefined);
      }
      case 'timer':
        return this.reindex(timerKey(id, item.seq), scope, undefined, state ? timerDueAt(state, item.seq) : undefined);
    }
  }

  reindexTask(id: string): void {
    const state = this.tasks.get(id);
    const now = this.clock.now();
    const key = `task:${id}`;
    const entry = state && isClaimable(state.attempt, now) ? { kind: 'tasks' as const, name: state.name, ref: key } : undefined;
    const scope = state ? scopeKey(state.appId, state.environment) : '';
    const attempt = state?.attempt;
    this.claimedBy(key, attempt?.status === 'started' && attempt.pollId !== undefined ? pollKeyOf(scope, attempt.workerId, attempt.pollId) : undefined);
    this.reindex(key, scope, entry, state ? taskNextDueAt(state, now) : undefined);
  }

  /** Notes which named poll holds the claim on `key` now (undefined: none). */
  private claimedBy(key: string, poll: string | undefined): void {
    const previous = this.pollOf.get(key);
    if (previous === poll) return;
    if (previous !== undefined) {
      const keys = this.byPoll.get(previous);
      keys?.delete(key);
      if (keys?.size === 0) this.byPoll.delete(previous);
      this.pollOf.delete(key);
    }
    if (poll === undefined) return;
    this.pollOf.set(key, poll);
    let keys = this.byPoll.get(poll);
    if (!keys) this.byPoll.set(poll, (keys = new Set()));
    keys.add(key);
  }

  /**
   * The items whose current claim was made by poll `pollId` of `workerId` (a decision: `wf:<id>`;
   * a workflow's task: `wf:<id>#<seq>`; a standalone task: `task:<id>`), as this instance has
   * projected the log: where to look, the streams say whether the claims still hold.
   */
  claimsOfPoll(appId: string, environment: string, workerId: string, pollId: string): DueRef[] {
    return [...(this.byPoll.get(pollKeyOf(scopeKey(appId, environment), workerId, pollId)) ?? [])].map(parseDueRef);
  }

  /** Re-examines an item whose due time came (called by the ticker). */
  reindexRef(key: string): void {
    const ref = parseDueRef(key);
    if (ref.kind === 'task') this.reindexTask(ref.taskId);
    else this.reindexWorkflowItem(ref.workflowId, ref);
  }

  private reindex(key: string, scope: string, entry: Indexed['entry'], due: number | undefined): void {
    const previous = this.indexed.get(key);
    this.taken.delete(key);
    if (entry) entry.since = previous?.entry?.kind === entry.kind && previous.entry.ref === entry.ref ? previous.entry.since : this.clock.now();
    if (previous?.entry) {
      const index = this.scopes.get(previous.scope);
      const set = index?.[previous.entry.kind].get(previous.entry.name);
      set?.delete(previous.entry.ref);
      if (set?.size === 0) index![previous.entry.kind].delete(previous.entry.name);
    }
    if (entry === undefined && due === undefined) {
      this.indexed.delete(key);
      return;
    }
    this.indexed.set(key, { scope, entry, due });
    if (entry) {
      const index = this.scope(scope);
      let set = index[entry.kind].get(entry.name);
      if (!set) index[entry.kind].set(entry.name, (set = new Set()));
      set.add(entry.ref);
      this.arriving(key, index, set, entry.ref, watchKey(entry.kind, entry.name));
    }
    if (due !== undefined && due !== previous?.due) {
      const top = this.due.peek();
      this.due.push(due, { key, at: due });
      if (!top || due < top.key) this.dueListener?.(due);
      if (this.due.overgrown) this.compactDue();
    }
  }

  /**
   * Drops the heap's stale entries: due times that changed since (a lease extended), or whose
   * item went (a timer canceled, a workflow ended). `takeDue` skips them when they reach the top,
   * but a canceled 30-day timer waited there 30 days, so the heap grew with every timer set in
   * that horizon. Done when the heap is `overgrown` (doubled since the last time): O(1) a push, amortized.
   */
  private compactDue(): void {
    const kept = new Set<string>();
    this.due.retain((at, { key }) => {
      if (this.indexed.get(key)?.due !== at || kept.has(key)) return false;
      kept.add(key);
      return true;
    });
  }

  /** Keys whose due time has come, each once per scheduled due time still current. */
  takeDue(now: number): string[] {
    const keys = new Set<string>();
    for (let top = this.due.peek(); top && top.key <= now; top = this.due.peek()) {
      this.due.pop();
      const indexed = this.indexed.get(top.value.key);
      if (indexed?.due === top.value.at) {
        indexed.due = undefined;
        keys.add(top.value.key);
      }
    }
    return [...keys];
  }

  nextDue(): number | undefined {
    return this.due.peek()?.key;
  }

  /** How many decisions (by base workflow name) and task attempts (by task name) are claimable now in a scope. */
  waiting(appId: string, environment: string): { decisions: Map<string, number>; tasks: Map<string, number> } {
    const index = this.scopes.get(scopeKey(appId, environment));
    const count = (m: Map<string, Set<string>> | undefined, nameOf: (key: string) => string = (key) => key) => {
      const counts = new Map<string, number>();
      for (const [key, set] of m ?? []) if (set.size > 0) counts.set(nameOf(key), (counts.get(nameOf(key)) ?? 0) + set.size);
      return counts;
    };
    return { decisions: count(index?.decisions, decisionBaseName), tasks: count(index?.tasks) };
  }

  /**
   * Told when an ended workflow or task comes back (retryWorkflows, retryTask): this index keeps
   * nothing of ended work, so the caller loads its state from the stream and hands it to `adopt`.
   */
  onRevived(loader: (kind: 'workflow' | 'task', id: string) => void): void {
    this.reviver = loader;
  }

  /**
   * The open items of a held workflow after `event` (see `openItems`): those of a new run are
   * looked up in its state (a run starts with none), otherwise only the call the event names
   * changes (a retry resets the tasks it lists).
   */
  private trackOpen(id: string, open: OpenItems | undefined, event: WorkflowEvent, next: ExistingWorkflow): OpenItems {
    if (!open || event.type === 'WorkflowDispatched' || event.type === 'WorkflowContinuedAsNew') {
      const fresh = openItemsOf(next);
      this.openItems.set(id, fresh);
      return fresh;
    }
    const seqs = event.type === 'WorkflowRetried' ? event.data.resetTasks : typeof (event.data as { seq?: unknown }).seq === 'number' ? [(event.data as { seq: number }).seq] : [];
    let now = open;
    for (const seq of seqs) {
      if (event.type.startsWith('Timer')) now = withOpen(now, 'timers', seq, next.timers.get(seq)?.status === 'started');
      else if (event.type.startsWith('Task') || event.type === 'WorkflowRetried') now = withOpen(now, 'tasks', seq, isOpenTask(next.tasks.get(seq)));
    }
    if (now !== open) this.openItems.set(id, now);
    return now;
  }

  /** Records (or forgets) the revision a held state was folded up to (see `revisions`). */
  private foldedTo(kind: 'workflow' | 'task', id: string, revision: bigint | undefined, step: 'start' | 'next' | 'gone'): void {
    const revisions = this.revisions[kind];
    if (revision !== undefined && (step === 'start' || (step === 'next' && revisions.has(id)))) revisions.set(id, Number(revision));
    else revisions.delete(id);
  }

  /**
   * The state of a workflow (`workflow-<id>`) or standalone task (`task-<id>`) in flight, with the
   * revision it was folded up to, when it was folded here from its run's start: what a cold load
   * of its stream may start from (`StreamQueues.useSnapshots`), reading only what followed.
   */
  snapshot(streamId: string): { state: WorkflowState | TaskState; revision: bigint } | undefined {
    const [kind, id] = streamId.startsWith('workflow-') ? (['workflow', streamId.slice(9)] as const) : streamId.startsWith('task-') ? (['task', streamId.slice(5)] as const) : [];
    const revision = kind && this.revisions[kind].get(id);
    if (revision === undefined) return undefined;
    const state = kind === 'workflow' ? this.workflows.get(id) : this.tasks.get(id!);
    return state && { state, revision: BigInt(revision) };
  }

  /** Indexes a workflow or task loaded from its stream (see `onRevived`). */
  adopt(kind: 'workflow' | 'task', id: string, state: WorkflowState | TaskState): void {
    this.revisions[kind].delete(id);
    if (kind === 'task') {
      const task = state as TaskState;
      if (task.status === 'none' || task.attempt.status === 'completed' || task.attempt.status === 'failed') return;
      this.tasks.set(id, task);
      this.reindexTask(id);
      return;
    }
    const workflow = state as WorkflowState;
    if (workflow.status === 'none' || FINAL_STATUSES.has(workflow.status)) return;
    this.workflows.set(id, workflow);
    this.openItems.set(id, openItemsOf(workflow));
    for (const seq of workflow.tasks.keys()) this.reindexWorkflowItem(id, { kind: 'workflowTask', workflowId: id, seq });
    for (const seq of workflow.timers.keys()) this.reindexWorkflowItem(id, { kind: 'timer', workflowId: id, seq });
    this.reindexWorkflowItem(id, { kind: 'decision', workflowId: id });
  }

  /**
   * Up to `max` claimable items for a worker serving these workflow names (with versions) and
   * task names, skipping refs in `exclude` (claims already under way on this instance) and those
   * this instance claimed whose claim it has not projected yet (`claimed`). Fair:
   * decisions of each workflow name and tasks of each task name take turns, starting with a
   * different one at each call, so no name starves while others have a backlog. `caps` bounds
   * each kind apart (a worker's decision and task slots are counted apart).
   */
  candidates(appId: string, environment: string, workflows: string[], tasks: string[], max: number, exclude: Set<string>, caps: KindCaps = {}): Candidate[] {
    const index = this.scopes.get(scopeKey(appId, environment));
    if (!index || max <= 0) return [];
    const sources: Array<{ kind: Candidate['kind']; items: Iterator<Candidate> }> = [];
    if ((caps.decision ?? max) > 0) {
      // The versions it serves, and the workflows of their base names that have no version yet:
      // a workflow another version keeps is not looked at (a v2 worker walked every claimable v1
      // decision at each poll, however many were waiting for a v1 worker).
      for (const key of decisionKeysFor(workflows)) {
        const ids = index.decisions.get(key);
        if (ids?.size) sources.push({ kind: 'decision', items: this.decisionCandidates(ids, workflows, exclude) });
      }
    }
    if ((caps.task ?? max) > 0) {
      for (const name of new Set(tasks)) {
        const refs = index.tasks.get(name);
        if (refs?.size) sources.push({ kind: 'task', items: taskCandidates(refs, exclude, this.taken) });
      }
    }
    const found: Candidate[] = [];
    const taken = { decision: 0, task: 0 };
    const start = this.turn++ % Math.max(1, sources.length);
    let live = [...sources.slice(start), ...sources.slice(0, start)];
    while (found.length < max && live.length > 0) {
      for (let i = 0; i < live.length && found.length < max; ) {
        const source = live[i];
        const next = source.items.next();
        if (next.done) {
          live.splice(i, 1);
          continue;
        }
        found.push(next.value);
        if (++taken[source.kind] < (caps[source.kind] ?? max)) {
          i++;
          continue;
        }
        // A kind at its cap (the worker's slots for it are full) takes no more turns.
        const before = live.slice(0, i).filter((s) => s.kind !== source.kind).length;
        live = live.filter((s) => s.kind !== source.kind);
        i = before;
      }
    }
    return found;
  }

  private *decisionCandidates(ids: Set<string>, workflows: string[], exclude: Set<string>): Iterator<Candidate> {
    for (const id of ids) {
      if (exclude.has(`wf:${id}`) || this.taken.has(`wf:${id}`)) continue;
      const state = this.workflows.get(id);
      if (!state) continue;
      const version = state.version ?? pickVersion(state.name, workflows);
      if (version !== null && workflows.includes(version)) yield { ref: `wf:${id}`, kind: 'decision' };
    }
  }

  /** Told by the engine that this instance claimed `ref` (an index key): no poll is woken for it any more (`leave`). */
  claimed(ref: string): void {
    if (this.indexed.get(ref)?.entry) this.taken.add(ref);
  }

  /**
   * Registers a poll for these workflow names (with versions) and task names, for its whole life:
   * it looks (`candidates`), parks, looks again, and at the end leaves. New work wakes one parked
   * poll per entry (the longest parked of those serving its name), not every poll serving it; a
   * poll woken that does not take what it was woken for hands it on when it leaves.
   */
  watch(appId: string, environment: string, workflows: string[], tasks: string[]): PollWatch {
    const index = this.scope(scopeKey(appId, environment));
    const watcher: Watcher = {
      scope: index,
      keys: [...[...decisionKeysFor(workflows)].map((k) => watchKey('decisions', k)), ...[...new Set(tasks)].map((t) => watchKey('tasks', t))],
      state: 'running',
      lookedAt: this.arrivals,
    };
    for (const key of watcher.keys) index.watching.set(key, (index.watching.get(key) ?? 0) + 1);
    return {
      candidates: (max, exclude, caps) => {
        this.look(watcher);
        return this.candidates(appId, environment, workflows, tasks, max, exclude, caps);
      },
      park: (timeoutMs, signal) => this.park(watcher, timeoutMs, signal),
      leave: (exclude) => this.leave(watcher, exclude),
    };
  }

  private look(watcher: Watcher): void {
    if (watcher.state === 'pending') this.unpend(watcher);
    if (watcher.state !== 'gone') watcher.state = 'running';
    watcher.lookedAt = this.arrivals;
  }

  private park(watcher: Watcher, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const index = watcher.scope;
    // Work arrived since its look that no poll was woken for: look again rather than park.
    if (watcher.state !== 'running' || signal?.aborted || watcher.keys.some((key) => (index.missed.get(key) ?? -1) > watcher.lookedAt)) return Promise.resolve();
    return new Promise((resolve) => {
      const release = (state: 'running' | 'pending') => {
        if (watcher.state !== 'parked') return;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        watcher.release = undefined;
        index.parkedCount--;
        for (const key of watcher.keys) {
          const parked = index.parked.get(key)!;
          parked.delete(watcher);
          if (parked.size === 0) index.parked.delete(key);
          if (state === 'pending') index.pending.set(key, (index.pending.get(key) ?? 0) + 1);
        }
        watcher.state = state;
        resolve();
      };
      const onAbort = () => release('running');
      const timer = setTimeout(onAbort, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      watcher.state = 'parked';
      watcher.release = release;
      index.parkedCount++;
      for (const key of watcher.keys) {
        let parked = index.parked.get(key);
        if (!parked) index.parked.set(key, (parked = new Set()));
        parked.add(watcher);
      }
    });
  }

  private unpend(watcher: Watcher): void {
    const index = watcher.scope;
    for (const key of watcher.keys) {
      const n = (index.pending.get(key) ?? 1) - 1;
      if (n > 0) index.pending.set(key, n);
      else index.pending.delete(key);
    }
  }

  private leave(watcher: Watcher, exclude: Set<string>): void {
    if (watcher.state === 'gone') return;
    watcher.release?.('running');
    if (watcher.state === 'pending') this.unpend(watcher);
    watcher.state = 'gone';
    const index = watcher.scope;
    for (const key of watcher.keys) {
      const n = (index.watching.get(key) ?? 1) - 1;
      if (n > 0) {
        index.watching.set(key, n);
      } else {
        index.watching.delete(key);
        index.missed.delete(key);
      }
    }
    // What it was woken for and did not take (its limits, its answer's room, its end) goes to
    // other parked polls: as many as there are such entries, less the polls already woken.
    for (const key of watcher.keys) {
      const parked = index.parked.get(key);
      if (!parked) continue;
      const [kind, name] = key.split('\u0000') as ['decisions' | 'tasks', string];
      const refs = index[kind].get(name);
      if (!refs) continue;
      let wanted = -(index.pending.get(key) ?? 0);
      for (const ref of refs) {
        const ixKey = kind === 'decisions' ? decisionKey(ref) : ref;
        if (exclude.has(ixKey) || this.taken.has(ixKey)) continue;
        if (++wanted >= parked.size) break;
      }
      for (; wanted > 0 && parked.size > 0; wanted--) this.wakeOne(parked);
    }
  }

  /**
   * An entry became claimable: parked polls are told once the events applied with it are (a
   * microtask later), and only if it is still claimable then. The events of one append come in
   * one batch, and most claimable entries stop being so within it: a dispatch claimed for a
   * parked poll (eager start), a task claimed by the report that scheduled it, a decision made
   * with a task's report. Each woke a parked poll that found nothing: four claim rounds for
   * nothing a two-task workflow at a low rate (`baton_poll_rounds_total{round="again"}`).
   */
  private arriving(key: string, index: ScopeIndex, set: Set<string>, ref: string, watch: WatchKey): void {
    this.toTell.push({ key, index, set, ref, watch });
    if (this.toTell.length > 1) return;
    queueMicrotask(() => {
      const arrived = this.toTell;
      this.toTell = [];
      for (const a of arrived) if (a.set.has(a.ref) && !this.taken.has(a.key)) this.arrived(a.index, a.watch);
    });
  }

  /** An entry of `key` became claimable: one parked poll serving it is woken, unless one woken already has yet to look. */
  private arrived(index: ScopeIndex, key: WatchKey): void {
    if (!index.watching.has(key)) return;
    const seq = ++this.arrivals;
    const parked = index.parked.get(key);
    if (parked) this.wakeOne(parked);
    else if (!index.pending.has(key)) index.missed.set(key, seq);
  }

  private wakeOne(parked: Set<Watcher>): void {
    const first: Watcher = parked.values().next().value!;
    this.pollCounts.waiterVisits++;
    this.pollCounts.wakeups++;
    first.release!('pending');
  }

  /**
   * Read-only, for metrics: claimable work by app, environment, kind and name, and parked polls.
   * Read from the claimable sets alone: walking every indexed item cost each scrape a visit of
   * every timer and lease in flight (a million sleeping workflows, a million visits).
   */
  queueSnapshot(): { queues: QueueSample[]; parkedPolls: number } {
    const queues = new Map<string, QueueSample>();
    const now = this.clock.now();
    let parkedPolls = 0;
    for (const [scope, index] of this.scopes) {
      parkedPolls += index.parkedCount;
      const [appId, environment] = scope.split('\u0000');
      for (const kind of ['decisions', 'tasks'] as const) {
        for (const [key, refs] of index[kind]) {
          if (refs.size === 0) continue;
          const name = kind === 'decisions' ? decisionBaseName(key) : key;
          const queue = `${scope}\u0000${kind}\u0000${name}`;
          let sample = queues.get(queue);
          if (!sample) queues.set(queue, (sample = { appId, environment, kind: kind === 'decisions' ? 'decision' : 'task', name, depth: 0, oldestSince: Infinity }));
          sample.depth += refs.size;
          for (const ref of refs) {
            const since = this.indexed.get(kind === 'decisions' ? decisionKey(ref) : ref)?.entry?.since ?? now;
            if (since < sample.oldestSince) sample.oldestSince = since;
          }
        }
      }
    }
    return { queues: [...queues.values()], parkedPolls };
  }

  private scope(key: string): ScopeIndex {
    let index = this.scopes.get(key);
    if (!index) this.scopes.set(key, (index = { decisions: new Map(), tasks: new Map(), parked: new Map(), parkedCount: 0, pending: new Map(), watching: new Map(), missed: new Map() }));
    return index;
  }
}

/**
 * The open calls of a workflow's run (see `EngineState.openItems`). Most workflows in flight have
 * none (waiting for an event, a child, a signal): they share `NO_OPEN_ITEMS` and its empty sets,
 * which are never changed (`withOpen` copies on the first add). Two sets each cost a million
 * waiting workflows about 250 MB of heap (heap per waiting workflow 1,332 → BENCHMARKS).
 */
interface OpenItems {
  tasks: Set<number>;
  timers: Set<number>;
}

const NO_SEQS: Set<number> = new Set();
const NO_OPEN_ITEMS: OpenItems = Object.freeze({ tasks: NO_SEQS, timers: NO_SEQS });

/** `open` with `seq` of `kind` open or not: the same object when nothing changes, a new one in place of the shared `NO_OPEN_ITEMS`. */
function withOpen(open: OpenItems, kind: 'tasks' | 'timers', seq: number, isOpen: boolean): OpenItems {
  const seqs = open[kind];
  if (seqs.has(seq) === isOpen) return open;
  if (isOpen) {
    const grown = seqs === NO_SEQS ? new Set([seq]) : seqs.add(seq);
    return open === NO_OPEN_ITEMS ? { ...open, [kind]: grown } : Object.assign(open, { [kind]: grown });
  }
  seqs.delete(seq);
  if (seqs.size === 0) open[kind] = NO_SEQS;
  return open.tasks === NO_SEQS && open.timers === NO_SEQS ? NO_OPEN_ITEMS : open;
}

const isOpenTask = (task: { attempt: { status: string } } | undefined): boolean => task?.attempt.status === 'pending' || task?.attempt.status === 'started';

function openItemsOf(state: ExistingWorkflow): OpenItems {
  let open = NO_OPEN_ITEMS;
  for (const [seq, task] of state.tasks) if (isOpenTask(task)) open = withOpen(open, 'tasks', seq, true);
  for (const [seq, timer] of state.timers) if (timer.status === 'started') open = withOpen(open, 'timers', seq, true);
  return open;
}

function* taskCandidates(refs: Set<string>, exclude: Set<string>, taken: Set<string>): Iterator<Candidate> {
  for (const ref of refs) if (!exclude.has(ref) && !taken.has(ref)) yield { ref, kind: 'task' };
}

@Projection([...WORKFLOW_EVENT_TYPES, ...TASK_EVENT_TYPES, ...ATTEMPT_EVENT_TYPES])
export class EngineProjection implements IEventHandler<StoredEvent> {
  constructor(private readonly engine: EngineState) {}

  handle(stored: StoredEvent): void {
    const { streamId } = stored.recorded;
    const event = { type: stored.type, data: stored.data, revision: stored.recorded.revision };
    if (streamId.startsWith('workflow-')) this.engine.applyWorkflow(streamId.slice(9), event as WorkflowEvent);
    else if (streamId.startsWith('task-')) this.engine.applyTask(streamId.slice(5), event as TaskEvent);
  }
}
