import { Inject, Injectable, Logger } from '@nestjs/common';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { CommandContext, DeciderRunner, type RunOptions, type RunResult } from '../event-store/decider-runner.js';
import type { Decider, DomainEvent } from '../shared/decider.js';
import { EVENT_STORE, type EventStore, Json, RecordedEvent } from '../event-store/event-store.port.js';
import { CLOCK, type Clock } from '../shared/clock.js';
import { BadUserInputError, BatonError, ConflictError, NotFoundError } from '../shared/errors.js';
import { currentCorrelationId } from '../shared/request-context.js';
import { uuidv7 } from '../shared/ids.js';
import { callId } from '../protocol/decision-commands.js';
import { type TaskState, taskDecider } from '../tasks/domain/task.decider.js';
import { type AttemptState, DEFAULT_RETRY_POLICY, RetryPolicy, TaskError, holdsAttempt, iso } from '../tasks/domain/task-attempts.js';
import { ExistingWorkflow, FINAL_STATUSES, NextDecision, WorkflowEventData, type WorkflowState, baseName, workflowDecider } from '../workflows/domain/workflow.decider.js';
import { replayableHistory } from '../protocol/workflow-retry.js';
import { WorkflowDispatcher } from '../workflows/commands/dispatch-workflow/dispatch-workflow.js';
import { Candidate, type DueRef, EngineState, type KindCaps, type PollWatch } from './engine-state.js';
import { formatRef, parseRef } from '../protocol/work-refs.js';
import { parseJson, rejection, reportedCommands } from './worker-input-limits.js';
import { currentAnswerBudget } from '../graphql/answer-budget.js';
import { TokensReadModel } from '../tokens/tokens.projection.js';
import { ReadFence } from '../event-store/read-fence.js';
import { withReleasedData } from '../workflows/released-events.js';
import {
  DecidedWork,
  DecisionHistoryInput,
  DecisionReportInput,
  HeartbeatInput,
  HeartbeatResult,
  NextDecisionInput,
  PollWorkInput,
  ReportRejection,
  ReportWorkInput,
  TaskReportInput,
  WorkItem,
  WorkKind,
} from './worker-protocol.types.js';

/** A worker's request as the engine takes it: its input, and the token it came with. */
type FromWorker<T> = T & { tokenId: string };

const workerContext = (input: { appId: string; environment: string; workerId: string; tokenId: string }): CommandContext => ({
  actor: `worker:${input.workerId}`,
  tokenId: input.tokenId,
  appId: input.appId,
  environment: input.environment,
  correlationId: currentCorrelationId() ?? uuidv7(),
});

/**
 * The server side of the worker protocol: claims (appends with an expected revision), reports
 * and heartbeats. A poll answers the moment it has claimed something; with nothing to claim it
 * parks until the engine state announces work for the worker's names, or its wait runs out.
 */
@Injectable()
export class EngineService {
  private readonly logger = new Logger('Engine');
  private readonly claiming = new Set<string>();
  /** Long polls parked here, by app and environment. */
  private readonly parked = new Map<string, Set<ParkedPoll>>();

  constructor(
    private readonly engine: EngineState,
    private readonly runner: DeciderRunner,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    dispatcher: WorkflowDispatcher,
    private readonly tokens: TokensReadModel,
    private readonly fence: ReadFence,
  ) {
    engine.onRevived((kind, id) => void this.revive(kind, id));
    // A cold load of a workflow or task in flight (after a restart, or once the stream cache
    // dropped it) starts from the state the engine holds and reads only what followed: a run that
    // heartbeats for a day is not read back at its next command.
    runner.queues.useSnapshots(workflowDecider, (streamId) => engine.snapshot(streamId) as { state: WorkflowState; revision: bigint } | undefined);
    runner.queues.useSnapshots(taskDecider, (streamId) => engine.snapshot(streamId) as { state: TaskState; revision: bigint } | undefined);
    dispatcher.onDispatch((dispatch) => this.offerDecision(dispatch));
  }

  /**
   * Every write of the worker protocol: through the stream queues, without waiting for this
   * instance's read models (a worker reads none of them; the engine's index catching up a moment
   * later only means a poll may try a claim that the queue then refuses).
   */
  private write<C, E extends DomainEvent, S>(
    streamId: string,
    decider: Decider<C, E, S>,
    command: C | ((state: S) => C),
    context: CommandContext,
    options: RunOptions = {},
  ): Promise<RunResult<E, S>> {
    return this.runner.run(streamId, decider, command, context, { ...options, readYourWrites: false });
  }

  /** Loads a retried workflow or task from its stream into the engine's index. */
  private async revive(kind: 'workflow' | 'task', id: string): Promise<void> {
    const context = { actor: 'system', appId: '', environment: '', correlationId: uuidv7() };
    try {
      const { state } = kind === 'workflow' ? await this.runner.state(`workflow-${id}`, workflowDecider, context) : await this.runner.state(`task-${id}`, taskDecider, context);
      this.engine.adopt(kind, id, state);
    } catch (error) {
      this.logger.warn(`could not load retried ${kind} ${id}: ${(error as Error).message}`);
    }
  }

  /**
   * The claims a poll with this id made for this worker and that it still holds (its answer was
   * lost); none for a poll without an id. `resent`: the client says it sent this request before, so
   * they may have been made on another instance: the engine's index is first brought up to the
   * store's head, which includes them (they were appended before that answer was written).
   */
  async claimsAgain(input: FromWorker<PollWorkInput>, resent: boolean, budget: AnswerBudget = this.answerBudget()): Promise<WorkItem[]> {
    if (!input.pollId) return [];
    if (resent) await this.fence.upToHead();
    const policies = policiesOf(input.tasks);
    return this.claimsOfPoll(input, input.pollId, policies, budget);
  }

  /** `resent`: see `claimsAgain`. */
  async poll(input: FromWorker<PollWorkInput>, signal?: AbortSignal, options: { resent?: boolean } = {}): Promise<WorkItem[]> {
    const max = input.maxItems ?? 10;
    const deadline = Date.now() + (input.waitMs ?? 20_000);
    const caps = kindCaps(input);
    // A kind the worker has no slot for is neither claimed nor waited for.
    const workflows = caps.decision === 0 ? [] : input.workflows;
    const taskNames = caps.task === 0 ? [] : input.tasks.map((t) => t.name);
    const policies = policiesOf(input.tasks);
    const budget = this.answerBudget();
    // A poll that comes again (same worker, same poll id) whose claims still hold is answered with
    // them: the first answer was lost, and claiming more would leave those to lapse.
    const again = await this.claimsAgain(input, options.resent === true, budget);
    if (again.length > 0) return again;
    // Registered with the index for the whole poll: new work wakes one parked poll, and what this
    // one leaves (its limits, its end) goes to another (EngineState.watch).
    const watch = this.engine.watch(input.appId, input.environment, workflows, taskNames);
    try {
      for (let parked = false; ; parked = true) {
        // A token revoked while its poll was parked claims nothing more (it could not poll again);
        // the first round needs no look: the request was authenticated just now.
        if (signal?.aborted || (parked && !this.tokens.isActive(input.tokenId))) return [];
        if (parked) this.engine.pollCounts.rounds++;
        else this.engine.pollCounts.firstRounds++;
        const candidates = watch.candidates(max, this.claiming, caps);
        const items = (await Promise.all(candidates.map((c) => this.claim(input, c, policies, {}, budget)))).filter((i): i is WorkItem => i !== null);
        if (items.length > 0) return items;
        const remaining = deadline - Date.now();
        if (remaining <= 0) return [];
        // Candidates that could not be claimed were taken elsewhere (another instance, whose event
        // this one has not projected yet): give the log a moment instead of spinning on them.
        const wait = candidates.length === 0 ? remaining : Math.min(remaining, 20);
        const offered = await this.park(input, watch, workflows, policies, budget, wait, signal);
        const item = offered && (await offered);
        if (item) {
          // Whatever else became claimable meanwhile goes in the same answer.
          const rest = { decision: (caps.decision ?? max) - (item.kind === WorkKind.DECISION ? 1 : 0), task: (caps.task ?? max) - (item.kind === WorkKind.TASK ? 1 : 0) };
          // Not for a worker that went away meanwhile: the offered claim is all it loses.
          const more = max > 1 && !signal?.aborted ? watch.candidates(max - 1, this.claiming, rest) : [];
          const others = (await Promise.all(more.map((c) => this.claim(input, c, policies, {}, budget)))).filter((i): i is WorkItem => i !== null);
          return [item, ...others];
        }
      }
    } finally {
      watch.leave(this.claiming);
    }
  }

  /**
   * Waits for work (`PollWatch.park`), parked where a dispatch on this instance can
   * hand it the new workflow's first decision directly (`offerDecision`). Resolves with that
   * claim when one was handed over.
   */
  private async park(input: FromWorker<PollWorkInput>, watch: PollWatch, workflows: string[], policies: Policies, budget: AnswerBudget, waitMs: number, signal?: AbortSignal): Promise<Promise<WorkItem | null> | undefined> {
    const scope = `${input.appId}\u0000${input.environment}`;
    const handoff = new AbortController();
    const poll: ParkedPoll = { input, policies, budget, names: new Set(workflows.map(baseName)), signal, wake: () => handoff.abort() };
    let polls = this.parked.get(scope);
    if (!polls) this.parked.set(scope, (polls = new Set()));
    polls.add(poll);
    // The poll's own end (its worker went away) ends the wait too.
    const forward = () => handoff.abort();
    signal?.addEventListener('abort', forward, { once: true });
    try {
      await watch.park(waitMs, handoff.signal);
    } finally {
      signal?.removeEventListener('abort', forward);
      polls.delete(poll);
      if (polls.size === 0 && this.parked.get(scope) === polls) this.parked.delete(scope);
    }
    return poll.offered;
  }

  /**
   * Eager start: a workflow dispatched on this instance while a poll that serves it is parked
   * here gets its first decision claimed for that poll in the same append as the dispatch, and
   * the poll answers with it: no wait for the dispatch to reach the engine's index, no second
   * append. Called in the tick the dispatch is queued (`WorkflowDispatcher.onDispatch`).
   */
  private offerDecision(dispatch: { appId: string; environment: string; name: string; workflowId: string }): void {
    const polls = this.parked.get(`${dispatch.appId}\u0000${dispatch.environment}`);
    if (!polls) return;
    const name = baseName(dispatch.name);
    for (const poll of polls) {
      if (poll.offered || poll.signal?.aborted || !poll.names.has(name) || !this.tokens.isActive(poll.input.tokenId)) continue;
      polls.delete(poll);
      poll.offered = this.claim(poll.input, { kind: 'decision', ref: `wf:${dispatch.workflowId}` }, poll.policies, { opportunistic: true }, poll.budget).catch((error: Error) => {
        // The poll goes on looking as if nothing had been offered.
        this.logger.warn(`eager start of workflow ${dispatch.workflowId} failed: ${error.message}`);
        return null;
      });
      poll.wake();
      return;
    }
  }

  private async claim(
    input: FromWorker<PollWorkInput>,
    candidate: Candidate,
    policies: Map<string, { retry: RetryPolicy; timeoutMs: number | null }>,
    options: RunOptions = {},
    budget: AnswerBudget = this.answerBudget(),
  ): Promise<WorkItem | null> {
    this.claiming.add(candidate.ref);
    try {
      const item = candidate.kind === 'decision' ? await this.claimDecision(input, candidate.ref, options, budget) : await this.claimTask(input, candidate.ref, policies, options, budget);
      if (item) this.engine.claimed(candidate.ref);
      return item;
    } catch (error) {
      if (error instanceof ConflictError || error instanceof NotFoundError) return null;
      throw error;
    } finally {
      this.claiming.delete(candidate.ref);
    }
  }

  /**
   * The decision of `workflowId` that is running for this worker (claimed in an answer it never
   * got), as a claim would hand it, with the whole run: null when there is none, its lease has
   * lapsed, or the worker does not serve its version.
   */
  private async decisionAgain(input: FromWorker<PollWorkInput>, workflowId: string, budget: AnswerBudget, pollId?: string): Promise<WorkItem | null> {
    const { state } = await this.runner.state(`workflow-${workflowId}`, workflowDecider, workerContext(input));
    if (state.status !== 'running' || state.appId !== input.appId || state.environment !== input.environment) return null;
    const { decision, lastDecision: last, version } = state;
    if (!decision || !last || last.id !== decision.id || decision.workerId !== input.workerId || decision.leaseExpiresAt <= this.clock.now()) return null;
    if (pollId !== undefined && decision.pollId !== pollId) return null;
    if (version === null || !input.workflows.includes(version)) return null;
    const from = state.runStartRevision;
    const to = last.revision;
    const run = await this.readRunWithin(workflowId, from, to, budget.left);
    const whole = run.complete && run.events.some((e) => e.type === 'WorkflowRetried') ? JSON.stringify(replayableHistory(run.events)) : `[${run.parts.join(',')}]`;
    const history = withinBudget(whole, run.complete ? run.cost : Infinity, from, to, budget);
    return {
      kind: WorkKind.DECISION,
      ref: `wf:${workflowId}`,
      workflowId,
      taskId: null,
      name: state.name,
      version,
      decisionId: decision.id,
      attemptId: null,
      attempt: null,
      input: JSON.stringify(state.input),
      history: history.text,
      historyFrom: Number(history.from),
      runFrom: Number(from),
      leaseExpiresAt: new Date(decision.leaseExpiresAt),
    };
  }

  /**
   * The claims poll `pollId` of this worker made that it still holds (lease running), as the
   * poll's lost answer carried them (a decision with its run, a task with its arguments; fresh
   * lease times). Found through the engine's index, checked against each stream.
   */
  private async claimsOfPoll(input: FromWorker<PollWorkInput>, pollId: string, policies: Policies, budget: AnswerBudget): Promise<WorkItem[]> {
    const refs = this.engine.claimsOfPoll(input.appId, input.environment, input.workerId, pollId);
    if (refs.length === 0) return [];
    const items = await Promise.all(
      refs.map((ref) => {
        const again =
          ref.kind === 'decision'
            ? this.decisionAgain(input, ref.workflowId, budget, pollId)
            : ref.kind === 'workflowTask' || ref.kind === 'task'
              ? this.taskAgain(input, ref, pollId, policies, budget)
              : Promise.resolve(null);
        return again.catch((error: Error) => {
          this.logger.warn(`claim of poll ${pollId} not handed again: ${error.message}`);
          return null;
        });
      }),
    );
    return items.filter((i): i is WorkItem => i !== null);
  }

  /** A task attempt poll `pollId` of this worker started and still holds, as its claim handed it; null when it does not. */
  private async taskAgain(input: FromWorker<PollWorkInput>, ref: DueRef, pollId: string, policies: Policies, budget: AnswerBudget): Promise<WorkItem | null> {
    const now = this.clock.now();
    const held = (attempt: AttemptState) => attempt.status === 'started' && attempt.workerId === input.workerId && attempt.pollId === pollId && attempt.leaseExpiresAt > now;
    let found: { name: string; args: Json[]; attempt: Extract<AttemptState, { status: 'started' }>; workflowId: string | null; taskId: string | null; ref: string } | undefined;
    if (ref.kind === 'workflowTask') {
      const { state } = await this.runner.state(`workflow-${ref.workflowId}`, workflowDecider, workerContext(input));
      if (state.status !== 'running' || state.appId !== input.appId || state.environment !== input.environment) return null;
      const task = state.tasks.get(ref.seq);
      if (!task || !held(task.attempt)) return null;
      found = { name: task.name, args: task.args, attempt: task.attempt as Extract<AttemptState, { status: 'started' }>, workflowId: ref.workflowId, taskId: null, ref: formatRef({ kind: 'workflowTask', workflowId: ref.workflowId, seq: ref.seq }) };
    } else if (ref.kind === 'task') {
      const { state } = await this.runner.state(`task-${ref.taskId}`, taskDecider, workerContext(input));
      if (state.status === 'none' || state.appId !== input.appId || state.environment !== input.environment || !held(state.attempt)) return null;
      found = { name: state.name, args: state.args, attempt: state.attempt as Extract<AttemptState, { status: 'started' }>, workflowId: null, taskId: ref.taskId, ref: `task:${ref.taskId}` };
    }
    if (!found || !policies.has(found.name)) return null;
    const text = JSON.stringify(found.args);
    const cost = answerBytes(text);
    // As a claim: the first task of an answer always goes, a further one only if the answer has room.
    if (cost > budget.left && budget.left < budget.total) return null;
    budget.left -= cost;
    const { attemptId, attempts, leaseExpiresAt } = found.attempt;
    return this.taskItem(found.ref, found.workflowId, found.taskId, found.name, text, { attemptId, attempt: attempts, leaseExpiresAt: iso(leaseExpiresAt) });
  }

  /** What one answer may spend on decision histories and task arguments: half the response limit (its other fields have the rest). */
  private answerBudget(): AnswerBudget {
    // Within what the request's answer has left (answer-budget.ts): the aliases of one mutation share it.
    const total = Math.min(Math.floor(this.config.maxResponseBytes / 2), currentAnswerBudget()?.remaining ?? Infinity);
    return { left: total, total };
  }

  private async claimDecision(input: FromWorker<PollWorkInput>, ref: string, options: RunOptions, budget: AnswerBudget): Promise<WorkItem | null> {
    const workflowId = ref.slice(3);
    const decisionId = uuidv7();
    const now = this.clock.now();
    // An opportunistic claim (eager) often finds nothing pending, e.g. behind a task result that
    // carried its next decision: it then decides nothing rather than build an error.
    const ifPending = options.opportunistic === true;
    const result = await this.write(
      `workflow-${workflowId}`,
      workflowDecider,
      (state) => {
        inScope(state, input, ref);
        return { type: 'StartDecision' as const, decisionId, workerId: input.workerId, workflows: input.workflows, now, leaseMs: this.config.leaseMs, ifPending, ...pollOf(input) };
      },
      workerContext(input),
      options,
    );
    if (result.events.length === 0) return null;
    const before = result.before as ExistingWorkflow;
    const after = result.state as ExistingWorkflow;
    const started = result.events[0].data as WorkflowEventData['DecisionStarted'];
    // Sticky: the worker that made the previous decision of this run holds the run up to there and
    // gets only what followed; any other worker gets the whole run (DESIGN.md §4).
    const previous = before.lastDecision;
    const to = after.lastDecision!.revision;
    let from = previous && previous.workerId === input.workerId && previous.revision >= before.runStartRevision ? previous.revision + 1n : before.runStartRevision;
    // A small run goes whole even to the worker that made the previous decision: if that worker
    // no longer holds the run (its cache is bounded), it replays from what it got instead of
    // asking for the run in a second request; if it does hold it, it skips what it has.
    let text: string | undefined;
    if (from !== before.runStartRevision && to - before.runStartRevision < SMALL_RUN_EVENTS) {
      const whole = replayableHistory(await this.readRun(workflowId, before.runStartRevision, to));
      const json = JSON.stringify(whole);
      if (json.length <= SMALL_RUN_BYTES) {
        from = before.runStartRevision;
        text = json;
      }
    }
    let cost = text === undefined ? 0 : answerBytes(text);
    if (text === undefined) {
      // Read only as much as the answer has room for: a history it cannot carry is left out, and
      // the worker pages it in with decisionHistory.
      let run = await this.readRunWithin(workflowId, from, to, budget.left);
      // A retried run is replayed whole, as if its failure never happened (protocol/workflow-retry.ts).
      if (run.complete && from !== before.runStartRevision && run.events.some((e) => e.type === 'WorkflowRetried')) {
        from = before.runStartRevision;
        run = await this.readRunWithin(workflowId, from, to, budget.left);
      }
      if (run.complete && from === before.runStartRevision && run.events.some((e) => e.type === 'WorkflowRetried')) {
        text = JSON.stringify(replayableHistory(run.events));
      } else text = `[${run.parts.join(',')}]`;
      cost = run.complete ? run.cost : Infinity;
    }
    const history = withinBudget(text, cost, from, to, budget);
    return {
      kind: WorkKind.DECISION,
      ref,
      workflowId,
      taskId: null,
      name: after.name,
      version: started.version,
      decisionId,
      attemptId: null,
      attempt: null,
      input: JSON.stringify(after.input),
      history: history.text,
      historyFrom: Number(history.from),
      runFrom: Number(after.runStartRevision),
      leaseExpiresAt: new Date(started.leaseExpiresAt),
    };
  }

  /**
   * A claimed decision's run, for a worker that does not hold it (evicted, restarted) or whose
   * claim left it out: whole (`fromRevision` absent), or a page from `fromRevision` on.
   */
  async decisionHistory(input: FromWorker<DecisionHistoryInput>): Promise<string> {
    const parsed = parseRef(input.ref);
    if (parsed?.kind !== 'decision') throw new BadUserInputError('ref', `not a decision ref: ${input.ref}`);
    const { state } = await this.runner.state(`workflow-${parsed.workflowId}`, workflowDecider, workerContext(input));
    inScope(state, input, input.ref);
    const run = state as ExistingWorkflow;
    if (run.lastDecision?.id !== input.decisionId) throw new ConflictError('decision is no longer current (its lease lapsed or the workflow ended)');
    if (input.fromRevision == null) return JSON.stringify(replayableHistory(await this.readRun(parsed.workflowId, run.runStartRevision, run.lastDecision.revision)));
    const from = BigInt(input.fromRevision) > run.runStartRevision ? BigInt(input.fromRevision) : run.runStartRevision;
    return this.historyPage(parsed.workflowId, from, run.lastDecision.revision);
  }

  /**
   * Events `from`..`to` of a workflow's stream as stored (JSON array of { revision, type, data }),
   * as many as fit one answer's history budget and at least one: the read stops there, so a page
   * costs what it carries, however long the run.
   */
  private async historyPage(workflowId: string, from: bigint, to: bigint): Promise<string> {
    const { parts } = await this.readRunWithin(workflowId, from, to, this.answerBudget().left);
    return `[${parts.join(',')}]`;
  }

  /**
   * Events `from`..`to` of a workflow's stream, each with its JSON, read a few at a time and only
   * while they fit `maxBytes` of an answer (the first one always): `complete` when `to` was
   * reached, `cost` what they take in an answer as a JSON array.
   */
  private async readRunWithin(
    workflowId: string,
    from: bigint,
    to: bigint,
    maxBytes: number,
  ): Promise<{ events: Array<{ revision: number; type: string; data: unknown }>; parts: string[]; cost: number; complete: boolean }> {
    const events: Array<{ revision: number; type: string; data: unknown }> = [];
    const parts: string[] = [];
    let cost = 4;
    for (let at = from; at <= to; ) {
      const read = await this.store.readStream(`workflow-${workflowId}`, { fromRevision: at, maxCount: Math.min(Number(to - at) + 1, HISTORY_READ_CHUNK) });
      if (read.length === 0) break;
      // Releases get the name and data of what they release: at most one more read of as many events.
      const chunk = await withReleasedData(
        this.store,
        `workflow-${workflowId}`,
        read.filter((e) => e.revision <= to && !NOT_REPLAYED.has(e.type)).map((e) => ({ revision: Number(e.revision), type: e.type, data: e.data })),
      );
      for (const event of chunk) {
        const json = JSON.stringify(event);
        const bytes = answerBytes(json) + 2;
        if (parts.length > 0 && cost + bytes > maxBytes) return { events, parts, cost, complete: false };
        cost += bytes;
        events.push(event);
        parts.push(json);
      }
      if (read[read.length - 1].revision >= to) break;
      at = read[read.length - 1].revision + 1n;
    }
    return { events, parts, cost, complete: true };
  }

  /** Events `from`..`to` of a workflow's stream, as the SDK replays them. */
  private async readRun(workflowId: string, from: bigint, to: bigint): Promise<Array<{ revision: number; type: string; data: unknown }>> {
    const events: RecordedEvent[] = await this.store.readStream(`workflow-${workflowId}`, { fromRevision: from, maxCount: Number(to - from) + 1 });
    const run = events.filter((e) => e.revision <= to && !NOT_REPLAYED.has(e.type)).map((e) => ({ revision: Number(e.revision), type: e.type, data: e.data }));
    return withReleasedData(this.store, `workflow-${workflowId}`, run);
  }

  private async claimTask(
    input: FromWorker<PollWorkInput>,
    ref: string,
    policies: Map<string, { retry: RetryPolicy; timeoutMs: number | null }>,
    options: RunOptions,
    budget: AnswerBudget,
  ): Promise<WorkItem> {
    const parsed = parseRef(ref);
    const attemptId = uuidv7();
    const now = this.clock.now();
    const base = { attemptId, workerId: input.workerId, now, leaseMs: this.config.leaseMs, ...pollOf(input) };
    // The task's arguments take room in the answer: reserved when the claim is decided (a second
    // decision after a conflict gives the first one's back), given back if the claim fails. A claim
    // the answer has no room for is not made; the task stays claimable for the next poll.
    let text = '';
    let reserved = 0;
    const reserve = (args: Json[]) => {
      budget.left += reserved;
      text = JSON.stringify(args);
      reserved = answerBytes(text);
      if (reserved > budget.left && budget.left < budget.total) {
        reserved = 0;
        throw new ConflictError('no room left in this answer');
      }
      budget.left -= reserved;
    };
    // An eager claim that finds the attempt already started for this same worker, lease running:
    // the claim of a report sent again because its answer was lost (the repeated outcome records
    // nothing, and nothing else makes this worker claim a call it has not been told of). The
    // attempt is handed again rather than left to lapse, which would count as a failed attempt
    // of a task that never ran.
    let heldByThisWorker: { name: string; started: { attemptId: string; attempt: number; leaseExpiresAt: string } } | undefined;
    try {
      if (parsed?.kind === 'workflowTask') {
        const result = await this.write(
          `workflow-${parsed.workflowId}`,
          workflowDecider,
          (state) => {
            heldByThisWorker = undefined;
            inScope(state, input, ref);
            const task = state.status === 'none' ? undefined : state.tasks.get(parsed.seq);
            // Only a task the worker serves (an eager claim names the call by its seq, which a bad decision may have reused).
            if (task && !policies.has(task.name)) throw new ConflictError(`worker does not serve task ${task.name}`);
            const policy = policies.get(task?.name ?? '') ?? { retry: DEFAULT_RETRY_POLICY, timeoutMs: null };
            if (task) reserve(task.args);
            const attempt = task?.attempt;
            if (options.opportunistic && state.status === 'running' && attempt?.status === 'started' && attempt.workerId === input.workerId && attempt.leaseExpiresAt > now) {
              heldByThisWorker = { name: task!.name, started: { attemptId: attempt.attemptId, attempt: attempt.attempts, leaseExpiresAt: iso(attempt.leaseExpiresAt) } };
              throw new ConflictError('task attempt already started for this worker');
            }
            return { type: 'StartTask' as const, seq: parsed.seq, ...base, retryPolicy: policy.retry, timeoutMs: policy.timeoutMs };
          },
          workerContext(input),
          options,
        ).catch((error: unknown) => {
          if (error instanceof ConflictError && heldByThisWorker) return null;
          throw error;
        });
        if (result === null) return this.taskItem(ref, parsed.workflowId, null, heldByThisWorker!.name, text, heldByThisWorker!.started);
        const state = result.state;
        if (state.status === 'none') throw new NotFoundError('workflow', parsed.workflowId);
        const task = state.tasks.get(parsed.seq)!;
        const started = result.events[0].data as WorkflowEventData['TaskStarted'];
        return this.taskItem(ref, parsed.workflowId, null, task.name, text, started);
      }
      if (parsed?.kind === 'task') {
        const result = await this.write(
          `task-${parsed.taskId}`,
          taskDecider,
          (state) => {
            inScope(state, input, ref);
            if (state.status !== 'none' && !policies.has(state.name)) throw new ConflictError(`worker does not serve task ${state.name}`);
            const policy = policies.get(state.status === 'none' ? '' : state.name) ?? { retry: DEFAULT_RETRY_POLICY, timeoutMs: null };
            if (state.status !== 'none') reserve(state.args);
            return { type: 'StartTask' as const, ...base, retryPolicy: policy.retry, timeoutMs: policy.timeoutMs };
          },
          workerContext(input),
          options,
        );
        if (result.state.status === 'none') throw new NotFoundError('task', parsed.taskId);
        const started = result.events[0].data as WorkflowEventData['TaskStarted'];
        return this.taskItem(ref, null, parsed.taskId, result.state.name, text, started);
      }
    } catch (error) {
      budget.left += reserved;
      throw error;
    }
    throw new NotFoundError('work item', ref);
  }

  private taskItem(
    ref: string,
    workflowId: string | null,
    taskId: string | null,
    name: string,
    input: string,
    started: { attemptId: string; attempt: number; leaseExpiresAt: string },
  ): WorkItem {
    return {
      kind: WorkKind.TASK,
      ref,
      workflowId,
      taskId,
      name,
      version: null,
      decisionId: null,
      attemptId: started.attemptId,
      attempt: started.attempt,
      input,
      history: null,
      historyFrom: null,
      runFrom: null,
      leaseExpiresAt: new Date(started.leaseExpiresAt),
    };
  }

  /**
   * Applies a worker's outcomes. With `claim`, the work they make claimable for this worker is
   * claimed in the same step (eager dispatch, as Temporal's eager activities): the claim is queued
   * right behind the outcome on the same stream, so both go in one append, and the worker gets the
   * items in the answer instead of a poll round trip later. A claim with a `pollId` also fills the
   * slots left over from the work waiting for this worker, as a poll would (`fill`; not while the
   * instance drains): under load a worker's reports are continuous and its polls rare, and the
   * first decision of a new workflow waited for the next poll, about two saturated round trips
   * (docs/BENCHMARKS.md). The claims record the id; a report sent again whose claims this worker
   * still holds is answered with them and claims nothing more, as a poll sent again is.
   */
  async report(input: FromWorker<ReportWorkInput>, options: { fill?: boolean; resent?: boolean } = {}): Promise<{ accepted: number; rejected: ReportRejection[]; items: WorkItem[]; decided: DecidedWork[] }> {
    const context = workerContext(input);
    const held = await this.claimedBefore(input, options.resent === true);
    const eager = this.eagerClaims(input);
    const decided: DecidedWork[] = [];
    const repeated: string[] = [];
    const settling = [
      ...(input.decisions ?? []).map((d) => this.settle(d.ref, () => this.reportDecision(context, d, eager))),
      ...(input.tasks ?? []).map((t) => this.settle(t.ref, () => this.reportTask(context, t, eager, input.workerId, decided, repeated))),
    ];
    // Decisions are claimed after every result of this report is queued: results that arrive together make one decision.
    eager?.flush();
    // Then what waits for this worker, in the slots left (not for a report sent again: its first send's claims are in `held`).
    if (options.fill && input.claim?.pollId && held.length === 0) eager?.fill(this.engine);
    const outcomes = await Promise.all(settling);
    const rejected = outcomes.filter((o): o is ReportRejection => o !== null);
    const items = uniqueItems([...held, ...(await Promise.all(eager?.claims ?? [])).filter((i): i is WorkItem => i !== null)]);
    // A result sent again (its answer was lost) finds nothing pending: the decision it made
    // pending may be the one the lost answer handed this worker. Handed again, rather than left
    // to time out a lease later (found in review).
    if (eager && repeated.length > 0) {
      const have = new Set(items.filter((i) => i.kind === WorkKind.DECISION).map((i) => i.workflowId));
      const again = await Promise.all([...new Set(repeated)].filter((id) => !have.has(id)).map((id) => eager.again(id)));
      items.push(...again.filter((i): i is WorkItem => i !== null));
    }
    return { accepted: outcomes.length - rejected.length, rejected, items, decided };
  }

  /**
   * The claims an earlier send of this report made for this worker that it still holds (the
   * answer was lost), found by the claim's `pollId`, as `claimsAgain` finds a poll's; none without
   * one. `resent`: the worker says it sent this report before (`x-baton-resent`, or its own
   * retry), so its first send may have claimed on another instance: the engine's index is first
   * brought up to the store's head, which has them (they were appended before that answer was written).
   */
  private async claimedBefore(input: FromWorker<ReportWorkInput>, resent: boolean): Promise<WorkItem[]> {
    const claim = input.claim;
    if (!claim?.pollId) return [];
    if (resent) await this.fence.upToHead();
    return this.claimsOfPoll(claimant(input, claim), claim.pollId, policiesOf(claim.tasks), this.answerBudget());
  }

  private eagerClaims(input: FromWorker<ReportWorkInput>): EagerClaims | undefined {
    const claim = input.claim;
    if (!claim || claim.maxItems <= 0) return undefined;
    const as = claimant(input, claim);
    const policies = policiesOf(claim.tasks);
    const claims: Array<Promise<WorkItem | null>> = [];
    const later = new Map<string, Candidate>();
    const budget = this.answerBudget();
    const caps = kindCaps(claim);
    const left = { decision: caps.decision ?? claim.maxItems, task: caps.task ?? claim.maxItems };
    const take = (candidate: Candidate) => {
      if (claims.length >= claim.maxItems || left[candidate.kind] <= 0 || this.claiming.has(candidate.ref)) return;
      left[candidate.kind]--;
      claims.push(this.claim(as, candidate, policies, { opportunistic: true }, budget));
    };
    return {
      serves: (taskName) => policies.has(taskName),
      take: (candidate) => (candidate.kind === 'decision' ? later.set(candidate.ref, candidate) : take(candidate)),
      flush: () => later.forEach(take),
      fill: (engine) => {
        const room = claim.maxItems - claims.length;
        // Within the caps the report's own next steps left, and within the slots the worker says no poll of its is asking for.
        const decision = Math.min(left.decision, claim.fillDecisions ?? left.decision);
        const task = Math.min(left.task, claim.fillTasks ?? left.task);
        if (room <= 0 || (decision <= 0 && task <= 0)) return;
        // Looked at as a poll looks, and left as a poll leaves once its claims end: a claim refused
        // (no room left in this answer) leaves its item claimable, and a poll that looked while it
        // was being claimed (excluded) and parked is woken for it, not left parked its whole wait.
        const watch = engine.watch(input.appId, input.environment, decision > 0 ? claim.workflows : [], task > 0 ? [...policies.keys()] : []);
        const found = watch.candidates(room, this.claiming, { decision, task });
        engine.pollCounts.reportRounds++;
        const filled: Array<Promise<WorkItem | null>> = [];
        for (const candidate of found) {
          left[candidate.kind]--;
          filled.push(this.claim(as, candidate, policies, {}, budget));
        }
        claims.push(...filled);
        void Promise.allSettled(filled).then(() => watch.leave(this.claiming));
      },
      again: async (workflowId) => {
        if (claims.length >= claim.maxItems || left.decision <= 0) return null;
        left.decision--;
        return this.decisionAgain(as, workflowId, budget).catch((error: Error) => {
          this.logger.warn(`decision of workflow ${workflowId} not handed again: ${error.message}`);
          return null;
        });
      },
      claims,
    };
  }

  private async settle(ref: string, apply: () => Promise<void>): Promise<ReportRejection | null> {
    try {
      await apply();
      return null;
    } catch (error) {
      if (error instanceof BatonError && error.httpStatus === 200) return rejection(ref, error);
      throw error;
    }
  }

  private async reportDecision(context: CommandContext, report: DecisionReportInput, eager?: EagerClaims): Promise<void> {
    const parsed = parseRef(report.ref);
    if (parsed?.kind !== 'decision') throw new BadUserInputError('decisions.ref', `not a decision ref: ${report.ref}`);
    const streamId = `workflow-${parsed.workflowId}`;
    if (report.failureCode) {
      await this.write(
        streamId,
        workflowDecider,
        scoped(context, parsed.workflowId, {
          type: 'FailDecision',
          decisionId: report.decisionId,
          code: report.failureCode,
          message: report.failureMessage ?? report.failureCode,
          historyPosition: report.historyPosition ?? null,
          now: this.clock.now(),
        }),
        context,
      );
      return;
    }
    const commands = reportedCommands(report);
    const ids: Record<number, string> = {};
    for (const c of commands) {
      if (c.type === 'StartChildWorkflow' || c.type === 'DispatchTask' || c.type === 'CreateSchedule') ids[c.seq] = callId(parsed.workflowId, c.seq);
    }
    const queries = report.queries ? (parseJson('decisions.queries', report.queries) as Record<string, Json>) : undefined;
    const completed = this.write(streamId, workflowDecider, scoped(context, parsed.workflowId, { type: 'CompleteDecision', decisionId: report.decisionId, commands, ids, queries }), context);
    // The tasks this decision schedules, claimed in the same append when the reporting worker serves them.
    for (const c of commands) {
      if (c.type === 'ScheduleTask' && eager?.serves(c.name)) eager.take({ ref: formatRef({ kind: 'workflowTask', workflowId: parsed.workflowId, seq: c.seq }), kind: 'task' });
    }
    try {
      await completed;
    } catch (error) {
      // What only the history can refuse (a call numbered in an earlier run) names the field as the screen does.
      if (error instanceof BadUserInputError && error.details.field === 'commands') {
        throw new BadUserInputError('decisions.commands', error.message.slice('commands: '.length));
      }
      throw error;
    }
  }

  private async reportTask(context: CommandContext, report: TaskReportInput, eager: EagerClaims | undefined, workerId: string, decided: DecidedWork[], repeated: string[]): Promise<void> {
    const parsed = parseRef(report.ref);
    const now = this.clock.now();
    let outcome: { kind: 'ok'; result: Json } | { kind: 'error'; error: TaskError } | { kind: 'released' };
    if (report.released) {
      outcome = { kind: 'released' };
    } else if (report.error) {
      outcome = {
        kind: 'error',
        error: {
          message: report.error.message,
          ...(report.error.name ? { name: report.error.name } : {}),
          ...(report.error.nonRetryable ? { nonRetryable: true } : {}),
          ...(report.error.retryAfterMs != null ? { retryAfterMs: report.error.retryAfterMs } : {}),
        },
      };
    } else {
      outcome = { kind: 'ok', result: parseJson('tasks.result', report.result ?? 'null') };
    }
    if (parsed?.kind === 'workflowTask') {
      const seq = parsed.seq;
      const next = outcome.kind === 'ok' && report.next ? this.nextDecision(parsed.workflowId, report.next, workerId, now) : undefined;
      const reported = this.write(
        `workflow-${parsed.workflowId}`,
        workflowDecider,
        scoped(
          context,
          parsed.workflowId,
          outcome.kind === 'ok'
            ? next
              ? { type: 'CompleteTaskAndDecide', seq, attemptId: report.attemptId, result: outcome.result, next }
              : { type: 'CompleteTask', seq, attemptId: report.attemptId, result: outcome.result }
            : outcome.kind === 'released'
              ? { type: 'ReleaseTask', seq, attemptId: report.attemptId, now }
              : { type: 'FailTask', seq, attemptId: report.attemptId, error: outcome.error, now },
        ),
        context,
      );
      // The tasks the worker's next decision schedules, claimed in the same append when it serves them
      // (a claim finds nothing to take when the decision was not recorded).
      for (const c of next?.commands ?? []) {
        if (c.type === 'ScheduleTask' && eager?.serves(c.name)) eager.take({ ref: formatRef({ kind: 'workflowTask', workflowId: parsed.workflowId, seq: c.seq }), kind: 'task' });
      }
      // The decision this result makes pending, claimed in the same append when this worker serves the
      // workflow (nothing to claim when the worker's next decision was recorded with the result).
      if (outcome.kind !== 'released') eager?.take({ ref: `wf:${parsed.workflowId}`, kind: 'decision' });
      const result = await reported;
      if (outcome.kind !== 'released' && result.events.length === 0) repeated.push(parsed.workflowId);
      const started = next && result.events.find((e) => e.type === 'DecisionStarted' && e.data.decisionId === next.decisionId);
      if (started && started.revision !== undefined) decided.push({ ref: report.ref, workflowId: parsed.workflowId, decisionId: next!.decisionId, revision: Number(started.revision) });
    } else if (parsed?.kind === 'task') {
      await this.write(
        `task-${parsed.taskId}`,
        taskDecider,
        scoped(
          context,
          parsed.taskId,
          outcome.kind === 'ok'
            ? { type: 'CompleteTask', attemptId: report.attemptId, result: outcome.result }
            : outcome.kind === 'released'
              ? { type: 'ReleaseTask', attemptId: report.attemptId, now }
              : { type: 'FailTask', attemptId: report.attemptId, error: outcome.error, now },
        ),
        context,
      );
    } else {
      throw new BadUserInputError('tasks.ref', `not a task ref: ${report.ref}`);
    }
  }

  /**
   * The next decision a task report carries, as the decider takes it; undefined when its clock is
   * too far from this server's (the result is then recorded alone). Its shape was screened with
   * the report (`screenReport`).
   */
  private nextDecision(workflowId: string, input: NextDecisionInput, workerId: string, now: number): NextDecision | undefined {
    const at = Date.parse(input.startedAt);
    if (!(Math.abs(at - now) <= NEXT_DECISION_CLOCK_SKEW_MS)) return undefined;
    const commands = reportedCommands(input, 'tasks.next.commands');
    const ids: Record<number, string> = {};
    for (const c of commands) {
      if (c.type === 'StartChildWorkflow' || c.type === 'DispatchTask' || c.type === 'CreateSchedule') ids[c.seq] = callId(workflowId, c.seq);
    }
    const queries = input.queries ? (parseJson('tasks.next.queries', input.queries) as Record<string, Json>) : undefined;
    return { basisDecisionId: input.basisDecisionId, decisionId: uuidv7(), workerId, version: input.version, now: at, leaseMs: this.config.leaseMs, commands, ids, queries };
  }

  async heartbeat(input: FromWorker<HeartbeatInput>): Promise<HeartbeatResult[]> {
    const context = workerContext(input);
    return Promise.all(input.attempts.map((a) => this.heartbeatOne(context, a.ref, a.attemptId)));
  }

  private async heartbeatOne(context: CommandContext, ref: string, attemptId: string): Promise<HeartbeatResult> {
    const parsed = parseRef(ref);
    const now = this.clock.now();
    const leaseMs = this.config.leaseMs;
    try {
      if (parsed?.kind === 'workflowTask') {
        const { state } = await this.write(
          `workflow-${parsed.workflowId}`,
          workflowDecider,
          scoped(context, parsed.workflowId, { type: 'HeartbeatTask', seq: parsed.seq, attemptId, now, leaseMs }),
          context,
        );
        if (state.status === 'none') return { ref, cancel: true, reason: 'unknown workflow' };
        if (FINAL_STATUSES.has(state.status)) return { ref, cancel: true, reason: `workflow ${state.status}` };
        const task = state.tasks.get(parsed.seq);
        return task && holdsAttempt(task.attempt, attemptId) ? { ref, cancel: false, reason: null } : { ref, cancel: true, reason: 'attempt no longer current (lease lapsed)' };
      }
      if (parsed?.kind === 'decision') {
        // A decision whose inline steps run long: `attemptId` is the decision's id.
        const { state } = await this.write(
          `workflow-${parsed.workflowId}`,
          workflowDecider,
          scoped(context, parsed.workflowId, { type: 'HeartbeatDecision', decisionId: attemptId, now, leaseMs }),
          context,
        );
        if (state.status === 'none') return { ref, cancel: true, reason: 'unknown workflow' };
        // An ended workflow keeps its last decision as current (nothing clears it): it is not
        // worth running any more, as a task of that workflow is not.
        if (FINAL_STATUSES.has(state.status)) return { ref, cancel: true, reason: `workflow ${state.status}` };
        return state.decision?.id === attemptId ? { ref, cancel: false, reason: null } : { ref, cancel: true, reason: 'decision no longer current (its lease lapsed or the workflow ended)' };
      }
      if (parsed?.kind === 'task') {
        const { state } = await this.write(`task-${parsed.taskId}`, taskDecider, scoped(context, parsed.taskId, { type: 'HeartbeatTask', attemptId, now, leaseMs }), context);
        return state.status !== 'none' && holdsAttempt(state.attempt, attemptId)
          ? { ref, cancel: false, reason: null }
          : { ref, cancel: true, reason: 'attempt no longer current (lease lapsed)' };
      }
      return { ref, cancel: true, reason: 'unknown ref' };
    } catch (error) {
      if (error instanceof NotFoundError) return { ref, cancel: true, reason: error.message };
      throw error;
    }
  }
}

/** How far a worker's next decision's clock may be from this server's (see `nextDecision`). */
export const NEXT_DECISION_CLOCK_SKEW_MS = 2000;

/** Runs up to this many events (and bytes of history) go whole with every decision (see claimDecision). */
const SMALL_RUN_EVENTS = 100n;
const SMALL_RUN_BYTES = 64 * 1024;
/**
 * Left out of the histories handed to workers: a heartbeat's extension of a lease says nothing
 * the workflow's code replays (the SDK skips them), and a task that heartbeats for a day records
 * 5,760 of them at the default lease, which every decision after it carried (found in review).
 * An event kept back (`WorkflowEventQueued`) reaches the code only when released, as the
 * `WorkflowEventReceived` SDKs of every version know (its release, with the queued event's name
 * and data put in: withReleasedData); the queued event itself is never replayed.
 * The revisions of what is sent are unchanged (a history may skip revisions, as `decisionHistory`
 * pages do).
 */
const NOT_REPLAYED: ReadonlySet<string> = new Set(['TaskLeaseExtended', 'DecisionLeaseExtended', 'WorkflowEventQueued']);
/** Events read at a time while filling a claim's history or a page of `decisionHistory`. */
const HISTORY_READ_CHUNK = 64;

/** Room left in one answer for the claims' histories and task arguments; the claims of one answer share it. */
interface AnswerBudget {
  left: number;
  /** What it started with: the first task of an answer always goes, however large its arguments. */
  total: number;
}

/**
 * At least what a JSON text costs once it is a string field of a GraphQL answer: escaping it
 * again at most doubles it (only its quotes and backslashes are escaped; the text has no control
 * characters, and JSON.stringify already wrote lone surrogates as \uXXXX).
 */
function answerBytes(json: string): number {
  return 2 * Buffer.byteLength(json, 'utf8');
}

type Policies = Map<string, { retry: RetryPolicy; timeoutMs: number | null }>;

/** A long poll waiting on this instance, which a dispatch here may hand its first decision. */
interface ParkedPoll {
  input: FromWorker<PollWorkInput>;
  policies: Policies;
  /** What its answer may still spend on histories. */
  budget: AnswerBudget;
  /** Base names of the workflows it serves. */
  names: Set<string>;
  signal?: AbortSignal;
  wake: () => void;
  /** The claim made for it by a dispatch, once one was. */
  offered?: Promise<WorkItem | null>;
}

/** The claims a report may make for its worker (see `EngineService.report`). */
interface EagerClaims {
  serves(taskName: string): boolean;
  /** Tasks are claimed at once (behind the decision that schedules them); decisions at `flush`. */
  take(candidate: Candidate): void;
  flush(): void;
  /** The slots left, filled from the work waiting for this worker (`EngineState.candidates`), as a poll's first round. */
  fill(engine: EngineState): void;
  /** The decision of `workflowId` this worker was handed already (a lost answer), as an item again; null if there is none. */
  again(workflowId: string): Promise<WorkItem | null>;
  claims: Array<Promise<WorkItem | null>>;
}

/**
 * Work of another app or environment is answered exactly like work that does not exist, so a
 * worker's token reaches only its own apps and learns nothing of others.
 */
function inScope(state: { status: string; appId?: string; environment?: string }, scope: { appId: string; environment: string }, id = 'item'): void {
  if (state.status === 'none' || state.appId !== scope.appId || state.environment !== scope.environment) throw new NotFoundError('work item', id);
}

function scoped<S extends { status: string; appId?: string; environment?: string }, C>(scope: { appId: string; environment: string }, id: string, command: C): (state: S) => C {
  return (state) => {
    inScope(state, scope, id);
    return command;
  };
}

/** The poll id to record with a claim, when the poll was given one. */
function pollOf(input: { pollId?: string | null }): { pollId?: string } {
  return input.pollId ? { pollId: input.pollId } : {};
}

/** The per-kind caps a poll asked for (`maxDecisions`, `maxTasks`); absent, only `maxItems` bounds it. */
function kindCaps(input: { maxDecisions?: number | null; maxTasks?: number | null }): KindCaps {
  return { decision: input.maxDecisions ?? undefined, task: input.maxTasks ?? undefined };
}

/**
 * A decision's history from `from` to `to` as its answer carries it: `text` when the answer has room
 * for its `cost` (taken from the budget), or none, the worker paging it in (`decisionHistory`) from
 * past `to`.
 */
function withinBudget(text: string, cost: number, from: bigint, to: bigint, budget: AnswerBudget): { text: string; from: bigint } {
  if (cost > budget.left) return { text: '[]', from: to + 1n };
  budget.left -= cost;
  return { text, from };
}

/** A report's eager claim as a poll of the reporting worker would make it (its names, its claim's `pollId`). */
function claimant(input: FromWorker<ReportWorkInput>, claim: NonNullable<ReportWorkInput['claim']>): FromWorker<PollWorkInput> {
  const { appId, environment, workerId, tokenId } = input;
  return { appId, environment, workerId, tokenId, workflows: claim.workflows, tasks: claim.tasks, ...(claim.pollId ? { pollId: claim.pollId } : {}) };
}

/** Retry policies and timeouts by task name, as a worker declares its tasks. */
function policiesOf(tasks: Array<{ name: string; retry?: RetryPolicy | null; timeoutMs?: number | null }>): Policies {
  return new Map(tasks.map((t) => [t.name, { retry: t.retry ?? DEFAULT_RETRY_POLICY, timeoutMs: t.timeoutMs ?? null }]));
}

/** Items in order, each ref once (a report sent again: what its first send claimed, and what it claims now). */
function uniqueItems(items: WorkItem[]): WorkItem[] {
  const seen = new Set<string>();
  return items.filter((item) => !seen.has(item.ref) && (seen.add(item.ref), true));
}
