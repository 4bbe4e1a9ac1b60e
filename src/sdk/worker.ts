import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { BatonRequestError, Client, isTransient } from './client.js';
import { type TaskDefinition, type WorkflowDefinition, resolveRetryPolicy } from './definitions.js';
import { toMs } from './duration.js';
import { jsonStringBytes } from './json-size.js';
import { NonDeterminismError, NonRetryableError, RetryableError } from './errors.js';
import {
  DECISION_HISTORY,
  HEARTBEAT,
  MAX_ERROR_MESSAGE_LENGTH,
  type HistoryEvent,
  type Json,
  POLL_WORK,
  REPORT_WORK,
  type RetryPolicyMs,
  type TaskErrorShape,
  type WireDecided,
  type WireDecisionReport,
  type WireNextDecision,
  type WireTaskReport,
  type WireWorkItem,
  parseRef,
  replayableHistory,
} from '../protocol/index.js';
import { cutText, errorText, toError } from './thrown.js';
import { after } from './timers.js';
import { PRINTABLE_NAME, WorkflowBlockedError, WorkflowReplay } from './workflow-context.js';

/** The longest task or workflow name the service takes (its MAX_NAME_LENGTH). */
const MAX_NAME_LENGTH = 256;

/**
 * What a {@link Worker} serves and how: the service to poll, the app and environment it works for,
 * its task and workflow definitions, and tuning (all optional, with defaults).
 */
export interface WorkerOptions {
  /** Base URL of the Baton service, `http://` or `https://` (e.g. `http://localhost:3000`). */
  url: string;
  /** API token scoped to `appId`. */
  token: string;
  /** The app whose work this worker polls for (1–128 characters); the token must grant access to it. */
  appId: string;
  /** The environment of the app it works in, e.g. `production` (1–128 characters): it gets only work dispatched there. */
  environment: string;
  /** Tasks this worker runs. */
  tasks?: TaskDefinition[];
  /** Workflows this worker runs (each version is its own definition: `Name_v1`, `Name_v2`). */
  workflows?: WorkflowDefinition[];
  /**
   * Most task attempts running at once.
   * @default 10
   */
  concurrency?: number;
  /**
   * Most decisions (a workflow's code run up to its next step, inline steps included) running at
   * once. Decisions have slots of their own, polled for apart from tasks: workflows keep moving
   * while every task slot is held by a long task.
   * @default the same as `concurrency`
   */
  decisionConcurrency?: number;
  /**
   * Shown in histories as the claimer of work.
   * @default `<hostname>-<pid>-<random>`
   */
  workerId?: string;
  /**
   * How long one poll waits for work on the server (0 to 60,000 ms, what the service takes).
   * @default 20000
   */
  pollWaitMs?: number;
  /**
   * How often running task attempts, and decisions still running inline steps, report they are
   * alive (keep it well under the server's `LEASE_MS`: the worker warns once when it is more than
   * half the lease of the work it is handed).
   * @default 5000
   */
  heartbeatIntervalMs?: number;
  /**
   * How long `shutdown()` waits for running work. Task attempts still running then are aborted
   * and given back to the server (released): another worker gets them at once, and the attempt
   * does not count against their retries.
   * @default 30000
   */
  shutdownGraceMs?: number;
  /**
   * Most workflow runs kept in memory between their decisions (sticky execution). A run this
   * worker still holds is continued from where it stopped with only the new history; a run it no
   * longer holds (evicted, or decided elsewhere) is replayed from its history.
   * @default 1000
   */
  maxCachedWorkflows?: number;
  /**
   * Take the work a report makes claimable in the report's answer (the tasks a decision scheduled,
   * the decision a task result made pending), instead of waiting for the next poll: one round trip
   * and one append fewer per workflow step.
   * @default true
   */
  eagerDispatch?: boolean;
  /**
   * When a task of a workflow this worker holds succeeds and the workflow waits on nothing else,
   * make the decision that follows right away and report it with the task's result: the service
   * records both in one append when nothing else happened to the workflow meanwhile (else the
   * decision is made as usual). One round trip and one append fewer per sequential task. Needs
   * `eagerDispatch`.
   * @default true
   */
  decideAfterTasks?: boolean;
  /**
   * Largest request body, in bytes, the worker builds when it reports several outcomes at once;
   * outcomes beyond it go in further reports. Keep it under the service's `BODY_LIMIT_BYTES`
   * (1 MiB by default): two decisions that each start thousands of tasks would otherwise make one
   * request the service refuses (HTTP 413) every time it is sent. One outcome larger than this is
   * sent alone; if the service refuses it for its size, a decision is recorded as failed
   * (`DECISION_REJECTED`).
   * @default 786432 (768 KiB)
   */
  maxReportBytes?: number;
  /**
   * Where the worker logs (default: console). A service unreachable, restarting or refusing (polls,
   * heartbeats and reports failing; the worker keeps trying, with backoff and after the service's
   * `Retry-After`) is one warning when requests start failing, one a minute while they do, and one
   * info line when the service answers again.
   */
  logger?: Pick<Console, 'info' | 'warn' | 'error'>;
}

/**
 * The longest delay a task's `RetryableError` may ask for, as the service takes it: the report
 * carries it as a GraphQL Int (about 24.8 days). 365 days, as before, was refused by the Int's
 * coercion, and with it the whole report (every outcome sent alongside).
 */
const MAX_RETRY_AFTER_MS = 2 ** 31 - 1;

/** The longest a poll may wait for work on the service (its pollWork `waitMs` takes up to 60 s). */
const MAX_POLL_WAIT_MS = 60_000;

/** The longest duration the worker protocol carries (a GraphQL Int of milliseconds). */
const MAX_PROTOCOL_MS = 2 ** 31 - 1;

/** About how many bytes an outcome adds to a report's body: its JSON, its large strings escaped once more as GraphQL variables. */
function reportBytes(report: DecisionReport | TaskReport): number {
  const r = report as {
    commands?: string;
    result?: string;
    failureMessage?: string;
    error?: { message?: string; name?: string } | null;
    next?: { commands: string; queries?: string } | null;
    queries?: string;
  };
  let bytes = 200;
  for (const text of [r.commands, r.result, r.failureMessage, r.error?.message, r.error?.name, r.next?.commands, r.next?.queries, r.queries]) {
    if (typeof text === 'string') bytes += jsonStringBytes(text);
  }
  return bytes;
}

type WorkItem = WireWorkItem;
type WorkKind = WorkItem['kind'];
/** A workflow run held between decisions (sticky execution), with the last decision this worker made on it. */
interface HeldRun {
  replay: WorkflowReplay;
  runFrom: number;
  decisionId: string;
  /** The definition's `Name_vN`. */
  version: string;
}
/**
 * Whether the history of a claimed decision goes on from where a held run stopped: from right
 * after the decision the run made (the service sends only what followed it), or from earlier
 * through that decision's own `DecisionStarted`. A log that no longer has that decision (a store
 * restored from a backup taken before it) does not: the held run is ahead of it, and skipping the
 * history's events at revisions it had seen fed it nothing of what the log now holds there.
 */
function heldRunContinues(run: HeldRun, history: HistoryEvent[], historyFrom: number): boolean {
  const next = run.replay.nextRevision;
  if (historyFrom === next) return true;
  if (historyFrom > next) return false;
  const started = history.find((e) => e.revision === next - 1);
  return started?.type === 'DecisionStarted' && (started.data as { decisionId?: string } | null)?.decisionId === run.decisionId;
}
type DecisionReport = WireDecisionReport;
type TaskReport = WireTaskReport;

/** A string's length as the service's MaxLength counts it (validator's isLength): a surrogate pair is one character, a variation selector none. */
function serviceLength(value: string): number {
  return value.length - (value.match(/[\ud800-\udbff][\udc00-\udfff]/g)?.length ?? 0) - (value.match(/[\ufe0e\ufe0f]/g)?.length ?? 0);
}

/**
 * Runs tasks and workflows for one app and environment: long-polls Baton for work, executes
 * it, reports outcomes in batches, and heartbeats running tasks.
 * @example
 * const worker = new Worker({
 *   url: 'http://localhost:3000', token: process.env.BATON_TOKEN!, appId: 'demo', environment: 'dev',
 *   tasks: [sendWelcome, sendReminder], workflows: [onboarding],
 * });
 * process.on('SIGTERM', () => void worker.shutdown());
 * await worker.run();
 */
export class Worker {
  /** The id this worker claims work under, shown in histories (`DecisionStarted.workerId`, `TaskStarted.workerId`): `options.workerId`, or `<hostname>-<pid>-<random>`. */
  readonly workerId: string;
  private readonly client: Client;
  private readonly tasks: Map<string, TaskDefinition>;
  private readonly workflows: Map<string, WorkflowDefinition>;
  /** Slots of each kind of work. */
  private readonly limits: Record<WorkKind, number>;
  private readonly logger: Pick<Console, 'info' | 'warn' | 'error'>;
  private readonly running = new Map<string, { attemptId: string; abort: AbortController }>();
  /** Attempts aborted by shutdown: reported as released, not failed. */
  private readonly releasing = new Set<string>();
  /**
   * Running attempts the service told to stop because their workflow failed: their failure is the
   * stop, not the task's, so they are given back (not counted against their retries) and run again
   * if the workflow is retried.
   */
  private readonly stoppedForFailedWorkflow = new Set<string>();
  /** Work running, by kind (each holds one slot of its kind until its report is answered). */
  private readonly inFlight: Record<WorkKind, Set<Promise<void>>> = { DECISION: new Set(), TASK: new Set() };
  /**
   * Claimed work waiting for a slot of its kind, oldest first; heartbeated, so its lease holds.
   * Claims can outrun the slots: a parked poll and a report's eager claim are both answered from
   * the same free slots, and the service cannot know what the other was given. The slots bound
   * what runs.
   */
  private readonly waiting: Record<WorkKind, WorkItem[]> = { DECISION: [], TASK: [] };
  /**
   * Free slots of each kind that requests in flight may fill with new work: a poll's `maxItems`, a
   * report's `fillDecisions` / `fillTasks`. A report asks to fill only the slots no other request
   * asks for (the service answers each from the same waiting work: both filled, the worker held
   * more than its concurrency, found in review).
   */
  private readonly asked: Record<WorkKind, number> = { DECISION: 0, TASK: 0 };
  /** Poll loops waiting for a report's claim to end and give back the free slots it asked to fill. */
  private readonly fillWaiters: Record<WorkKind, Array<() => void>> = { DECISION: [], TASK: [] };
  private readonly stopping = new AbortController();
  /** Whether shutdown's grace has run out: finished tasks are then reported without the decision being made after them. */
  private graceOver = false;
  /** Tasks whose report waits for the decision made after them: told when the grace runs out. */
  private readonly graceWaiters = new Set<() => void>();
  /** Aborted once `run()` has ended: heartbeat requests still in flight are given up, not left open (holding the process) for their timeout. */
  private readonly ended = new AbortController();
  private readonly stopped = new Promise<void>((resolve) => this.stopping.signal.addEventListener('abort', () => resolve(), { once: true }));
  private decisionReports: DecisionReport[] = [];
  private taskReports: TaskReport[] = [];
  /** Leases of the outcomes waiting to be reported: a report is retried for as long as one holds. */
  private reportLeases: number[] = [];
  /** Workflow runs held between decisions, least recently used first. */
  private readonly runs = new Map<string, HeldRun>();
  /** Inline steps whose result the service refused to record, by workflow id then seq: the next decision fails them (at most 1,000 workflows). */
  private readonly refusedSteps = new Map<string, Map<number, TaskErrorShape>>();
  /** Runs whose next decision was sent with a task's result, by the task's ref, until the answer says whether it was recorded. */
  private readonly sentDecisions = new Map<string, { workflowId: string; run: HeldRun }>();
  /** Next decisions the service did not record, in a row; past a few, the worker stops making them for a while. */
  private refusedInARow = 0;
  private decideAfterTasksFrom = 0;
  /**
   * Until when polls and eager claims leave out `maxDecisions` / `maxTasks` (0: they send them): a
   * service older than this worker refuses those fields, and is asked with `maxItems` alone, as
   * before them, for five minutes at a time (it may be upgraded meanwhile).
   */
  private perKindCapsFrom = 0;
  /** Until when polls leave out `pollId` (0: they send it), a service older than this worker refusing it (as `perKindCapsFrom`). */
  private pollIdsFrom = 0;
  /** The same for the `pollId` of a report's claim (a service that knows a poll's id may not know a claim's). */
  private claimIdsFrom = 0;
  private flushing: Promise<void> | undefined;
  /** Decisions being made now, by ref, with their decision ids (heartbeated like task attempts). */
  private readonly deciding = new Map<string, string>();
  private runPromise: Promise<void> | undefined;
  /** The heartbeat request in flight: ticks and tasks' calls that come meanwhile share it. */
  private heartbeating: Promise<void> | undefined;
  /** When the last heartbeat request went out (ms since the epoch). */
  private lastHeartbeatAt = 0;
  /** When the heartbeat request in flight (`heartbeating`) was started (ms since the epoch). */
  private heartbeatSentAt = 0;
  /**
   * Most items (outcomes, or attempts heartbeated) sent in one request: 500, under the service's
   * default MAX_REPORT_ITEMS (1,000), or that limit as the service states it when it refuses more.
   */
  private itemsPerRequest = 500;
  /** Whether the heartbeat interval was found too long for the service's leases (warned once). */
  private leaseWarned = false;
  /** Requests failing in a row (an outage), logged once when it starts, once a minute while it lasts, and once when it ends. */
  private outage: { since: number; failures: number; announced: boolean } | undefined;
  /** When the last outage warning was logged: at most one a minute, over one outage or several short ones. */
  private outageWarnedAt = Number.NEGATIVE_INFINITY;
  private registered: { workflows: string[]; tasks: Array<{ name: string; retry: RetryPolicyMs | null; timeoutMs: number | null }> } | undefined;

  /**
   * Makes a worker; it contacts the service only once {@link Worker.run} is called. Tasks and
   * workflows are served under their definitions' names (a later definition of the same name
   * replaces an earlier one).
   * @param options - Service, token, app, environment, definitions and tuning; see {@link WorkerOptions}.
   * @throws TypeError when `url` is not an `http://` or `https://` URL, `concurrency` or `decisionConcurrency` is not a whole number of at least 1,
   *   `heartbeatIntervalMs` is not a whole number of at least 1 (ms), `shutdownGraceMs`, `pollWaitMs` or `maxCachedWorkflows`
   *   is not a whole number of at least 0, `pollWaitMs` is past 60,000, any other of them is past 2^31 - 1,
   *   a task's timeout or retry delay is longer than the protocol carries (2^31 - 1 ms, about 24.8 days), a task's timeout
   *   is under 1 ms (as sent, rounded), a task or workflow name is not 1 to 256 characters without control characters,
   *   `workerId`, `appId` or `environment` is not 1 to 128 such characters, or there are more than 1,000 tasks or workflows
   *   (what the service takes in a poll; lengths counted as the service counts them, a surrogate pair as one character).
   */
  constructor(private readonly options: WorkerOptions) {
    // The default within the service's 128 characters whatever the host's name (a long FQDN).
    this.workerId = options.workerId ?? `${hostname().slice(0, 100)}-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.client = new Client({ url: options.url, token: options.token });
    this.tasks = new Map((options.tasks ?? []).map((t) => [t.name, t]));
    this.workflows = new Map((options.workflows ?? []).map((w) => [w.name, w]));
    const concurrency = options.concurrency ?? 10;
    this.limits = { TASK: concurrency, DECISION: options.decisionConcurrency ?? concurrency };
    for (const [option, value] of [['concurrency', this.limits.TASK], ['decisionConcurrency', this.limits.DECISION]] as const) {
      // A worker with no slot of a kind would never poll for it, and say nothing.
      if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`${option} must be a whole number of at least 1, not ${String(value)}`);
    }
    // NaN (a flag of `5s`), 0 or past 2^31 - 1 ms: Node's timers take each as 1 ms, a heartbeat
    // request every millisecond or a shutdown grace of none.
    // A poll's wait past the service's 60 s had every poll refused (BAD_USER_INPUT), for ever.
    const timings: Array<[string, number | undefined, number, number]> = [
      ['heartbeatIntervalMs', options.heartbeatIntervalMs, 1, MAX_PROTOCOL_MS],
      ['shutdownGraceMs', options.shutdownGraceMs, 0, MAX_PROTOCOL_MS],
      ['pollWaitMs', options.pollWaitMs, 0, MAX_POLL_WAIT_MS],
      ['maxCachedWorkflows', options.maxCachedWorkflows, 0, MAX_PROTOCOL_MS],
    ];
    for (const [option, value, least, most] of timings) {
      if (value !== undefined && !(Number.isInteger(value) && value >= least && value <= most)) {
        throw new TypeError(`${option} must be a whole number from ${least} to ${most}, not ${String(value)}`);
      }
    }
    // What every poll declares, as the service checks it (PollWorkInput): a name or id it refuses
    // had every poll of this worker refused (BAD_USER_INPUT), for ever, serving nothing.
    const named = (what: string, value: unknown, most: number) => {
      if (typeof value !== 'string' || value.length === 0 || serviceLength(value) > most || !PRINTABLE_NAME.test(value)) {
        throw new TypeError(`${what} must be a string of 1 to ${most} characters without control characters or unpaired surrogates, not ${JSON.stringify(String(value).slice(0, 80))}`);
      }
    };
    named('workerId', this.workerId, 128);
    named('appId', options.appId, 128);
    named('environment', options.environment, 128);
    for (const name of this.workflows.keys()) named('a workflow name', name, MAX_NAME_LENGTH);
    for (const name of this.tasks.keys()) named('a task name', name, MAX_NAME_LENGTH);
    for (const [kind, count] of [['tasks', this.tasks.size], ['workflows', this.workflows.size]] as const) {
      if (count > 1000) throw new TypeError(`a worker serves at most 1000 ${kind} (what a poll may declare), not ${count}`);
    }
    // The service takes a task's timeout and retry delays as 32-bit integers of milliseconds: one
    // past that made every poll of this worker fail, for good, with nothing pointing at the task.
    for (const task of this.registration.tasks) {
      // At least 1 ms, as sent (rounded): a timeout of 0 is not "none" (leave it out for none).
      if (task.timeoutMs != null && task.timeoutMs < 1) throw new TypeError(`task ${task.name}: timeout must be at least 1 ms (leave it out for none), not ${String(task.timeoutMs)} ms as sent`);
      const values: Array<[string, number | null | undefined]> = [
        ['timeout', task.timeoutMs],
        ['retry.initialDelay', task.retry?.initialDelayMs],
        ['retry.maxDelay', task.retry?.maxDelayMs],
      ];
      for (const [option, ms] of values) {
        if (ms != null && ms > MAX_PROTOCOL_MS) throw new TypeError(`task ${task.name}: ${option} must be at most ${MAX_PROTOCOL_MS} ms (about 24.8 days), not ${ms} ms`);
      }
      // As the service checks them (RetryPolicyInput): `maxAttempts: Infinity` was sent as null.
      const attempts = task.retry?.maxAttempts;
      if (attempts != null && !(Number.isInteger(attempts) && attempts >= 1 && attempts <= 1000)) throw new TypeError(`task ${task.name}: retry.maxAttempts must be a whole number from 1 to 1000, not ${attempts}`);
      const factor = task.retry?.backoffFactor;
      if (factor != null && !(factor >= 1 && factor <= 100)) throw new TypeError(`task ${task.name}: retry.backoffFactor must be from 1 to 100, not ${factor}`);
    }
    this.logger = options.logger ?? console;
  }

  /** Polls and works until {@link shutdown}; resolves once the worker has stopped. */
  run(): Promise<void> {
    this.runPromise ??= this.loop();
    return this.runPromise;
  }

  /** Stops polling, lets running work finish (up to `shutdownGraceMs`), reports it, and resolves. */
  async shutdown(): Promise<void> {
    this.stopping.abort();
    await this.runPromise;
  }

  private async loop(): Promise<void> {
    const heartbeats = setInterval(() => void this.heartbeat(), this.options.heartbeatIntervalMs ?? 5000);
    try {
      // One long poll per kind of work, each for its own free slots (as Temporal's workflow and
      // activity pollers): a poll for decisions is never stuck behind full task slots.
      const pollers: Array<Promise<void>> = [];
      if (this.workflows.size > 0) pollers.push(this.pollLoop('DECISION'));
      if (this.tasks.size > 0) pollers.push(this.pollLoop('TASK'));
      await Promise.all(pollers.length > 0 ? pollers : [this.stopped]);
      // Tasks claimed but not started go back; waiting decisions run as slots free.
      for (const item of this.waiting.TASK.splice(0)) this.release(item);
      const grace = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), this.options.shutdownGraceMs ?? 30_000).unref());
      // A report answered after the stop may have started more (its claim was sent before): wait for that too.
      const settled = async () => {
        for (let work = this.allInFlight(); work.length > 0; work = this.allInFlight()) {
          await Promise.all(work);
          await this.flushing;
        }
        return true;
      };
      const finished = await Promise.race([settled(), grace]);
      if (!finished) {
        this.graceOver = true;
        for (const stop of this.graceWaiters) stop();
        for (const [ref, running] of this.running) {
          this.releasing.add(ref);
          running.abort.abort(new Error('the worker is shutting down'));
        }
        await Promise.race([Promise.all(this.allInFlight()), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
      }
      await this.flush();
    } finally {
      clearInterval(heartbeats);
      this.ended.abort();
    }
  }

  private allInFlight(): Array<Promise<void>> {
    return [...this.inFlight.DECISION, ...this.inFlight.TASK];
  }

  private free(kind: WorkKind): number {
    return this.limits[kind] - this.inFlight[kind].size - this.waiting[kind].length;
  }

  /** Polls for one kind of work whenever that kind has a free slot, until shutdown. */
  private async pollLoop(kind: WorkKind): Promise<void> {
    let backoff = 100;
    // A poll that failed may have claimed work (the connection cut, the client's own resend too,
    // its deadline, a proxy's error page): the next poll goes under its id, marked as sent again,
    // and is answered with those claims (DECISIONS.md "A repeated poll is answered with its claims").
    // One that claimed nothing costs the service one head read.
    let unanswered: string | undefined;
    while (!this.stopping.signal.aborted) {
      // Less the slots a report in flight asked to fill (this loop's own poll has ended): both
      // asking for one free slot, a poll and a report were each handed work for it, and the worker
      // held more than its concurrency (seen under load: 5 attempts held on 4 slots).
      const free = this.free(kind) - this.asked[kind];
      if (free <= 0) {
        await Promise.race([...this.inFlight[kind], this.fillEnded(kind), this.stopped]);
        continue;
      }
      let items: WorkItem[];
      const pollId = unanswered ?? randomUUID();
      try {
        items = await this.poll(kind, free, pollId, unanswered !== undefined);
        unanswered = undefined;
        backoff = 100;
        this.answered();
      } catch (error) {
        if (this.stopping.signal.aborted) break;
        unanswered = pollId;
        if (this.olderService(error) || this.olderPollService(error)) continue;
        // A 429 says when to come back (Retry-After): sooner is refused again.
        const wait = Math.max(backoff, error instanceof BatonRequestError ? (error.retryAfterMs ?? 0) : 0);
        this.failed(`poll failed (${(error as Error).message}); retrying in ${wait} ms`);
        // The timer is cleared when the worker stops first: a Retry-After of an hour kept the
        // process of a worker shut down alive for that hour.
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([new Promise((resolve) => (timer = setTimeout(resolve, wait))), this.stopped]);
        clearTimeout(timer);
        backoff = Math.min(backoff * 2, 5000);
        continue;
      }
      this.start(items);
      if (items.length > 0) await this.reportsFirst();
    }
  }

  /**
   * A request failed: the first failure of an outage is logged, then one line a minute while
   * requests go on failing (a line per failed poll and heartbeat was a dozen a minute for as long
   * as the service was away).
   */
  private failed(what: string): void {
    const now = Date.now();
    // A service failing every other request (flapping) starts and ends an outage per request:
    // warnings are once a minute across outages, and only an outage warned of says it ended.
    const due = now - this.outageWarnedAt >= 60_000;
    if (!this.outage) {
      this.outage = { since: now, failures: 1, announced: due };
      if (!due) return;
      this.outageWarnedAt = now;
      this.logger.warn(`[baton worker] ${what} (while requests keep failing, this is logged once a minute)`);
      return;
    }
    this.outage.failures++;
    if (!due) return;
    this.outageWarnedAt = now;
    this.outage.announced = true;
    this.logger.warn(`[baton worker] requests have been failing for ${Math.round((now - this.outage.since) / 1000)} s (${this.outage.failures} failed requests); the last: ${what}`);
  }

  /** A request was answered: an outage, if there was one, is over (said when it was warned of). */
  private answered(): void {
    if (!this.outage) return;
    const { since, failures, announced } = this.outage;
    this.outage = undefined;
    if (announced) this.logger.info(`[baton worker] the service answers again, after ${Math.round((Date.now() - since) / 1000)} s and ${failures} failed requests`);
  }

  /** Runs claimed items (from a poll, or from a report's answer). */
  private start(items: WorkItem[]): void {
    for (const item of items) {
      // The service hands an item again to a worker that resent a report whose answer was lost
      // (the answer had it); one this worker already holds, running or waiting, is not run twice.
      if (this.holds(item)) continue;
      this.checkLease(item);
      this.admit(item);
    }
  }

  private holds(item: WorkItem): boolean {
    const same = (w: WorkItem) => w.ref === item.ref && w.decisionId === item.decisionId && w.attemptId === item.attemptId;
    if (this.waiting[item.kind].some(same)) return true;
    return item.kind === 'DECISION' ? this.deciding.get(item.ref) === item.decisionId : this.running.get(item.ref)?.attemptId === item.attemptId;
  }

  /**
   * Warns, once, when heartbeats are too far apart for the leases the service grants (its
   * LEASE_MS): every task longer than the lease lapsed and ran again, and nothing said why.
   */
  private checkLease(item: WorkItem): void {
    if (this.leaseWarned) return;
    const leaseMs = Date.parse(item.leaseExpiresAt) - Date.now();
    const every = this.options.heartbeatIntervalMs ?? 5000;
    if (!(leaseMs > 0) || every * 2 <= leaseMs) return;
    this.leaseWarned = true;
    this.logger.warn(
      `[baton worker] heartbeatIntervalMs (${every} ms) is more than half the lease the service grants (about ${Math.round(leaseMs / 1000)} s, its LEASE_MS, ` +
        "or this machine's clock is ahead of the service's): work longer than the lease can lose it between two heartbeats and run again; set heartbeatIntervalMs well under it",
    );
  }

  /** Runs `item` in a free slot of its kind, or keeps it waiting for one; a task handed over after the stop goes back unrun. */
  private admit(item: WorkItem): void {
    if (item.kind === 'TASK' && this.stopping.signal.aborted) return this.release(item);
    const slots = this.inFlight[item.kind];
    if (slots.size >= this.limits[item.kind]) {
      this.waiting[item.kind].push(item);
      return;
    }
    const work = (item.kind === 'DECISION' ? this.decide(item) : this.execute(item)).finally(() => {
      slots.delete(work);
      // The slot goes to work already claimed before any poll asks for more.
      const next = this.waiting[item.kind];
      while (next.length > 0 && slots.size < this.limits[item.kind]) this.admit(next.shift()!);
    });
    slots.add(work);
  }

  /** Gives a claimed task attempt back unrun (shutting down): another worker gets it at once, and it does not count against its retries. */
  private release(item: WorkItem): void {
    this.taskReports.push({ ref: item.ref, attemptId: item.attemptId!, released: true });
    this.reportLeases.push(Date.parse(item.leaseExpiresAt));
    void this.scheduleFlush();
  }

  /**
   * Before the next poll, lets the report of work that finished at once (a decision that waits on
   * nothing but its history, a task that never awaits I/O) go out and come back. The service runs
   * requests on one thread, in the order they arrive: a poll sent first, or alongside, is served
   * ahead of the report, and the report's answer carries the claim of the task the decision just
   * scheduled (the next step of the workflow). At a low rate this took about 1.5 ms off dispatch →
   * first task (docs/BENCHMARKS.md); at full load most work comes with reports' answers, not
   * polls. A report settles within its leases (`flush`), which shutdown waits for anyway.
   */
  private async reportsFirst(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    await this.flushing?.catch(() => undefined);
  }

  /** Whether polls and eager claims may send `maxDecisions` / `maxTasks` now. */
  private get perKindCaps(): boolean {
    return Date.now() >= this.perKindCapsFrom;
  }

  /**
   * Whether `error` is a service older than this worker refusing `maxDecisions` / `maxTasks`
   * (`BAD_USER_INPUT`, a field not defined by the input type): from then on, for five minutes at a
   * time, polls and eager claims ask for `maxItems` alone. Such a service hands either kind of work
   * to any poll, as it did to workers of its own release; this worker still runs each kind within
   * its own slots, and what does not fit waits, heartbeated.
   */
  private olderService(error: unknown): boolean {
    return this.olderRefusing(
      error,
      /(^|\.)max(Decisions|Tasks)$/,
      /"max(Decisions|Tasks)" is not defined/,
      'perKindCapsFrom',
      '[baton worker] the service does not know maxDecisions/maxTasks (it is older than this worker): polls and claims ask for maxItems alone, as before; upgrade the service (docs/OPERATIONS.md, Upgrades)',
    );
  }

  /**
   * Whether `error` is a service older than this worker refusing `pollId`: polls leave it out for
   * five minutes at a time, and a poll whose answer is lost leaves its claims to lapse, as before.
   */
  private olderPollService(error: unknown): boolean {
    return this.olderRefusing(
      error,
      null,
      /"pollId" is not defined/,
      'pollIdsFrom',
      '[baton worker] the service does not know pollId (it is older than this worker): a poll whose answer is lost leaves what it claimed to lapse, as before; upgrade the service (docs/OPERATIONS.md, Upgrades)',
    );
  }

  /**
   * Whether `error` is a service older than this worker refusing a report claim's `pollId` (or its
   * `fillDecisions` / `fillTasks`): reports leave them out for five minutes at a time; their
   * answers then carry only the next steps of the outcomes they report, as before, and new work
   * comes with polls.
   */
  private olderClaimService(error: unknown): boolean {
    return this.olderRefusing(
      error,
      /(^|\.)claim\.(pollId|fillDecisions|fillTasks)$/,
      /"(pollId|fillDecisions|fillTasks)" is not defined by type "EagerClaimInput"/,
      'claimIdsFrom',
      "[baton worker] the service does not know a report claim's pollId (it is older than this worker): reports claim only what their outcomes make claimable, as before; upgrade the service (docs/OPERATIONS.md, Upgrades)",
    );
  }

  /**
   * Whether `error` is an older service's refusal of fields this worker sends (`BAD_USER_INPUT`
   * naming one in `field`, or saying it is not defined): the requests leave them out until `off`
   * (five minutes from now, again at each refusal after that), warning once. A request sent with
   * the fields before another's refusal switched them off is sent again too (true).
   */
  private olderRefusing(error: unknown, field: RegExp | null, message: RegExp, off: 'perKindCapsFrom' | 'pollIdsFrom' | 'claimIdsFrom', warning: string): boolean {
    if (!(error instanceof BatonRequestError) || error.code !== 'BAD_USER_INPUT') return false;
    if (!(field?.test(String(error.extensions.field ?? '')) ?? false) && !message.test(error.message)) return false;
    if (Date.now() >= this[off]) {
      if (this[off] === 0) this.logger.warn(warning);
      this[off] = Date.now() + 5 * 60_000;
    }
    return true;
  }

  /** What this worker serves, as polls and eager claims declare it. */
  private get registration() {
    return (this.registered ??= {
      workflows: [...this.workflows.keys()],
      tasks: [...this.tasks.values()].map((t) => ({
        name: t.name,
        retry: t.options.retry ? resolveRetryPolicy(t.options.retry) : null,
        timeoutMs: t.options.timeout !== undefined ? Math.round(toMs(t.options.timeout)) : null,
      })),
    });
  }

  private async poll(kind: WorkKind, free: number, pollId: string, resent: boolean): Promise<WorkItem[]> {
    const maxItems = Math.min(free, 100);
    const waitMs = this.options.pollWaitMs ?? 20_000;
    this.asked[kind] += maxItems;
    try {
      return await this.pollOnce(kind, maxItems, waitMs, pollId, resent);
    } finally {
      this.asked[kind] -= maxItems;
    }
  }

  private async pollOnce(kind: WorkKind, maxItems: number, waitMs: number, pollId: string, resent: boolean): Promise<WorkItem[]> {
    const data = await this.client.request<{ pollWork: WorkItem[] }>(
      POLL_WORK,
      {
        input: {
          appId: this.options.appId,
          environment: this.options.environment,
          workerId: this.workerId,
          ...this.registration,
          maxItems,
          ...(this.perKindCaps ? { maxDecisions: kind === 'DECISION' ? maxItems : 0, maxTasks: kind === 'TASK' ? maxItems : 0 } : {}),
          waitMs,
          // The same on the client's resend: a poll that comes again is answered with what it claimed.
          ...(Date.now() >= this.pollIdsFrom ? { pollId } : {}),
        },
      },
      // Sent again (a reset kept-alive connection), the poll is answered with the claims its first
      // send made (the service finds them by its pollId), and claims nothing more.
      { signal: this.stopping.signal, extraTimeoutMs: waitMs, resendable: true, resent },
    );
    return data.pollWork;
  }

  private async decide(item: WorkItem): Promise<void> {
    const definition = this.workflows.get(item.version ?? item.name);
    const report: DecisionReport = { ref: item.ref, decisionId: item.decisionId! };
    const workflowId = item.workflowId!;
    try {
      if (!definition) throw new Error(`this worker has no workflow ${item.version ?? item.name}`);
      let history = JSON.parse(item.history ?? '[]') as HistoryEvent[];
      const runFrom = item.runFrom ?? 0;
      let run = this.runs.get(workflowId);
      this.runs.delete(workflowId);
      // A decision of the held run that the service discarded (the workflow was paused while it
      // ran) is made again: the held run handed its steps' outcomes back at that decision's clock,
      // where a replay of the history hands them back at the next one, so replay from the history.
      const discarded = run !== undefined && history.some((e) => e.type === 'DecisionDiscarded' && e.revision >= run!.replay.nextRevision);
      const holds = !discarded && run !== undefined && run.runFrom === runFrom && !run.replay.isFinished && heldRunContinues(run, history, item.historyFrom ?? 0);
      if (!holds) {
        if ((item.historyFrom ?? 0) !== runFrom) history = await this.wholeRun(item);
        const failedSteps = this.refusedSteps.get(workflowId);
        run = { replay: new WorkflowReplay(definition, workflowId, JSON.parse(item.input), [], failedSteps ? { failedSteps } : {}), runFrom, decisionId: item.decisionId!, version: definition.name };
      }
      run!.decisionId = item.decisionId!;
      this.deciding.set(item.ref, item.decisionId!);
      const commands = await run!.replay.feed(history).finally(() => this.deciding.delete(item.ref));
      report.commands = JSON.stringify(commands);
      const queries = run!.replay.answerQueries();
      if (queries !== null) report.queries = queries;
      if (!run!.replay.isFinished) this.hold(workflowId, run!);
    } catch (error) {
      const e = error as Error;
      report.failureCode = error instanceof NonDeterminismError || error instanceof WorkflowBlockedError ? error.code : 'WORKER_ERROR';
      report.failureMessage = cutText(String(e.message), MAX_ERROR_MESSAGE_LENGTH);
      report.historyPosition = error instanceof NonDeterminismError ? error.historyPosition : null;
      this.logger.error(`[baton worker] decision for ${workflowId} failed: ${e.message}`);
    }
    this.decisionReports.push(report);
    this.reportLeases.push(Date.parse(item.leaseExpiresAt));
    await this.scheduleFlush();
  }

  /**
   * The whole current run of a claimed decision, for a run this worker does not hold (or whose
   * claim left its history out as too large): page by page, each as large as the service's
   * answers allow, up to the decision's own DecisionStarted; then without what retries rewound.
   */
  private async wholeRun(item: WorkItem): Promise<HistoryEvent[]> {
    const events: HistoryEvent[] = [];
    for (let from = item.runFrom ?? 0; ; ) {
      const { decisionHistory } = await this.client.request<{ decisionHistory: string }>(DECISION_HISTORY, {
        input: { appId: this.options.appId, environment: this.options.environment, workerId: this.workerId, ref: item.ref, decisionId: item.decisionId, fromRevision: from },
      });
      const page = JSON.parse(decisionHistory) as HistoryEvent[];
      for (const event of page) events.push(event);
      const last = page[page.length - 1];
      if (!last || last.revision < from || (last.type === 'DecisionStarted' && (last.data as { decisionId?: string } | null)?.decisionId === item.decisionId)) break;
      from = last.revision + 1;
    }
    return replayableHistory(events);
  }

  private hold(workflowId: string, run: HeldRun): void {
    this.runs.set(workflowId, run);
    const max = this.options.maxCachedWorkflows ?? 1000;
    for (const key of this.runs.keys()) {
      if (this.runs.size <= max) break;
      this.runs.delete(key);
    }
  }

  private async execute(item: WorkItem): Promise<void> {
    const definition = this.tasks.get(item.name);
    const abort = new AbortController();
    const report: TaskReport = { ref: item.ref, attemptId: item.attemptId! };
    this.running.set(item.ref, { attemptId: item.attemptId!, abort });
    const timeoutMs = definition?.options.timeout !== undefined ? toMs(definition.options.timeout) : undefined;
    const cancelTimeout = timeoutMs !== undefined ? after(timeoutMs, () => abort.abort(new Error(`task ${item.name} timed out after ${timeoutMs} ms`))) : undefined;
    try {
      if (!definition) throw new NonRetryableError(`this worker has no task ${item.name}`);
      const aborted = new Promise<never>((_, reject) => {
        abort.signal.addEventListener('abort', () => reject(abort.signal.reason ?? new Error('aborted')), { once: true });
      });
      const result = await Promise.race([
        Promise.resolve().then(() =>
          definition.handler(
            {
              taskId: item.taskId ?? undefined,
              workflowId: item.workflowId ?? undefined,
              attempt: item.attempt ?? 1,
              signal: abort.signal,
              heartbeat: () => this.taskHeartbeat(abort.signal),
            },
            ...(JSON.parse(item.input) as unknown[]),
          ),
        ),
        aborted,
      ]);
      // What JSON writes as nothing (a function, a symbol) is null, as `undefined` is: a report with no
      // outcome was refused, and the attempt ran again at each lapse of its lease.
      report.result = JSON.stringify(result === undefined ? null : result) ?? 'null';
    } catch (error) {
      const e = toError(error);
      if (this.releasing.has(item.ref) || this.stoppedForFailedWorkflow.has(item.ref)) report.released = true;
      else report.error = {
        ...errorText(e),
        ...(e instanceof NonRetryableError ? { nonRetryable: true } : {}),
        // Within what the service takes (0 to about 24.8 days, a GraphQL Int): a delay computed as `resetAt - Date.now()`
        // came out negative, and the service refused the whole report for it.
        ...(e instanceof RetryableError && e.retryAfterMs !== undefined && !Number.isNaN(e.retryAfterMs) ? { retryAfterMs: Math.min(Math.max(0, Math.round(e.retryAfterMs)), MAX_RETRY_AFTER_MS) } : {}),
      };
    } finally {
      cancelTimeout?.();
    }
    // The attempt stays in `running` (heartbeated) while the decision after it is made; once
    // shutdown's grace is over, the result goes without it (that decision may be running a long
    // step): a result held back past the shutdown was lost, and the task ran again.
    if (report.result !== undefined) {
      const deciding = this.decideAfter(item, report).catch((error: Error) => this.logger.warn(`[baton worker] next decision for ${item.workflowId} not made: ${error.message}`));
      let stop: () => void = () => undefined;
      const graceOver = new Promise<void>((resolve) => (stop = resolve));
      this.graceWaiters.add(stop);
      try {
        await Promise.race([deciding, graceOver]);
      } finally {
        this.graceWaiters.delete(stop);
      }
    }
    this.running.delete(item.ref);
    this.stoppedForFailedWorkflow.delete(item.ref);
    this.taskReports.push(report);
    this.reportLeases.push(Date.parse(item.leaseExpiresAt));
    await this.scheduleFlush();
  }

  /**
   * After a task of a held run succeeded: when the run waits on that task alone, make the decision
   * that follows and put it in the task's report (`next`). The run leaves the cache until the
   * answer says whether the service recorded that decision (see `settleDecided`).
   */
  private async decideAfter(item: WorkItem, report: TaskReport): Promise<void> {
    if (this.options.eagerDispatch === false || this.options.decideAfterTasks === false || this.stopping.signal.aborted || Date.now() < this.decideAfterTasksFrom) return;
    const ref = parseRef(item.ref);
    if (ref?.kind !== 'workflowTask') return;
    const run = this.runs.get(ref.workflowId);
    if (!run || !run.replay.waitsOnlyOnTask(ref.seq)) return;
    this.runs.delete(ref.workflowId);
    // The decision's clock: this machine's, never before the last decision's (the service refuses that).
    const startedAt = Math.max(Date.now(), run.replay.decisionClock);
    const commands = await run.replay.decideAfterTask(ref.seq, JSON.parse(report.result!) as Json, startedAt);
    // Too late: the result was reported without it (shutdown's grace ran out); the run is left to a replay.
    if (this.graceOver) return;
    const next: WireNextDecision = { basisDecisionId: run.decisionId, version: run.version, startedAt: new Date(startedAt).toISOString(), commands: JSON.stringify(commands) };
    const queries = run.replay.answerQueries();
    if (queries !== null) next.queries = queries;
    report.next = next;
    this.sentDecisions.set(item.ref, { workflowId: ref.workflowId, run });
  }

  /** What became of the next decisions sent with task results: a recorded one's run is held again, from after it. */
  private settleDecided(tasks: TaskReport[], decided: WireDecided[] | null | undefined): void {
    const recorded = new Map((decided ?? []).map((d) => [d.ref, d]));
    for (const task of tasks) {
      const sent = task.next && this.sentDecisions.get(task.ref);
      if (!sent) continue;
      this.sentDecisions.delete(task.ref);
      const d = recorded.get(task.ref);
      if (!d) {
        // Something else happened to the workflow meanwhile: the decision is made as usual, from its history.
        if (++this.refusedInARow >= 8) {
          this.refusedInARow = 0;
          this.decideAfterTasksFrom = Date.now() + 30_000;
        }
        continue;
      }
      this.refusedInARow = 0;
      sent.run.decisionId = d.decisionId;
      sent.run.replay.resumeAt(d.revision + 1);
      // A run decided elsewhere meanwhile (its answer came first) is newer than this one: keep that.
      if (!sent.run.replay.isFinished && !this.runs.has(sent.workflowId)) this.hold(sent.workflowId, sent.run);
    }
  }

  /** Outcomes that finish in the same tick go to the server in one request. */
  private scheduleFlush(): Promise<void> {
    this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      this.flushing = undefined;
      return this.flush();
    });
    return this.flushing;
  }

  private async flush(): Promise<void> {
    if (this.decisionReports.length === 0 && this.taskReports.length === 0) return;
    // Worth retrying for as long as the longest lease holds: after that the server has moved on.
    const until = Math.max(...this.reportLeases.filter((t) => !Number.isNaN(t)), Date.now() + 5000);
    this.reportLeases = [];
    const { decisions, tasks } = this.nextReport();
    // What did not fit goes in the next report, sent alongside this one.
    if (this.decisionReports.length + this.taskReports.length > 0) {
      this.reportLeases.push(until);
      void this.scheduleFlush();
    }
    await this.send(decisions, tasks, until);
  }

  /** Takes the queued outcomes that fit in one request of `maxReportBytes` (at least one). */
  private nextReport(): { decisions: DecisionReport[]; tasks: TaskReport[] } {
    const budget = this.options.maxReportBytes ?? 768 * 1024;
    let bytes = 0;
    const fits = (size: number, taken: number) => {
      if (taken > 0 && bytes + size > budget) return false;
      bytes += size;
      return true;
    };
    const most = this.itemsPerRequest;
    let d = 0;
    while (d < this.decisionReports.length && d < most && fits(reportBytes(this.decisionReports[d]), d)) d++;
    let t = 0;
    while (t < this.taskReports.length && d + t < most && fits(reportBytes(this.taskReports[t]), d + t)) t++;
    return { decisions: this.decisionReports.splice(0, d), tasks: this.taskReports.splice(0, t) };
  }

  private async send(decisions: DecisionReport[], tasks: TaskReport[], until: number): Promise<void> {
    if (decisions.length + tasks.length === 0) return;
    // The reported items leave their slots as this report ends: those slots may take eager work.
    const maxDecisions = Math.min(100, Math.max(0, this.free('DECISION') + decisions.length));
    const maxTasks = Math.min(100, Math.max(0, this.free('TASK') + tasks.length));
    const maxItems = Math.min(100, maxDecisions + maxTasks);
    const eager = this.options.eagerDispatch !== false && !this.stopping.signal.aborted && maxItems > 0;
    // The claim's id: with it the service also fills free slots with waiting work (those no poll in
    // flight asks for, and those this report frees), and hands a report sent again (its answer
    // lost) what its first send claimed. The same for every attempt.
    const pollId = randomUUID();
    const fill = eager ? { DECISION: Math.max(0, this.free('DECISION') - this.asked.DECISION), TASK: Math.max(0, this.free('TASK') - this.asked.TASK) } : { DECISION: 0, TASK: 0 };
    this.asked.DECISION += fill.DECISION;
    this.asked.TASK += fill.TASK;
    try {
      await this.sendReport(decisions, tasks, until, { eager, maxItems, maxDecisions, maxTasks, pollId, fillDecisions: Math.min(100, fill.DECISION + decisions.length), fillTasks: Math.min(100, fill.TASK + tasks.length) });
    } finally {
      this.asked.DECISION -= fill.DECISION;
      this.asked.TASK -= fill.TASK;
      for (const kind of ['DECISION', 'TASK'] as const) if (fill[kind] > 0) for (const wake of this.fillWaiters[kind].splice(0)) wake();
    }
  }

  /** Resolves when a report's claim that asked to fill free slots of `kind` has ended. */
  private fillEnded(kind: WorkKind): Promise<void> {
    return new Promise((resolve) => this.fillWaiters[kind].push(resolve));
  }

  private async sendReport(
    decisions: DecisionReport[],
    tasks: TaskReport[],
    until: number,
    c: { eager: boolean; maxItems: number; maxDecisions: number; maxTasks: number; pollId: string; fillDecisions: number; fillTasks: number },
  ): Promise<void> {
    const { eager, maxItems, maxDecisions, maxTasks, pollId } = c;
    for (let attempt = 0; ; attempt++) {
      const caps = this.perKindCaps ? { maxItems, maxDecisions, maxTasks } : { maxItems };
      const fill = Date.now() >= this.claimIdsFrom ? { pollId, fillDecisions: c.fillDecisions, fillTasks: c.fillTasks } : {};
      const claim = !eager ? null : { ...this.registration, ...caps, ...fill };
      try {
        const { reportWork } = await this.client.request<{ reportWork: { rejected: Array<{ ref: string; code: string; message: string }>; items: WorkItem[]; decided?: WireDecided[] } }>(REPORT_WORK, {
          input: { appId: this.options.appId, environment: this.options.environment, workerId: this.workerId, decisions, tasks, claim },
        }, { resendable: true, resent: attempt > 0 }); // a repeated report is acknowledged, its claims handed again
        this.answered();
        this.settleDecided(tasks, reportWork.decided);
        // A decision recorded holds the outcome of the steps it failed: replays take it from the history.
        for (const d of decisions) if (d.commands !== undefined && !reportWork.rejected.some((r) => r.ref === d.ref)) this.refusedSteps.delete(d.ref.slice(3));
        for (const r of reportWork.rejected) {
          this.logger.warn(`[baton worker] report for ${r.ref} not applied: ${r.code} ${r.message}`);
          // A run held past a decision the server did not record (its steps ran, their outcomes
          // were not kept) no longer matches the history: the next decision replays it afresh.
          if (decisions.some((d) => d.ref === r.ref)) this.runs.delete(r.ref.slice(3));
          // Commands the server refuses (over a limit): record the decision as failed, with the reason,
          // rather than let its lease lapse again and again (the run was dropped just above).
          const decision = decisions.find((d) => d.ref === r.ref && d.commands !== undefined);
          // An inline step whose result the service cannot record (over a JSON limit): the
          // decision is made again with that step failed, rather than run it again and again.
          const step = decision && r.code === 'BAD_USER_INPUT' ? /\(RecordStep\): the result of step #(\d+) /.exec(r.message) : null;
          if (step) {
            const workflowId = r.ref.slice(3);
            const failed = this.refusedSteps.get(workflowId) ?? new Map<number, TaskErrorShape>();
            failed.set(Number(step[1]), { message: `the step's result could not be recorded: ${r.message}`.slice(0, 1000), name: 'ResultRejectedError' });
            this.refusedSteps.delete(workflowId);
            this.refusedSteps.set(workflowId, failed);
            for (const key of this.refusedSteps.keys()) {
              if (this.refusedSteps.size <= 1000) break;
              this.refusedSteps.delete(key);
            }
          }
          if (decision && r.code === 'BAD_USER_INPUT') {
            this.decisionReports.push({ ref: r.ref, decisionId: decision.decisionId, failureCode: 'DECISION_REJECTED', failureMessage: r.message.slice(0, 1000) });
            void this.scheduleFlush();
          }
          // A task result the service cannot record (over MAX_PAYLOAD_BYTES or another JSON limit):
          // the attempt fails now, with the service's reason, rather than lapsing with its lease and
          // running the task again for the same refusal. Not retried: the same call would return the
          // same result.
          const task = tasks.find((t) => t.ref === r.ref && t.result !== undefined);
          if (task && r.code === 'BAD_USER_INPUT' && r.message.startsWith('tasks.result')) {
            this.taskReports.push({
              ref: r.ref,
              attemptId: task.attemptId,
              error: { message: `the task's result could not be recorded: ${r.message}`.slice(0, 1000), name: 'ResultRejectedError', nonRetryable: true },
            });
            this.reportLeases.push(until);
            void this.scheduleFlush();
          }
        }
        this.start(reportWork.items ?? []);
        return;
      } catch (error) {
        if (error instanceof BatonRequestError && error.status === 413) return this.tooLarge(decisions, tasks, until);
        // More items than the service takes in one report: refused as a whole, and sent again it
        // would be refused again until the leases ended and every outcome was dropped.
        const limit = this.itemLimit(error);
        if (limit !== undefined && decisions.length + tasks.length > limit) {
          this.itemsPerRequest = Math.min(this.itemsPerRequest, limit);
          const sends: Array<Promise<void>> = [];
          for (let d = 0, t = 0; d < decisions.length || t < tasks.length; ) {
            const dn = Math.min(limit, decisions.length - d);
            const tn = Math.min(limit - dn, tasks.length - t);
            sends.push(this.send(decisions.slice(d, d + dn), tasks.slice(t, t + tn), until));
            d += dn;
            t += tn;
          }
          await Promise.all(sends);
          return;
        }
        // Refused as a whole, so nothing of it was applied: sent again at once without those fields.
        if (this.olderService(error) || this.olderClaimService(error)) continue;
        const delay = Math.max(Math.min(100 * 2 ** attempt, 2000), error instanceof BatonRequestError ? (error.retryAfterMs ?? 0) : 0);
        this.failed(`report failed (${(error as Error).message}); retrying in ${delay} ms`);
        // A service that cannot be reached at all (restarting, down) has not moved on without this
        // worker: once back it leaves leases that lapsed meanwhile to their workers for a lease
        // (engine-ticker.ts), so the outcomes wait for it instead of being dropped, and the work
        // run again (found in review). A service that answers, or a worker that is stopping,
        // ends the wait at the leases as before.
        const unreachable = isTransient(error) && !(error instanceof BatonRequestError && error.status === 429) && !this.stopping.signal.aborted;
        if (Date.now() + delay > until && !unreachable) {
          this.logger.error(`[baton worker] could not report ${decisions.length + tasks.length} outcomes before their leases ended: ${(error as Error).message}`);
          for (const d of decisions) this.runs.delete(d.ref.slice(3));
          this.settleDecided(tasks, []);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  /** The service's MAX_REPORT_ITEMS, as its refusal of a report or heartbeat holding more states it; undefined for any other error. */
  private itemLimit(error: unknown): number | undefined {
    if (!(error instanceof BatonRequestError) || error.code !== 'BAD_USER_INPUT') return undefined;
    const stated = /at most (\d+) \w+ \(MAX_REPORT_ITEMS\)/.exec(error.message);
    return stated ? Math.max(1, Number(stated[1])) : undefined;
  }

  /**
   * The service refused a report for its size (over `BODY_LIMIT_BYTES`): sent again, it would be
   * refused again. Several outcomes are split in two and sent apart; a decision alone is recorded
   * as failed (`DECISION_REJECTED`, where an operator sees it) instead of lapsing and coming back
   * for ever; a task result alone is dropped with an error logged (its attempt lapses and is retried).
   */
  private async tooLarge(decisions: DecisionReport[], tasks: TaskReport[], until: number): Promise<void> {
    const items = decisions.length + tasks.length;
    if (items > 1) {
      const halfD = Math.ceil(decisions.length / 2);
      const halfT = Math.floor(tasks.length / 2);
      await Promise.all([this.send(decisions.slice(0, halfD), tasks.slice(0, halfT), until), this.send(decisions.slice(halfD), tasks.slice(halfT), until)]);
      return;
    }
    const decision = decisions[0];
    if (decision) {
      this.runs.delete(decision.ref.slice(3));
      if (decision.commands === undefined) {
        this.logger.error(`[baton worker] the failure report of decision ${decision.ref} is over the service's body limit; dropped`);
        return;
      }
      const message = `the decision's report (${reportBytes(decision)} bytes) is over the service's body limit (BODY_LIMIT_BYTES)`;
      this.logger.error(`[baton worker] ${decision.ref}: ${message}`);
      this.decisionReports.push({ ref: decision.ref, decisionId: decision.decisionId, failureCode: 'DECISION_REJECTED', failureMessage: message });
      this.reportLeases.push(until);
      void this.scheduleFlush();
      return;
    }
    this.logger.error(`[baton worker] the result of ${tasks[0].ref} (${reportBytes(tasks[0])} bytes) is over the service's body limit (BODY_LIMIT_BYTES); not reported`);
    this.settleDecided(tasks, []);
  }

  /**
   * Heartbeats every attempt and decision this worker holds, one request at a time: a tick or a
   * task's call that comes while one is in flight shares it (a service slow to answer no longer
   * gathers a request per tick).
   */
  private heartbeat(): Promise<void> {
    // A request in flight for a whole interval is not shared: one the network lost (sent, never
    // answered) held every heartbeat back for the request timeout (30 s), past the service's
    // lease, and every running task lost its lease and ran again.
    const every = this.options.heartbeatIntervalMs ?? 5000;
    if (this.heartbeating !== undefined && Date.now() - this.heartbeatSentAt < every) return this.heartbeating;
    this.heartbeatSentAt = Date.now();
    const sending: Promise<void> = this.sendHeartbeats().finally(() => {
      if (this.heartbeating === sending) this.heartbeating = undefined;
    });
    this.heartbeating = sending;
    return sending;
  }

  /**
   * A task's `ctx.heartbeat()`. Each call used to be a request naming every attempt: a task that
   * heartbeats per row it processes spent the token's rate limit in seconds, and the worker's
   * polls and reports were refused with it. A call shares the request in flight, sends one only
   * when none went out for `min(heartbeatIntervalMs, 1000)` ms, and else answers at once (after
   * letting the event loop turn, as a request did) from what the last one said.
   */
  private taskHeartbeat(signal: AbortSignal): Promise<boolean> {
    const every = Math.min(this.options.heartbeatIntervalMs ?? 5000, 1000);
    if (this.heartbeating === undefined && Date.now() - this.lastHeartbeatAt < every) {
      return new Promise((resolve) => setImmediate(() => resolve(signal.aborted)));
    }
    return this.heartbeat().then(() => signal.aborted);
  }

  private async sendHeartbeats(): Promise<void> {
    const waiting = [...this.waiting.TASK, ...this.waiting.DECISION];
    if (this.running.size === 0 && this.deciding.size === 0 && waiting.length === 0) return;
    // Decisions in progress too (inline steps can take a while): their id stands for the attempt.
    // Work waiting for a slot too, so that its lease holds until it runs.
    const attempts = [
      ...[...this.running].map(([ref, r]) => ({ ref, attemptId: r.attemptId })),
      ...[...this.deciding].map(([ref, decisionId]) => ({ ref, attemptId: decisionId })),
      ...waiting.map((item) => ({ ref: item.ref, attemptId: (item.kind === 'TASK' ? item.attemptId : item.decisionId)! })),
    ];
    this.lastHeartbeatAt = Date.now();
    // At most itemsPerRequest a request: the service takes MAX_REPORT_ITEMS (1,000 by default) in one.
    for (let from = 0, size = this.itemsPerRequest; from < attempts.length; from += size) {
      try {
        const { heartbeat } = await this.client.request<{ heartbeat: Array<{ ref: string; cancel: boolean; reason: string | null }> }>(HEARTBEAT, {
          input: { appId: this.options.appId, environment: this.options.environment, workerId: this.workerId, attempts: attempts.slice(from, from + size) },
        }, { signal: this.ended.signal, resendable: true });
        this.answered();
        for (const h of heartbeat) {
          if (!h.cancel) continue;
          // A decision the server gave up on is left to finish: its report will be refused.
          if (h.reason === 'workflow failed' && this.running.has(h.ref)) this.stoppedForFailedWorkflow.add(h.ref);
          this.running.get(h.ref)?.abort.abort(new Error(`cancelled by the server: ${h.reason ?? 'no reason given'}`));
          // Waiting work the server gave up on is not run. A task stopped because its workflow
          // failed is given back (as a running one is), not left to lapse: a lapse counts against
          // its retries, and with its last attempt fails it for good, which retryWorkflows does not reset.
          for (const queue of [this.waiting.TASK, this.waiting.DECISION]) {
            const at = queue.findIndex((item) => item.ref === h.ref);
            if (at < 0) continue;
            const [item] = queue.splice(at, 1);
            if (item.kind === 'TASK' && h.reason === 'workflow failed' && item.attemptId) {
              this.taskReports.push({ ref: item.ref, attemptId: item.attemptId, released: true });
              this.reportLeases.push(Date.parse(item.leaseExpiresAt));
              void this.scheduleFlush();
            }
          }
        }
      } catch (error) {
        if (this.ended.signal.aborted) return;
        const limit = this.itemLimit(error);
        if (limit !== undefined && limit < size) {
          // Sent again at once, in requests the service takes.
          this.itemsPerRequest = Math.min(this.itemsPerRequest, limit);
          size = limit;
          from -= size; // the loop's step brings it back to the same attempt
          continue;
        }
        this.failed(`heartbeat failed: ${(error as Error).message}`);
      }
    }
  }
}

