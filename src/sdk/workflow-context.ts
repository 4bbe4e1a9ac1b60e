import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { type DecisionCommand, type HistoryEvent, type Json, MAX_ERROR_MESSAGE_LENGTH, type Selector, type TaskErrorShape, callId } from '../protocol/decision-commands.js';
import { type RetryPolicyMs, backoffDelay } from '../protocol/retry-policy.js';
import { type RetryPolicy, type TaskDefinition, type WorkflowDefinition, resolveRetryPolicy } from './definitions.js';
import { type Moment, isMoment, resolveMoment } from './moments.js';
import { Duration, toMs } from './duration.js';
import { NonDeterminismError, NonRetryableError, RetryableError, TaskFailedError } from './errors.js';
import { cutText, errorText, toError } from './thrown.js';
import { after, delay } from './timers.js';

export type { HistoryEvent, Selector } from '../protocol/decision-commands.js';

const CHILD_OPTIONS = Symbol('baton.childOptions');

/** Options for a child workflow, passed as the last argument of `ctx.workflow` / `ctx.dispatch`. */
export interface ChildOptions {
  readonly [CHILD_OPTIONS]: true;
  /** The child's tag, for `{ name, tag }` selectors. */
  readonly tag?: string;
}

/**
 * Tags a child workflow so that `{ name, tag }` selectors reach it.
 * @example
 * await ctx.workflow(shipOrder, order.id, tagged(`order:${order.id}`));
 */
export function tagged(tag: string): ChildOptions {
  return { [CHILD_OPTIONS]: true, tag };
}

/** Options of `ctx.step`. */
export interface StepOptions {
  /** Attempts of the step within its decision; without it, one attempt. Defaults as for a task's {@link RetryPolicy}. */
  retry?: RetryPolicy;
  /**
   * Start-to-close timeout of one attempt: past it the attempt's `signal` is aborted and the
   * attempt counts as failed (retried by `retry` like any failure). The step's code keeps running
   * unless it heeds the signal; its outcome is no longer awaited.
   * @default none
   */
  timeout?: Duration;
}

/** What a step's function gets: the attempt being run and its abort signal. */
export interface StepAttempt {
  /** Attempt number within the decision, from 1. */
  attempt: number;
  /** Aborted when the attempt passes its `timeout`. */
  signal: AbortSignal;
}

/** Actions on the workflows a selector picks, from inside a workflow (fire and forget). */
export interface SelectedWorkflows {
  /**
   * Sends the event `event` with `data` to the selected workflows (as `sendEventToWorkflows`):
   * their `waitForEvent` / `onEvent` get it. Recorded with this decision and applied by the
   * service after it; nothing comes back to this workflow.
   * @example
   * ctx.select({ name: 'Shipment', tag: `order:${orderId}` }).send('cancelled', { reason });
   */
  send(event: string, ...data: unknown[]): void;
  /** Pauses the selected running workflows (as `pauseWorkflows`), after this decision is recorded. */
  pause(): void;
  /** Resumes the selected paused workflows (as `resumeWorkflows`), after this decision is recorded. */
  resume(): void;
  /**
   * Terminates the selected running and paused workflows (as `terminateWorkflows`, with the reason
   * `requested by workflow <this workflow's id>`), after this decision is recorded.
   */
  terminate(): void;
}

/** What workflow code gets as its first argument. Every call is recorded and replayed. */
export interface WorkflowContext {
  /** This workflow's id. */
  readonly workflowId: string;
  /** True while the code re-runs over history it has already made (logging is muted then). */
  readonly isReplaying: boolean;
  /** Runs a task and resolves with its result; rejects with {@link TaskFailedError} once its retries are exhausted. */
  run<Args extends unknown[], Result>(task: TaskDefinition<Args, Result> | string, ...args: Args): Promise<Result>;
  /**
   * Runs `fn` here, in this decision, and records its result (or error) with the decision, as
   * Restate's `ctx.run` or Temporal's local activities: no round trip to the service and no
   * claim, so a workflow of steps completes in one decision. On replay the recorded outcome is
   * returned and `fn` does not run again; if the decision's report is never recorded (the worker
   * died, its lease lapsed), `fn` runs again in the decision that replaces it, so it runs at least
   * once. A step that throws rejects with {@link TaskFailedError}: at once, or with `retry`, once
   * its attempts are spent (they run in this decision, with the policy's backoff between them;
   * `NonRetryableError` and `RetryableError` mean what they mean in a task; `timeout` bounds each
   * attempt, aborting the `signal` that `fn` gets). While steps run, the
   * worker's heartbeats keep the decision's lease. The result must be JSON (`undefined` becomes
   * `null`). Steps that run at once (`Promise.all`) run in parallel, and each is handed back in the
   * order it was called. Use `run` for work that should survive the worker or be shared by others.
   * `name` is 1 to 256 characters without control characters (what the service records): another
   * throws a `TypeError` from the call, before `fn` runs. `fn` must not call `ctx` methods that
   * record or draw (`run`, `step`, `sleep`, `dispatch`, `random`, ...; `now()` and `log` are fine):
   * it is not run on replay, and the decision waits on it; such a call throws a `TypeError`, which
   * fails the attempt.
   * @example
   * const rate = await ctx.step('fetch rate', ({ signal }) => fetchRate('EUR', { signal }), { retry: { maxAttempts: 5, initialDelay: '200ms' }, timeout: '2s' });
   */
  step<Result>(name: string, fn: (attempt: StepAttempt) => Result | Promise<Result>, options?: StepOptions): Promise<Awaited<Result>>;
  /**
   * Starts a task or a child workflow without waiting for it, and returns its id (the task's or
   * the child workflow's, as `workflow`/`task` queries know it). A workflow started this way lives
   * on when this one ends, however it ends.
   */
  dispatch(target: TaskDefinition | WorkflowDefinition | string, ...args: unknown[]): string;
  /**
   * Runs a child workflow (optionally `tagged(...)` as the last argument) and resolves with its
   * result. The child exists for this workflow: when this one is terminated, or completes or
   * continues as new while the child still runs (it stopped waiting, e.g. after a `Promise.race`
   * with a timer; a new run cannot await the old run's children), the child is terminated too,
   * and its own children the same way; a child that failed and was retried since by an operator
   * is left to run. A failed workflow's children go on (a retry waits on them again). Use {@link WorkflowContext.dispatch} for a workflow of its own.
   */
  workflow<Result = unknown>(workflow: WorkflowDefinition<any[], Result> | string, ...args: unknown[]): Promise<Result>;
  /** Waits durably: survives restarts of workers and of the service. */
  sleep(duration: Duration): Promise<void>;
  /**
   * Waits until a moment, durably: a date, or a {@link Moment} in a time zone (`at('15:30',
   * 'Europe/Paris')`, `monday('09:00')`, `dayOfMonth(1)`), resolved against `now()`.
   */
  sleepUntil(date: Date | number | string | Moment): Promise<void>;
  /**
   * Waits for the next event of that name sent to this workflow (one that arrived earlier and
   * was not yet taken counts). Resolves `[name, ...data]`, or `null` when `timeout` passes first.
   */
  waitForEvent(name: string, options?: { timeout?: Duration }): Promise<[string, ...unknown[]] | null>;
  /**
   * Calls `handler(...data)` for every event of that name this workflow receives; with `'*'`,
   * `handler(name, ...data)` for every event that no `waitForEvent` takes. A handler may be async
   * (await tasks, sleep): the workflow completes only once every handler it started has finished,
   * and a handler that throws fails the workflow.
   */
  onEvent(name: string, handler: (...data: any[]) => unknown): void;
  /**
   * Answers `name` for readers outside the workflow (the `queries` field of a
   * `Workflow` in GraphQL, `client.queryWorkflow`): the handler runs on the workflow's replayed state at the end of each
   * decision and its JSON answer is recorded with the decision. It must not call `ctx` methods that
   * record or draw (`run`, `random`, `uuid`, ...; `now()` is fine): such a call throws a `TypeError`.
   * One that throws, or answers what JSON cannot hold, answers `{ error: message }` (the decision
   * and the other queries' answers are unaffected).
   * @example
   * let step = 'started';
   * ctx.onQuery('step', () => step);
   */
  onQuery(name: string, handler: () => unknown): void;
  /**
   * Creates a cron schedule from inside the workflow (the original service's scheduling): five
   * fields are standard cron; see the README for the six- and seven-field forms. Returns the
   * schedule's id; creating it again on replay or retry does nothing.
   * @example
   * ctx.schedule('0 8 * * 1', { timezone: 'Europe/Paris' }).workflow(weeklyReport, accountId);
   */
  schedule(cron: string, options?: { timezone?: string; tag?: string }): { workflow(target: WorkflowDefinition | string, ...args: unknown[]): string; task(target: TaskDefinition | string, ...args: unknown[]): string };
  /** Acts on other workflows of this app and environment. */
  select(selector: Selector): SelectedWorkflows;
  /** The time of the current decision (deterministic: use it instead of `Date.now()`). */
  now(): Date;
  /** A deterministic random number in [0, 1) (a run started by `continueAsNew` draws another sequence). */
  random(): number;
  /**
   * A deterministic UUID (v4 format): 128 bits derived from the workflow id, its run and how many
   * this run asked for before (a run started by `continueAsNew` draws other ids than the runs before it).
   */
  uuid(): string;
  /**
   * Ends this run and starts a fresh one under the same workflow id, with these arguments and an
   * empty history (as Temporal's continue-as-new): how a workflow that loops for ever, or runs
   * many thousands of steps, keeps its history (and the cost of replaying it) bounded. Nothing
   * after it runs; tasks still running in this run are abandoned, and child workflows it still
   * awaits (`ctx.workflow`) are terminated. Events this run received and
   * its code did not take go to the new run, in order (the most recent that fit
   * `MAX_CARRIED_EVENTS` and `MAX_CARRIED_EVENT_BYTES`; the others are logged and left); code
   * still running after this call takes no more events; if events arrive while this decision
   * runs, the service has it made again with them.
   * @example
   * export const poller = defineWorkflow('Poller', async (ctx, cursor: number) => {
   *   for (let i = 0; i < 1000; i++) cursor = await ctx.run(fetchPage, cursor);
   *   return ctx.continueAsNew(cursor);
   * });
   */
  continueAsNew(...args: unknown[]): Promise<never>;
  /** Logs, muted while replaying. */
  readonly log: Pick<Console, 'info' | 'warn' | 'error'>;
}

type Command = DecisionCommand;

interface Pending {
  resolve: (value: any) => void;
  reject: (error: Error) => void;
}

type StepOutcome = { result: Json; error?: undefined } | { error: TaskErrorShape; result?: undefined };
type RecordStep = Extract<Command, { type: 'RecordStep' }>;

/** A `ctx.step` call not yet handed back to the code. */
interface StepCall extends Pending {
  seq: number;
  fn: (attempt: StepAttempt) => unknown;
  retry?: RetryPolicy;
  /** Each attempt's start-to-close timeout, if any. */
  timeoutMs?: number;
  /** The command this call put in the decision; its outcome is added once the step ran here. */
  command: RecordStep;
  /** Its outcome: recorded in the history, or being produced by running `fn` (live decisions only). */
  outcome?: Promise<StepOutcome>;
}

/**
 * Runs workflow code over its history, Temporal-style: each `ctx` call takes the next sequence
 * number; a call whose outcome is in the history gets it, and the first new calls become the
 * commands of the current decision. The history is walked in order; at each decision the
 * commands the code produced are checked against the ones recorded, so code that no longer
 * matches its history is caught (NonDeterminismError) instead of silently diverging.
 */
export class WorkflowReplay {
  private seq = 0;
  private buffer: Command[] = [];
  private readonly awaiting = new Map<number, Pending>();
  private readonly timers = new Map<number, () => void>();
  private waiters: Array<{ seq: number; name: string; resolve: (value: [string, ...unknown[]] | null) => void; timed: boolean }> = [];
  private readonly handlers = new Map<string, Array<(...data: any[]) => unknown>>();
  /** Handlers still running (async `onEvent` handlers): the workflow completes after them. */
  private readonly handling = new Set<Promise<unknown>>();
  private readonly queries = new Map<string, () => unknown>();
  private unclaimed: Array<{ name: string; data: unknown[]; causeId?: string }> = [];
  /** Step outcomes in the history not handed back yet, by seq, with the decision that ran each. */
  private readonly recordedSteps = new Map<number, { outcome: StepOutcome; decision: number }>();
  /** The revision of the `DecisionStarted` being replayed (or run live). */
  private decision = -1;
  /** Step calls in call (seq) order, handed back one at a time (see `settleSteps`). */
  private steps: StepCall[] = [];
  /** Outcomes recorded since the last decision, seen by the code at the next one. */
  private unseen: HistoryEvent[] = [];
  private time = 0;
  private rng: () => number;
  private uuids = 0;
  /**
   * What tells this run's `uuid()` and `random()` from the other runs' of the workflow: empty for
   * its first run (the values it always had), `:<seqBase>` for a run started by continue-as-new,
   * which would otherwise draw the first run's values over again.
   */
  private runSalt = '';
  private replaying = true;
  /** The query handler running now (`answerQueries`), if any: ctx calls from it are refused. */
  private answering: string | undefined;
  private started = false;
  private finished = false;
  private next = 0;

  /**
   * Prepares a replay of one workflow run; nothing runs until {@link WorkflowReplay.execute} or
   * {@link WorkflowReplay.feed}. Workers make these themselves; `baton replay` uses one to check
   * new code against a recorded history.
   * @param workflow - The workflow's definition (the code to replay).
   * @param workflowId - Its id (seeds `ctx.random()` and `ctx.uuid()`, and derives the ids of what it starts).
   * @param input - Its arguments.
   * @param history - The history {@link WorkflowReplay.execute} replays (default empty; {@link WorkflowReplay.feed} takes events instead).
   * @param options - `verifyOnly`: only check the code against the history (default false).
   */
  constructor(
    private readonly workflow: WorkflowDefinition,
    private readonly workflowId: string,
    private readonly input: unknown[],
    private readonly history: HistoryEvent[] = [],
    /**
     * Only check the code against the history (`baton replay`): every decision is a replay, so no
     * step runs (one with no recorded outcome stays pending) and nothing is logged.
     */
    private readonly options: {
      verifyOnly?: boolean;
      /** Steps (by seq) the service refused to record the result of: they fail with this error instead of running. @internal */
      failedSteps?: ReadonlyMap<number, TaskErrorShape>;
    } = {},
  ) {
    this.rng = xoshiro128(createHash('sha256').update(`random:${workflowId}`).digest());
  }

  /** Starts `random()` and `uuid()` for a run (see `runSalt`). */
  private reseed(salt: string): void {
    if (salt === this.runSalt) return;
    this.runSalt = salt;
    this.rng = xoshiro128(createHash('sha256').update(`random:${this.workflowId}${salt}`).digest());
    this.uuids = 0;
  }

  /** The clock of the last decision fed (ms since the epoch): a next decision's may not be earlier. @internal */
  get decisionClock(): number {
    return this.time;
  }

  /** The revision of the next history event this replay expects. */
  get nextRevision(): number {
    return this.next;
  }

  /** True once the code returned, threw or continued as new: nothing more will come of it. */
  get isFinished(): boolean {
    return this.finished;
  }

  /**
   * Each query handler's answer on the current state, as a JSON object string (null when there are
   * none). A handler that throws, or answers what JSON cannot hold, answers `{ error: message }`.
   */
  answerQueries(): string | null {
    if (this.queries.size === 0) return null;
    // Each answer on its own: a handler that throws anything, or answers what JSON cannot hold,
    // must not fail the decision (it was made again and failed again, the workflow stuck).
    const answers: string[] = [];
    for (const [name, handler] of this.queries) {
      let answer: string;
      try {
        this.answering = name;
        let value: unknown;
        try {
          value = handler();
        } finally {
          this.answering = undefined;
        }
        try {
          answer = JSON.stringify(value ?? null) ?? 'null';
        } catch (error) {
          answer = JSON.stringify({ error: cutText(`the answer cannot be written as JSON: ${toError(error).message}`, MAX_ERROR_MESSAGE_LENGTH) });
        }
      } catch (error) {
        // Cut as thrown errors are: a message holding a response body put the answers over the
        // service's JSON limits, and the decision carrying them was refused again and again.
        answer = JSON.stringify({ error: errorText(toError(error)).message });
      }
      answers.push(`${JSON.stringify(name)}:${answer}`);
    }
    return `{${answers.join(',')}}`;
  }

  /**
   * True when the code, as of its last decision, waits on the task of call `seq` and on nothing
   * else (no other task, timer, child, event wait, step or running handler): that task's result is
   * then all the next decision can see, unless an event arrives meanwhile, and the worker may make
   * that decision itself right away (`decideAfterTask`).
   * @internal
   */
  waitsOnlyOnTask(seq: number): boolean {
    return (
      this.started &&
      !this.finished &&
      this.awaiting.size === 1 &&
      this.awaiting.has(seq) &&
      this.timers.size === 0 &&
      this.waiters.length === 0 &&
      this.steps.length === 0 &&
      this.handling.size === 0 &&
      this.unseen.length === 0
    );
  }

  /**
   * Makes the decision that the task of call `seq` succeeding with `result` leads to, at the
   * clock `startedAt`, before the service has recorded either: as if the history went on with the
   * last decision's completion, the result, and a new decision. The worker sends the commands
   * with the result; if the service records them, the replay goes on from the revision it
   * answers (`resumeAt`); if not, the replay is dropped (it no longer matches the history).
   * @internal
   */
  decideAfterTask(seq: number, result: Json, startedAt: number): Promise<Command[]> {
    const at = this.next;
    return this.feed([
      { revision: at, type: 'DecisionCompleted', data: { commands: [...this.buffer] } },
      { revision: at + 1, type: 'TaskCompleted', data: { seq, result } },
      { revision: at + 2, type: 'DecisionStarted', data: { startedAt: new Date(startedAt).toISOString() } },
    ]);
  }

  /**
   * The service recorded the decision made by `decideAfterTask` with its `DecisionStarted` at
   * `revision - 1`: the history fed next starts at `revision`.
   * @internal
   */
  resumeAt(revision: number): void {
    this.next = revision;
  }

  /** Replays the history given to the constructor and returns the commands of the current (last) decision. */
  execute(): Promise<Command[]> {
    return this.feed(this.history);
  }

  /**
   * Feeds history events (in order; ones already fed are skipped) and returns the commands of the
   * newest decision. A worker keeps the replay between decisions and feeds it only what followed
   * (sticky execution), so a decision costs what happened since the previous one, not the whole
   * history. At each `DecisionCompleted` the commands the code produced are checked against the
   * recorded ones.
   * @throws {@link NonDeterminismError} when the code no longer matches the history.
   * @throws {@link WorkflowBlockedError} when, at the end of a live decision (not `verifyOnly`), the
   *   code awaits something that is not a `ctx` call.
   */
  async feed(events: HistoryEvent[]): Promise<Command[]> {
    // A step's outcome is recorded after the decision that ran it, and the code asks for it while
    // that decision replays: collect them first, each with that decision. Steps this replay
    // already ran (lower seqs) are skipped.
    let decision = -1;
    for (const event of events) {
      if (event.type === 'DecisionStarted') decision = event.revision;
      if (event.revision < this.next || !(event.data?.seq >= this.seq)) continue;
      if (event.type === 'StepCompleted') this.recordedSteps.set(event.data.seq, { outcome: { result: event.data.result ?? null }, decision });
      else if (event.type === 'StepFailed') this.recordedSteps.set(event.data.seq, { outcome: { error: event.data.error }, decision });
    }
    for (let i = 0; i < events.length; i++) {
      const event = events[i];
      if (event.revision < this.next) continue;
      this.next = event.revision + 1;
      switch (event.type) {
        case 'WorkflowDispatched':
        case 'WorkflowContinuedAsNew':
          this.seq = event.data.seqBase ?? 0;
          // Only a run whose continue-as-new says so: one recorded before (`ownDraws` absent) drew
          // the first run's values, and its replay must draw them again.
          this.reseed(event.type === 'WorkflowContinuedAsNew' && event.data.ownDraws === true ? `:${this.seq}` : '');
          continue;
        case 'DecisionCompleted':
          if (!this.started) continue;
          this.check(event.data.commands ?? [], event.revision);
          this.buffer = [];
          continue;
        case 'DecisionStarted':
          this.decision = event.revision;
          this.time = Date.parse(event.data.startedAt);
          this.replaying = this.options.verifyOnly === true || i < events.length - 1;
          if (!this.started) {
            this.started = true;
            this.start();
          }
          await drain();
          await this.settleSteps();
          for (const outcome of this.unseen) {
            this.apply(outcome);
            await drain();
            await this.settleSteps();
          }
          this.unseen = [];
          continue;
        default:
          if (OUTCOMES.has(event.type)) this.unseen.push(event);
      }
    }
    if (!this.replaying && this.isBlocked()) {
      throw new WorkflowBlockedError(
        `workflow ${this.workflow.name} (${this.workflowId}) awaits something that is not a ctx call (fetch, a database client, setTimeout?): ` +
          'its decision ends with nothing recorded to wait for, and what the code does once that settles would never be sent. ' +
          'Do I/O in a task (ctx.run) or an inline step (ctx.step), wait with ctx.sleep, ctx.waitForEvent or ctx.onEvent',
      );
    }
    return this.withCarriedEvents([...this.buffer]);
  }

  /**
   * True when the code, at the end of a live decision, neither ended nor waits on anything `ctx`
   * gave it (no task, child, timer, event wait, step, running or registered event handler): it is
   * suspended on a promise of its own. That decision used to complete (with whatever commands came
   * first) and the workflow hung for ever, silently.
   */
  private isBlocked(): boolean {
    return (
      this.started &&
      !this.finished &&
      this.awaiting.size === 0 &&
      this.timers.size === 0 &&
      this.waiters.length === 0 &&
      this.steps.length === 0 &&
      this.handling.size === 0 &&
      this.handlers.size === 0
    );
  }

  /**
   * A decision that continues as new carries the events the run received and its code did not
   * take, as they stand once the decision's history is all fed: the code may have continued as
   * new before events of this decision were handed to it (after a step; or in the replay of a
   * decision the service discarded because they arrived while it ran), and those go too.
   */
  private withCarriedEvents(commands: Command[]): Command[] {
    const last = commands[commands.length - 1];
    if (last?.type !== 'ContinueAsNew') return commands;
    const untaken = [...this.unclaimed];
    for (const e of this.unseen) if (e.type === 'WorkflowEventReceived') untaken.push(receivedEvent(e.data));
    const { events, dropped } = carriedEvents(untaken);
    if (dropped > 0 && !this.replaying) {
      console.warn(
        `[${this.workflow.name} ${this.workflowId}]`,
        `continueAsNew: ${dropped} of ${untaken.length} events received and never taken are not carried into the new run (at most ${MAX_CARRIED_EVENTS} events and ${MAX_CARRIED_EVENT_BYTES} bytes are, the most recent first)`,
      );
    }
    commands[commands.length - 1] = events.length > 0 ? { ...last, events } : last;
    return commands;
  }

  /**
   * Hands step outcomes back to the code, one at a time in call order, letting the code run on
   * (and call more steps) after each. Replay and the live decision go through this same sequence,
   * whenever steps finish, so the code makes the same calls in the same order on both. A recorded
   * outcome is handed back at the decision that ran the step, not before (the code after it sees
   * that decision's clock, as it did live). A replayed decision waits at a step with no recorded
   * outcome (its decision was never recorded): the live decision runs it.
   */
  private async settleSteps(): Promise<void> {
    while (this.steps.length > 0) {
      for (const call of this.steps) call.outcome ??= this.outcomeOf(call);
      const call = this.steps[0];
      if (!call.outcome) return;
      const outcome = await call.outcome;
      this.steps.shift();
      if (outcome.error) call.reject(new TaskFailedError(outcome.error.message, outcome.error.name));
      else call.resolve(outcome.result);
      await drain();
    }
  }

  private outcomeOf(call: StepCall): Promise<StepOutcome> | undefined {
    const recorded = this.recordedSteps.get(call.seq);
    if (recorded && recorded.decision <= this.decision) {
      // Recorded already (this decision replays, or follows a retry): nothing new to record.
      this.recordedSteps.delete(call.seq);
      return Promise.resolve(recorded.outcome);
    }
    return this.replaying ? undefined : this.runStep(call);
  }

  /** Runs a step's function in this decision (with its retries); its outcome goes in the step's command. */
  private async runStep(call: StepCall): Promise<StepOutcome> {
    const refused = this.options.failedSteps?.get(call.seq);
    if (refused) {
      call.command.error = refused;
      return { error: refused };
    }
    const policy = call.retry ? resolveRetryPolicy(call.retry) : undefined;
    const attempts = Math.max(1, policy?.maxAttempts ?? 1);
    for (let attempt = 1; ; attempt++) {
      try {
        const value = await runAttempt(call, attempt);
        // What replay will hand back is the JSON the service records: the live code gets the same.
        const result = (value === undefined ? null : JSON.parse(JSON.stringify(value))) as Json;
        call.command.result = result;
        return { result };
      } catch (thrown) {
        const e = toError(thrown);
        if (attempt < attempts && !(e instanceof NonRetryableError)) {
          await delay(stepRetryDelay(policy!, attempt, e));
          continue;
        }
        const text = errorText(e);
        const error: TaskErrorShape = { message: text.message, ...(text.name && text.name !== 'Error' ? { name: text.name } : {}) };
        call.command.error = error;
        return { error };
      }
    }
  }

  private apply(event: HistoryEvent): void {
    switch (event.type) {
      case 'TaskCompleted':
      case 'ChildWorkflowCompleted':
        return this.settle(event.data.seq, (p) => p.resolve(event.data.result));
      case 'TaskFailed':
      case 'ChildWorkflowFailed':
        return this.settle(event.data.seq, (p) => p.reject(new TaskFailedError(event.data.error?.message ?? 'failed', event.data.error?.name)));
      case 'TimerFired': {
        const fire = this.timers.get(event.data.seq);
        this.timers.delete(event.data.seq);
        return fire?.();
      }
      case 'WorkflowEventReceived':
        return this.deliver(event.data.name, event.data.data ?? [], event.data.causeId);
    }
  }

  private start(): void {
    const ctx = this.context();
    Promise.resolve()
      .then(() => this.workflow.handler(ctx, ...this.input))
      .then(async (result) => {
        while (this.handling.size > 0) await Promise.all([...this.handling]);
        return result;
      })
      .then(
        (result) => this.finish({ type: 'CompleteWorkflow', result: (result === undefined ? null : result) as never }),
        (error: unknown) => {
          this.finish({ type: 'FailWorkflow', error: errorText(toError(error)) });
        },
      );
  }

  private finish(command: Command): void {
    if (this.finished) return;
    this.finished = true;
    this.buffer.push(command);
  }

  private command(command: Command): void {
    if (!this.finished) this.buffer.push(command);
  }

  private check(recorded: Command[], revision: number): void {
    const produced = this.buffer;
    const n = Math.max(produced.length, recorded.length);
    const seqOf = (c: Command) => ('seq' in c ? c.seq : undefined);
    const nameOf = (c: Command) => ('name' in c ? c.name : null);
    for (let i = 0; i < n; i++) {
      const a = produced[i];
      const b = recorded[i];
      if (!a || !b || a.type !== b.type || seqOf(a) !== seqOf(b) || nameOf(a) !== nameOf(b)) {
        throw new NonDeterminismError(
          `workflow ${this.workflow.name} (${this.workflowId}) no longer matches its history at revision ${revision}: ` +
            `the code produced ${describe(a)} where the history has ${describe(b)}`,
          revision,
        );
      }
    }
  }

  private settle(seq: number, how: (p: Pending) => void): void {
    const pending = this.awaiting.get(seq);
    if (!pending) return;
    this.awaiting.delete(seq);
    how(pending);
  }

  private deliver(name: string, data: unknown[], causeId?: string): void {
    // A run that ended (it continued as new, in this decision or in the replay of one discarded)
    // takes nothing more: what it receives is kept for the new run.
    if (this.finished) {
      this.unclaimed.push(causeId === undefined ? { name, data } : { name, data, causeId });
      return;
    }
    // An event named '*' is not for the wildcard's handlers as a name of theirs: they get it as
    // every other event, with its name first.
    const handlers = name === '*' ? [] : (this.handlers.get(name) ?? []);
    for (const handler of handlers) this.runHandler(() => handler(...data));
    const index = this.waiters.findIndex((w) => w.name === name);
    if (index >= 0) {
      const [waiter] = this.waiters.splice(index, 1);
      if (waiter.timed) {
        this.timers.delete(waiter.seq);
        this.command({ type: 'CancelTimer', seq: waiter.seq });
      }
      waiter.resolve([name, ...data]);
    } else if (handlers.length === 0) {
      const any = this.handlers.get('*') ?? [];
      if (any.length > 0) for (const handler of any) this.runHandler(() => handler(name, ...data));
      else this.unclaimed.push(causeId === undefined ? { name, data } : { name, data, causeId });
    }
  }

  /** Runs an event handler; an async one is waited for before the workflow completes, and fails it if it throws. */
  private runHandler(call: () => unknown): void {
    let result: unknown;
    try {
      result = call();
    } catch (error) {
      this.failFromHandler(error);
      return;
    }
    if (result && typeof (result as Promise<unknown>).then === 'function') {
      const work: Promise<unknown> = Promise.resolve(result).then(
        () => this.handling.delete(work),
        (error: unknown) => {
          this.handling.delete(work);
          this.failFromHandler(error);
        },
      );
      this.handling.add(work);
    }
  }

  private failFromHandler(error: unknown): void {
    const { message, name } = errorText(toError(error));
    this.finish({ type: 'FailWorkflow', error: { message: cutText(`event handler failed: ${message}`, MAX_ERROR_MESSAGE_LENGTH), name } });
  }

  private await<T>(seq: number): Promise<T> {
    return handledLater(new Promise<T>((resolve, reject) => this.awaiting.set(seq, { resolve, reject })));
  }

  private context(): WorkflowContext {
    const self = this;
    const childArgs = (args: unknown[]): { args: unknown[]; tag: string | null } => {
      const last = args[args.length - 1] as ChildOptions | undefined;
      if (last && typeof last === 'object' && CHILD_OPTIONS in last) return { args: args.slice(0, -1), tag: last.tag ?? null };
      return { args, tag: null };
    };
    const nameOf = (target: { name: string } | string) => (typeof target === 'string' ? target : target.name);
    // A step's function runs once, live, and not on replay; a query handler runs after a worker's
    // decisions, not on replay: what a ctx call there records or draws would differ between a run
    // held by its worker and one replayed (NON_DETERMINISTIC, or other random values), and what it
    // waits on (a task, a timer, another step) only a later decision can settle, while the decision
    // waits on the step: it never ended. Refused, saying where.
    const recordable = (method: string) => {
      const step = insideStep.getStore();
      if (step !== undefined) {
        throw new TypeError(
          `ctx.${method} cannot be called inside the function of ctx.step(${JSON.stringify(step)}): a step's function runs once and is not run again on replay, ` +
            `and the decision waits on it; call ctx.${method} from the workflow code, before or after the step`,
        );
      }
      if (self.answering !== undefined) {
        throw new TypeError(
          `ctx.${method} cannot be called in the query handler ${JSON.stringify(self.answering)}: query handlers run after a worker's decisions, not on replay; ` +
            'answer from state the workflow code keeps',
        );
      }
    };
    const log = (level: 'info' | 'warn' | 'error') => (...args: unknown[]) => {
      if (!self.replaying) console[level](`[${self.workflow.name} ${self.workflowId}]`, ...args);
    };
    const control = (selector: Selector, action: 'send' | 'pause' | 'resume' | 'terminate', event?: { name: string; data: unknown[] }) => {
      recordable(`select(...).${action}`);
      self.command({ type: 'ControlWorkflows', seq: self.seq++, selector, action, ...(event ? { event: { name: event.name, data: event.data as Json[] } } : {}) });
    };
    const ctx: WorkflowContext = {
      workflowId: this.workflowId,
      get isReplaying() {
        return self.replaying;
      },
      run(task, ...args) {
        recordable('run');
        const seq = self.seq++;
        self.command({ type: 'ScheduleTask', seq, name: nameOf(task), args: args as Json[] });
        return self.await(seq);
      },
      step(name, fn, options = {}) {
        recordable('step');
        if (self.finished) return new Promise(() => {});
        // A name the service refuses had the step run, its decision refused and made again, running it again each time.
        if (typeof name !== 'string' || name.length === 0 || name.length > MAX_STEP_NAME_LENGTH || !PRINTABLE_NAME.test(name)) {
          throw new TypeError(`step name must be a string of 1 to ${MAX_STEP_NAME_LENGTH} characters without control characters or unpaired surrogates, not ${JSON.stringify(String(name).slice(0, 80))}`);
        }
        const seq = self.seq++;
        // A bad duration throws here, in the workflow's code, as a bad argument to any call would.
        const timeoutMs = options.timeout === undefined ? undefined : toMs(options.timeout);
        const command: RecordStep = { type: 'RecordStep', seq, name };
        self.command(command);
        return handledLater(new Promise((resolve, reject) => self.steps.push({ seq, fn, retry: options.retry, timeoutMs, command, resolve, reject })));
      },
      dispatch(target, ...args) {
        recordable('dispatch');
        const seq = self.seq++;
        if (typeof target !== 'string' && target.kind === 'workflow') {
          const child = childArgs(args);
          self.command({ type: 'StartChildWorkflow', seq, name: target.name, args: child.args as Json[], tag: child.tag, wait: false });
        } else {
          self.command({ type: 'DispatchTask', seq, name: nameOf(target), args: args as Json[] });
        }
        return callId(self.workflowId, seq);
      },
      workflow(workflow, ...args) {
        recordable('workflow');
        const seq = self.seq++;
        const child = childArgs(args);
        self.command({ type: 'StartChildWorkflow', seq, name: nameOf(workflow), args: child.args as Json[], tag: child.tag, wait: true });
        return self.await(seq);
      },
      sleep(duration) {
        recordable('sleep');
        // Through the context itself, not `this`: taken off ctx (`const { sleep } = ctx`), as every other method works.
        return ctx.sleepUntil(self.time + toMs(duration));
      },
      sleepUntil(date) {
        recordable('sleepUntil');
        const seq = self.seq++;
        const at = isMoment(date) ? resolveMoment(date, self.time) : new Date(date).getTime();
        if (Number.isNaN(at)) throw new RangeError(`invalid date: ${String(date)}`);
        self.command({ type: 'StartTimer', seq, fireAt: new Date(at).toISOString() });
        return new Promise<void>((resolve) => self.timers.set(seq, resolve));
      },
      waitForEvent(name, options = {}) {
        recordable('waitForEvent');
        const seq = self.seq++;
        // A run that ended (continued as new) takes nothing: its untaken events go to the new run.
        if (self.finished) return new Promise<never>(() => {});
        const index = self.unclaimed.findIndex((e) => e.name === name);
        if (index >= 0) {
          const [event] = self.unclaimed.splice(index, 1);
          return Promise.resolve([name, ...event.data] as [string, ...unknown[]]);
        }
        // A bad duration rejects the call before any wait is registered (a wait left behind took
        // the next event of that name). Same seq, same rejection as before: old histories replay the same.
        // A timeout past the last date a Date can hold rejects the same way (its fireAt cannot be written).
        let fireAt: string | undefined;
        try {
          const timeoutMs = options.timeout === undefined ? undefined : toMs(options.timeout);
          fireAt = timeoutMs === undefined ? undefined : new Date(self.time + timeoutMs).toISOString();
        } catch (error) {
          return Promise.reject(error);
        }
        return new Promise((resolve) => {
          const timed = fireAt !== undefined;
          self.waiters.push({ seq, name, resolve, timed });
          if (fireAt !== undefined) {
            self.command({ type: 'StartTimer', seq, fireAt });
            self.timers.set(seq, () => {
              self.waiters = self.waiters.filter((w) => w.seq !== seq);
              resolve(null);
            });
          }
        });
      },
      onEvent(name, handler) {
        recordable('onEvent');
        if (self.finished) return; // as waitForEvent: what the ended run received goes to the new run
        self.handlers.set(name, [...(self.handlers.get(name) ?? []), handler]);
        const earlier = self.unclaimed.filter((e) => name === '*' || e.name === name);
        self.unclaimed = self.unclaimed.filter((e) => !(name === '*' || e.name === name));
        for (const event of earlier) self.runHandler(() => (name === '*' ? handler(event.name, ...event.data) : handler(...event.data)));
      },
      onQuery(name, handler) {
        self.queries.set(name, handler);
      },
      schedule(cron, options = {}) {
        const create = (kind: 'workflow' | 'task', target: { name: string } | string, args: unknown[]) => {
          recordable(`schedule(...).${kind}`);
          const seq = self.seq++;
          self.command({ type: 'CreateSchedule', seq, kind, name: nameOf(target), args: args as Json[], cron, timezone: options.timezone ?? null, tag: options.tag ?? null });
          return callId(self.workflowId, seq);
        };
        return {
          workflow: (target, ...args) => create('workflow', target, args),
          task: (target, ...args) => create('task', target, args),
        };
      },
      select(selector) {
        return {
          send: (event, ...data) => control(selector, 'send', { name: event, data }),
          pause: () => control(selector, 'pause'),
          resume: () => control(selector, 'resume'),
          terminate: () => control(selector, 'terminate'),
        };
      },
      now: () => new Date(self.time),
      random: () => {
        recordable('random');
        return self.rng();
      },
      uuid() {
        recordable('uuid');
        const bytes = createHash('sha256').update(`uuid:${self.workflowId}${self.runSalt}:${self.uuids++}`).digest().subarray(0, 16);
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        const h = bytes.toString('hex');
        return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
      },
      continueAsNew(...args) {
        recordable('continueAsNew');
        // The events it carries are filled in when the decision's commands are handed over (`withCarriedEvents`).
        self.finish({ type: 'ContinueAsNew', seq: self.seq++, args: args as Json[], at: new Date(self.time).toISOString() });
        return new Promise<never>(() => {});
      },
      log: { info: log('info'), warn: log('warn'), error: log('error') },
    };
    return ctx;
  }
}

/**
 * Workflow code that, at the end of a decision, awaits something that is not a `ctx` call (`fetch`,
 * a database client, `setTimeout`): the worker reports the decision failed with code
 * `WORKFLOW_BLOCKED`, and the workflow stays where it was until code that does its I/O in tasks or
 * steps runs it.
 */
export class WorkflowBlockedError extends Error {
  /** The failure code the worker reports for the decision (`DecisionFailed.code`). */
  readonly code = 'WORKFLOW_BLOCKED';
  /**
   * Thrown by the SDK's replay, not by user code.
   * @param message - Which workflow, and what to do instead.
   */
  constructor(message: string) {
    super(message);
    this.name = 'WorkflowBlockedError';
  }
}

const OUTCOMES = new Set(['TaskCompleted', 'TaskFailed', 'ChildWorkflowCompleted', 'ChildWorkflowFailed', 'TimerFired', 'WorkflowEventReceived']);

/** The name of the step whose function runs in this async context (ctx calls there are refused). */
const insideStep = new AsyncLocalStorage<string>();

/** One attempt of a step: its function, raced against its timeout when it has one. */
async function runAttempt(call: StepCall, attempt: number): Promise<unknown> {
  const abort = new AbortController();
  if (call.timeoutMs === undefined) return insideStep.run(call.command.name, () => call.fn({ attempt, signal: abort.signal }));
  const ms = call.timeoutMs;
  let cancel: (() => void) | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    cancel = after(ms, () => {
      const error = new Error(`step ${call.command.name} timed out after ${ms} ms`);
      abort.abort(error);
      reject(error);
    });
  });
  try {
    return await Promise.race([insideStep.run(call.command.name, async () => call.fn({ attempt, signal: abort.signal })), timedOut]);
  } finally {
    cancel?.();
  }
}

/** The wait after a step's failed `attempt`: the error's own `retryAfterMs`, else the policy's backoff (as for tasks). */
function stepRetryDelay(policy: RetryPolicyMs, attempt: number, error: Error): number {
  if (error instanceof RetryableError && error.retryAfterMs !== undefined) return Math.max(0, error.retryAfterMs);
  return backoffDelay(policy, attempt);
}

/** The longest step name the service records (its MAX_NAME_LENGTH). */
const MAX_STEP_NAME_LENGTH = 256;
/** A name the service takes: no control characters, no unpaired surrogates (as its PRINTABLE). @internal */
export const PRINTABLE_NAME = /^(?:[^\u0000-\u001f\u007f-\u009f\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])*$/;

/** Most events received and never taken that a continue-as-new carries into the new run. */
export const MAX_CARRIED_EVENTS = 1000;
/** Most bytes of JSON those events may take (a quarter of the service's default MAX_DECISION_BYTES). */
export const MAX_CARRIED_EVENT_BYTES = 245_760;

/**
 * The untaken events a continue-as-new carries, in order: from the most recent back, each that
 * fits what is left of MAX_CARRIED_EVENT_BYTES, up to MAX_CARRIED_EVENTS (one too large is passed
 * over, older ones may still fit). Carried from run to run, events a workflow never takes would
 * otherwise pile up until its continue-as-new no longer fits in a decision (refused for ever).
 */
function carriedEvents(unclaimed: ReadonlyArray<{ name: string; data: unknown[]; causeId?: string }>): { events: Array<{ name: string; data: Json[]; causeId?: string }>; dropped: number } {
  const events: Array<{ name: string; data: Json[]; causeId?: string }> = [];
  let bytes = 0;
  for (let i = unclaimed.length - 1; i >= 0 && events.length < MAX_CARRIED_EVENTS; i--) {
    const e = unclaimed[i];
    const event = e.causeId === undefined ? { name: e.name, data: e.data as Json[] } : { name: e.name, data: e.data as Json[], causeId: e.causeId };
    const size = Buffer.byteLength(JSON.stringify(event), 'utf8');
    // One too large for what is left is passed over; older, smaller ones may still fit.
    if (bytes + size > MAX_CARRIED_EVENT_BYTES) continue;
    bytes += size;
    events.push(event);
  }
  return { events: events.reverse(), dropped: unclaimed.length - events.length };
}

/** A received event as the run keeps it untaken. */
function receivedEvent(data: { name: string; data?: unknown[]; causeId?: string }): { name: string; data: unknown[]; causeId?: string } {
  return data.causeId === undefined ? { name: data.name, data: data.data ?? [] } : { name: data.name, data: data.data ?? [], causeId: data.causeId };
}

/**
 * A promise handed to workflow code that may reject (a task, a child, a step): the code may await
 * it later than its failure is replayed (`const p = ctx.run(a); await ctx.waitForEvent('go');
 * await p`), which Node would report as an unhandled rejection and, by default, end the worker
 * process with every workflow it runs. The code's own `await` or `.catch` still gets the error.
 */
function handledLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/** Lets every promise continuation that is ready run (all microtasks) before going on. */
const drain = () => new Promise<void>((resolve) => setImmediate(resolve));

function describe(command: Command | undefined): string {
  if (!command) return 'nothing';
  const seq = 'seq' in command ? ` #${command.seq}` : '';
  const name = 'name' in command ? ` (${command.name})` : '';
  return `${command.type}${seq}${name}`;
}

/** xoshiro128**: a small PRNG with 128 bits of state, seeded from a hash (never all zero). */
function xoshiro128(seed: Buffer): () => number {
  let a = seed.readUInt32LE(0) | 1;
  let b = seed.readUInt32LE(4);
  let c = seed.readUInt32LE(8);
  let d = seed.readUInt32LE(12);
  return () => {
    const result = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
    const t = b << 9;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return result / 4294967296;
  };
}

const rotl = (x: number, k: number) => (x << k) | (x >>> (32 - k));
