import { List as IList, Map as IMap, OrderedSet as IOrderedSet, Set as ISet } from 'immutable';
import { Json } from '../../event-store/event-store.port.js';
import { BadUserInputError, BatonError, ConflictError, NotFoundError, TooManyQueuedEventsError } from '../../shared/errors.js';
import { Decider } from '../../shared/decider.js';
import {
  AttemptEvent,
  AttemptEventData,
  AttemptState,
  RetryPolicy,
  TaskError,
  attemptDueAt,
  decideComplete,
  decideExpiry,
  decideFail,
  decideRelease,
  decideHeartbeat,
  decideStart,
  evolveAttempt,
  initialAttemptState,
  retriedAttemptState,
  iso,
  leaseWorthExtending,
} from '../../tasks/domain/task-attempts.js';
import { DecisionCommand, Selector } from './workflow-commands.js';

type WithSeq<T> = { [K in keyof T]: T[K] & { seq: number } };

export interface WorkflowEventData extends WithSeq<AttemptEventData> {
  WorkflowDispatched: {
    workflowId: string;
    appId: string;
    environment: string;
    name: string;
    tag: string | null;
    input: Json[];
    parent: { workflowId: string; seq: number } | null;
    scheduleId: string | null;
    dispatchedAt: string;
  };
  /** `pollId`: the poll that claimed it, when the worker named its poll (a poll sent again is answered with this claim). */
  DecisionStarted: { decisionId: string; workerId: string; version: string; startedAt: string; leaseExpiresAt: string; pollId?: string };
  /** Ends this run and starts the next under the same id, with `input` and an empty history. */
  WorkflowContinuedAsNew: WorkflowEventData['WorkflowDispatched'] & {
    run: number;
    seqBase: number;
    version: string | null;
    /** The children the ended run awaited (`ctx.workflow`) that still ran: ended with that run. Absent from events recorded before it existed. */
    awaitedChildren?: string[];
    /**
     * The first call (`seq`) of the runs whose continue-as-new listed and ended their awaited
     * children: 0, unless an earlier continue-as-new was recorded before `awaitedChildren` existed
     * (that version left the children of the runs it ended running). Absent from events recorded
     * before it existed.
     */
    childrenEndedFrom?: number;
    /**
     * The workflow was retried (`WorkflowRetried`) in an earlier run: the new run keeps the mark,
     * as its state starts here. Absent otherwise, and from events recorded before it existed.
     */
    retried?: true;
    /**
     * The causes (\`causeId\`) of the last events the ended runs took from other workflows'
     * sends, at most \`CARRIED_CAUSES\`, oldest first: a send carried out again after this
     * continue-as-new (its \`ControlApplied\` not recorded yet) is still recognised. Absent when
     * none, and from events recorded before the field existed.
     */
    causes?: string[];
    /**
     * The events the ended runs kept back (`WorkflowEventQueued`) and did not release: their
     * revisions in this stream (`at`, oldest first) and the size of their data (`bytes`), so the
     * new run releases them from where they were recorded. Absent when none.
     */
    queued?: { at: number[]; bytes: number[] };
    /**
     * The decision whose commands ended the old run: a repeat of its report (a worker that lost
     * the answer) is acknowledged in the new run too. Absent from events recorded before it existed.
     */
    decisionId?: string;
    /**
     * The new run's `ctx.uuid()` and `ctx.random()` draw their own sequence (seeded with the
     * workflow id and `seqBase`), not the first run's again. Absent from events recorded before it
     * existed: a replay of such a run draws what it drew then (the first run's sequence).
     */
    ownDraws?: true;
  };
  DecisionCompleted: { decisionId: string; commands: DecisionCommand[]; queries?: Record<string, Json> };
  DecisionFailed: { decisionId: string; code: string; message: string; historyPosition: number | null; retryAt: string };
  DecisionTimedOut: { decisionId: string };
  /**
   * The workflow was paused while the decision ran: its report is not applied (nothing it asked
   * for starts while paused) and the decision is made again once the workflow is resumed.
   */
  DecisionDiscarded: { decisionId: string; reason: string };
  /** The worker running the decision (its inline steps take a while) keeps its lease. */
  DecisionLeaseExtended: { decisionId: string; leaseExpiresAt: string };
  TaskScheduled: { seq: number; name: string; args: Json[] };
  TimerStarted: { seq: number; fireAt: string };
  TimerFired: { seq: number };
  TimerCanceled: { seq: number };
  ChildWorkflowStarted: { seq: number; childId: string; name: string; args: Json[]; tag: string | null; wait: boolean };
  ChildWorkflowCompleted: { seq: number; childId: string; result: Json };
  ChildWorkflowFailed: { seq: number; childId: string; error: TaskError };
  TaskDispatchRequested: { seq: number; taskId: string; name: string; args: Json[] };
  /** A step the worker ran inline during the decision before (`ctx.step`) returned `result`. */
  StepCompleted: { seq: number; name: string; result: Json };
  /** A step the worker ran inline during the decision before threw. */
  StepFailed: { seq: number; name: string; error: TaskError };
  ControlRequested: { seq: number; selector: Selector; action: string; event: { name: string; data: Json[] } | null };
  /** The workflow asked for a cron schedule (`ctx.schedule`); the effects reactor creates it under `scheduleId`. */
  ScheduleRequested: { seq: number; scheduleId: string; kind: 'workflow' | 'task'; name: string; args: Json[]; cron: string; timezone: string | null; tag: string | null };
  ControlApplied: { seq: number; matched: number; changed: number };
  /**
   * An event sent (`name`, `data`); `causeId`: the effect that delivered it (a workflow's
   * `select().send`), so a repeat is recognised. Or a release (`queuedAt`): the event recorded at
   * that revision of this stream as `WorkflowEventQueued` reaches the code here, in order; its name
   * and data stay there (the histories handed to workers put them in, see released-events.ts).
   */
  WorkflowEventReceived: ReceivedEventData | ReleasedEventData;
  /**
   * An event sent while the run already had `EVENTS_PER_DECISION` events its code had not seen (or
   * while earlier ones were queued): kept back, out of the histories workers get, and released in
   * order as `WorkflowEventReceived { queuedAt }` when a decision completes, at most
   * `EVENTS_PER_DECISION` new events a decision.
   */
  WorkflowEventQueued: { name: string; data: Json[]; causeId?: string };
  /** `causeId`: the effect that paused it (a workflow's `select().pause()`), so a repeat is recognised. */
  WorkflowPaused: { causeId?: string };
  WorkflowResumed: { causeId?: string };
  WorkflowTerminated: { reason: string | null; causeId?: string };
  WorkflowCompleted: { result: Json };
  WorkflowFailed: { error: TaskError };
  /** A failed workflow is running again; the listed tasks (whose failure failed it) run again. */
  WorkflowRetried: { resetTasks: number[]; retriedAt: string };
}

export type WorkflowEventType = keyof WorkflowEventData;
export type WorkflowEvent = { [K in WorkflowEventType]: { type: K; data: WorkflowEventData[K]; revision?: bigint } }[WorkflowEventType];

export const WORKFLOW_EVENT_TYPES = [
  'WorkflowDispatched',
  'DecisionStarted',
  'DecisionCompleted',
  'DecisionFailed',
  'DecisionTimedOut',
  'DecisionDiscarded',
  'DecisionLeaseExtended',
  'TaskScheduled',
  'TaskStarted',
  'TaskLeaseExtended',
  'TaskCompleted',
  'TaskAttemptFailed',
  'TaskFailed',
  'TaskResultIgnored',
  'TimerStarted',
  'TimerFired',
  'TimerCanceled',
  'ChildWorkflowStarted',
  'ChildWorkflowCompleted',
  'ChildWorkflowFailed',
  'TaskDispatchRequested',
  'StepCompleted',
  'StepFailed',
  'ControlRequested',
  'ControlApplied',
  'WorkflowEventReceived',
  'WorkflowEventQueued',
  'WorkflowPaused',
  'WorkflowResumed',
  'WorkflowTerminated',
  'WorkflowCompleted',
  'WorkflowFailed',
  'WorkflowContinuedAsNew',
  'ScheduleRequested',
  'WorkflowRetried',
] as const satisfies ReadonlyArray<WorkflowEventType>;

export type WorkflowStatus = 'running' | 'paused' | 'completed' | 'failed' | 'terminated';
export const FINAL_STATUSES: ReadonlySet<WorkflowStatus> = new Set(['completed', 'failed', 'terminated']);

export interface WorkflowTask {
  name: string;
  args: Json[];
  attempt: AttemptState;
}

export type WorkflowState =
  | { status: 'none' }
  | {
      status: WorkflowStatus;
      id: string;
      appId: string;
      environment: string;
      name: string;
      tag: string | null;
      parent: { workflowId: string; seq: number } | null;
      /** The `Name_vN` the first decision chose; later decisions need a worker serving it. */
      version: string | null;
      /** Something happened that the workflow code has not yet seen. */
      needsDecision: boolean;
      decision: { id: string; workerId: string; leaseExpiresAt: number; pollId?: string } | null;
      /** The newest decision started, and where: a worker that holds the run up to there gets only what followed. */
      lastDecision: { id: string; workerId: string; revision: bigint; startedAt: number } | null;
      /** The decision whose report was applied (or discarded) last: a repeat of that report is acknowledged, not refused. */
      completedDecisionId: string | null;
      decisionFailures: number;
      decisionRetryAt: number;
      /** Which run of the workflow (1 + how often it continued as new), and where its history starts. */
      run: number;
      runStartRevision: bigint;
      /** Every call of this run has a sequence number at least this (runs never reuse one). */
      seqBase: number;
      input: Json[];
      /**
       * Persistent maps: an event changes one entry in O(log n) without copying the others, so
       * folding a workflow with 10,000 tasks stays linear.
       */
      tasks: IMap<number, WorkflowTask>;
      timers: IMap<number, { fireAt: number; status: 'started' | 'fired' | 'canceled' }>;
      /** `wait`: started by `ctx.workflow` (the code awaits it), not `ctx.dispatch`; such a child is terminated when this workflow is terminated or completes while it runs. */
      children: IMap<number, { childId: string; status: 'started' | 'completed' | 'failed'; wait?: boolean }>;
      /** Causes of cross-stream effects already applied here (see DeliverEvent's `causeId`), in the order they came. */
      causes?: IOrderedSet<string>;
      /** Sequence numbers of `ControlRequested`s whose `ControlApplied` is recorded. */
      controlsApplied?: ISet<number>;
      /**
       * Events received while the current decision is in flight (its code has not seen them): a
       * decision that continues as new is then discarded and made again with them. Absent when none.
       */
      eventsDuringDecision?: number;
      /**
       * Events received (`WorkflowEventReceived`) that no completed decision's code has seen: those
       * since the start of the last completed decision. Absent when none.
       */
      unseen?: number;
      /**
       * Events the code of the last completed decision saw (received before it started and unseen
       * until then): a retry rewinds a failing decision (replayableHistory), so its code gets them
       * again at the next decision, and they count as unseen again. Absent when none.
       */
      seenByLastDecision?: number;
      /**
       * Events kept back (`WorkflowEventQueued`), oldest first, not released yet: where each is
       * recorded and the size of its data, never the data (it stays in the stream). Absent when none.
       */
      queued?: IList<QueuedEvent>;
      /**
       * Retried at least once (`WorkflowRetried`), in this run or an earlier one (kept by
       * `WorkflowContinuedAsNew`): a parent's run may have been told of its failure. Absent otherwise.
       */
      retried?: true;
      /**
       * Awaited children of earlier runs from this call (`seq`) on were ended with their run: the
       * continue-as-news that ended those runs listed them (`awaitedChildren`). Those of runs ended
       * by a continue-as-new recorded before that field existed were left running by design, and a
       * replay of their creation effects leaves them so. Absent when the continue-as-new that
       * started this run was such an older one, and in a first run.
       */
      childrenEndedFrom?: number;
    };

export type ExistingWorkflow = Exclude<WorkflowState, { status: 'none' }>;

export type WorkflowCommand =
  | {
      type: 'DispatchWorkflow';
      workflowId: string;
      appId: string;
      environment: string;
      name: string;
      tag: string | null;
      input: Json[];
      parent?: { workflowId: string; seq: number } | null;
      scheduleId?: string | null;
      now: number;
    }
  | { type: 'PauseWorkflow'; causeId?: string }
  | { type: 'ResumeWorkflow'; causeId?: string }
  | {
      type: 'TerminateWorkflow';
      reason: string | null;
      causeId?: string;
      /**
       * Not a workflow retried since it failed (`retried`): its parent's run that listed it as
       * still running when it continued as new never saw it fail, and an operator started it again.
       */
      unlessRetried?: boolean;
    }
  /** `maxQueued`: the most events a run may keep back (the instance's MAX_QUEUED_EVENTS; default `MAX_QUEUED_EVENTS`). */
  | { type: 'DeliverEvent'; name: string; data: Json[]; causeId?: string; maxQueued?: number }
  | {
      type: 'StartDecision';
      decisionId: string;
      workerId: string;
      workflows: string[];
      now: number;
      leaseMs: number;
      /** The poll claiming it, recorded when given. */
      pollId?: string;
      /** No decision pending decides nothing instead of refusing (an opportunistic claim: no error to build). */
      ifPending?: boolean;
    }
  | {
      type: 'CompleteDecision';
      decisionId: string;
      commands: DecisionCommand[];
      /** Ids for the children and tasks the commands start, keyed by sequence number. */
      ids: Record<number, string>;
      /** The workflow's query answers on the state this decision left. */
      queries?: Record<string, Json>;
    }
  | { type: 'FailDecision'; decisionId: string; code: string; message: string; historyPosition: number | null; now: number }
  | {
      type: 'Tick';
      now: number;
      /** What came due; everything when absent. */
      target?: { kind: 'decision' } | { kind: 'timer'; seq: number } | { kind: 'task'; seq: number };
    }
  | {
      type: 'StartTask';
      seq: number;
      attemptId: string;
      workerId: string;
      /** The poll claiming it, recorded when given. */
      pollId?: string;
      now: number;
      leaseMs: number;
      retryPolicy: RetryPolicy;
      timeoutMs: number | null;
    }
  | { type: 'HeartbeatTask'; seq: number; attemptId: string; now: number; leaseMs: number }
  /** From the worker running decision `decisionId`: it is still at it (inline steps). */
  | { type: 'HeartbeatDecision'; decisionId: string; now: number; leaseMs: number }
  | { type: 'CompleteTask'; seq: number; attemptId: string; result: Json }
  /**
   * A task's result and the decision it makes pending, already made by the worker that reported
   * the result (it held the run): recorded together when nothing else happened to the workflow
   * since `next.basisDecisionId`, else the result alone (see `decideNext`).
   */
  | { type: 'CompleteTaskAndDecide'; seq: number; attemptId: string; result: Json; next: NextDecision }
  | { type: 'FailTask'; seq: number; attemptId: string; error: TaskError; now: number }
  | { type: 'ReleaseTask'; seq: number; attemptId: string; now: number }
  | { type: 'ResolveChild'; seq: number; childId: string; outcome: { ok: true; result: Json } | { ok: false; error: TaskError } }
  | { type: 'RecordControlApplied'; seq: number; matched: number; changed: number }
  /** `resetTasks`: the failed tasks the failing decision saw (see protocol/workflow-retry.ts); others stay failed. */
  | { type: 'RetryWorkflow'; resetTasks: number[]; now: number };

const MAX_DECISION_RETRY_MS = 60_000;

/**
 * At most this many new events reach one decision: more sent meanwhile (a paused workflow, workers
 * down) are queued (`WorkflowEventQueued`) and released as decisions complete. A loop answering
 * each event with a timer cancelled and one started asks for about 120 bytes of commands an
 * event: 1,000 keep a decision near 120 KB, well under MAX_DECISION_BYTES (960 KiB by default).
 */
export const EVENTS_PER_DECISION = 1000;

/**
 * One release (the events kept back released in one append) hands the next decision at most this
 * much of their data, and always one event: the append holds only references (`queuedAt`), and
 * the history a worker gets after it, with the data put in (released-events.ts), and the reads
 * that put it in stay bounded whatever the events weigh.
 */
export const RELEASE_BYTES = 64 * 1024;

/**
 * At most this many events kept back per workflow: a send beyond is refused
 * (`TooManyQueuedEventsError`, RATE_LIMITED) and records nothing. The state holds two numbers a
 * queued event, and a continue-as-new carries them (`WorkflowContinuedAsNew.queued`, at most
 * about 1.4 MB at the cap); 100,000 events is 100 decisions of backlog.
 */
export const MAX_QUEUED_EVENTS = 100_000;

/** An event kept back (`WorkflowEventQueued`) until a decision may take it: where it is recorded and its data's size. */
export interface QueuedEvent {
  /** Its revision in the workflow's stream. */
  at: number;
  /** Bytes of its data (as JSON): what a release counts against `RELEASE_BYTES`. */
  bytes: number;
}

/** A sent event, as recorded when it reaches the code at once (or carried over as untaken). */
export interface ReceivedEventData {
  name: string;
  data: Json[];
  causeId?: string;
  queuedAt?: never;
}

/** A release of the event recorded at revision `queuedAt` as `WorkflowEventQueued`. */
export interface ReleasedEventData {
  queuedAt: number;
  name?: never;
  data?: never;
  causeId?: never;
}

/** The bytes of an event's data as a release counts them. */
export function eventDataBytes(data: Json[]): number {
  return Buffer.byteLength(JSON.stringify(data), 'utf8');
}

/** A decision a worker made on its own right after a task's result (`CompleteTaskAndDecide`). */
export interface NextDecision {
  /** The decision the worker's run stood at: it must be the last one, made by the same worker, and completed. */
  basisDecisionId: string;
  /** The id this decision is recorded under (the server's). */
  decisionId: string;
  workerId: string;
  /** The `Name_vN` the worker ran: the workflow's own version. */
  version: string;
  /** The decision's clock, as the worker's code saw it (`ctx.now()`); the engine bounds it. */
  now: number;
  leaseMs: number;
  commands: DecisionCommand[];
  ids: Record<number, string>;
  queries?: Record<string, Json>;
}

/** The version of `name` a worker serving `offered` runs: `Name_vN` with the highest N, or `Name`. */
export function pickVersion(name: string, offered: string[]): string | null {
  if (/_v\d+$/.test(name)) return offered.includes(name) ? name : null;
  // BigInt: a date-stamped `_v2020012001000000001` is past a double's exact integers.
  let best: { version: string; n: bigint } | null = offered.includes(name) ? { version: name, n: 0n } : null;
  for (const candidate of offered) {
    const match = /^(.*)_v(\d+)$/.exec(candidate);
    if (match && match[1] === name && (best === null || BigInt(match[2]) > best.n)) {
      best = { version: candidate, n: BigInt(match[2]) };
    }
  }
  return best?.version ?? null;
}

/** The base name a workflow version serves (`Onboarding_v2` → `Onboarding`). */
export const baseName = (name: string): string => name.replace(/_v\d+$/, '');

export const workflowDecider: Decider<WorkflowCommand, WorkflowEvent, WorkflowState> = {
  initialState: () => ({ status: 'none' }),

  decide(command, state) {
    if (command.type === 'DispatchWorkflow') {
      if (state.status !== 'none') return [];
      return [
        {
          type: 'WorkflowDispatched',
          data: {
            workflowId: command.workflowId,
            appId: command.appId,
            environment: command.environment,
            name: command.name,
            tag: command.tag,
            input: command.input,
            parent: command.parent ?? null,
            scheduleId: command.scheduleId ?? null,
            dispatchedAt: iso(command.now),
          },
        },
      ];
    }
    if (state.status === 'none') throw new NotFoundError('workflow', 'in this stream');
    const final = FINAL_STATUSES.has(state.status);

    // An effect of another workflow's `select()` already applied here (by this instance or another).
    if ('causeId' in command && command.causeId !== undefined && state.causes?.has(command.causeId)) return [];
    const caused = 'causeId' in command && command.causeId !== undefined ? { causeId: command.causeId } : {};
    switch (command.type) {
      case 'PauseWorkflow':
        return state.status === 'running' ? [{ type: 'WorkflowPaused', data: caused }] : [];
      case 'ResumeWorkflow':
        return state.status === 'paused' ? withReleases(state, [{ type: 'WorkflowResumed', data: caused }]) : [];
      case 'TerminateWorkflow':
        return final || (command.unlessRetried && state.retried) ? [] : [{ type: 'WorkflowTerminated', data: { reason: command.reason, ...caused } }];
      case 'DeliverEvent': {
        if (final) return [];
        const data = command.causeId === undefined ? { name: command.name, data: command.data } : { name: command.name, data: command.data, causeId: command.causeId };
        if (!keptBack(state)) return [{ type: 'WorkflowEventReceived', data }];
        const cap = command.maxQueued ?? MAX_QUEUED_EVENTS;
        if ((state.queued?.size ?? 0) >= cap) throw new TooManyQueuedEventsError(state.id, cap);
        return [{ type: 'WorkflowEventQueued', data }];
      }

      case 'StartDecision': {
        if (!decisionClaimable(state, command.now)) {
          if (command.ifPending) return [];
          throw new ConflictError('no decision is pending for this workflow');
        }
        const version = state.version ?? pickVersion(state.name, command.workflows);
        if (version === null || !command.workflows.includes(version)) {
          throw new ConflictError(`worker does not serve workflow ${state.version ?? state.name}`);
        }
        return [
          {
            type: 'DecisionStarted',
            data: {
              decisionId: command.decisionId,
              workerId: command.workerId,
              version,
              startedAt: iso(command.now),
              leaseExpiresAt: iso(command.now + command.leaseMs),
              ...(command.pollId !== undefined ? { pollId: command.pollId } : {}),
            },
          },
        ];
      }

      case 'CompleteDecision': {
        if (state.completedDecisionId === command.decisionId) return [];
        if (state.decision?.id !== command.decisionId) {
          throw new ConflictError('decision is no longer current (its lease lapsed or the workflow ended)');
        }
        const completed: WorkflowEvent = {
          type: 'DecisionCompleted',
          data: { decisionId: command.decisionId, commands: withoutStepOutcomes(command.commands), ...(command.queries ? { queries: command.queries } : {}) },
        };
        if (final) return [completed];
        if (state.status === 'paused') {
          // Paused while the decision ran: nothing it asks for (tasks, children, events, a
          // schedule, the end) may start before resume. It is made again then, on everything
          // recorded meanwhile (the steps it ran run again: the SDK replays a discarded decision afresh).
          return [{ type: 'DecisionDiscarded', data: { decisionId: command.decisionId, reason: 'the workflow was paused while the decision ran; it is made again once resumed' } }];
        }
        if ((state.eventsDuringDecision ?? 0) > 0 && command.commands.some((c) => c.type === 'ContinueAsNew')) {
          // Events arrived that the code of a decision ending this run never saw: made again with
          // them (as Temporal refuses such a completion), so the code takes them or carries them
          // over as untaken, rather than the new run getting copies of them in this append.
          return [{ type: 'DecisionDiscarded', data: { decisionId: command.decisionId, reason: 'events arrived while the decision that continues as new ran; it is made again with them' } }];
        }
        // Each command sees the effect of the ones before it (a timer started and cancelled in one decision).
        const events: WorkflowEvent[] = [completed];
        let current: WorkflowState = workflowDecider.evolve(state, completed);
        for (const c of command.commands) {
          if (FINAL_STATUSES.has((current as ExistingWorkflow).status) || current.status === 'none') break;
          for (const event of commandEvents(c, current as ExistingWorkflow, command.ids, command.decisionId)) {
            events.push(event);
            current = workflowDecider.evolve(current, event);
          }
          if (events.at(-1)?.type === 'WorkflowContinuedAsNew') {
            // Events the code saw but never took: the new run gets them, in order, with their
            // causes (a repeated delivery is still known), as the next decision of this run would have.
            for (const event of c.type === 'ContinueAsNew' ? (c.events ?? []) : []) {
              const data = event.causeId === undefined ? { name: event.name, data: event.data } : { name: event.name, data: event.data, causeId: event.causeId };
              const received: WorkflowEvent = { type: 'WorkflowEventReceived', data };
              events.push(received);
              current = workflowDecider.evolve(current, received);
            }
            // Then the events the old run kept back (its code never saw them), in order: they stay
            // where they were recorded (the new run is in the same stream, its WorkflowContinuedAsNew
            // lists where), released as far as the new run's first decision has room.
            return [...events, ...releases(current as ExistingWorkflow)];
          }
        }
        // A run that goes on takes the next of the events kept back, as far as its next decision has room.
        return current.status === 'running' ? [...events, ...releases(current)] : events;
      }

      case 'FailDecision': {
        if (state.decision?.id !== command.decisionId) {
          // The same report again (its answer was lost): the decision failed last, and none is in flight since.
          if (state.decision === null && state.lastDecision?.id === command.decisionId) return [];
          throw new ConflictError('decision is no longer current (its lease lapsed or the workflow ended)');
        }
        const delay = Math.min(1000 * 2 ** state.decisionFailures, MAX_DECISION_RETRY_MS);
        return [
          {
            type: 'DecisionFailed',
            data: {
              decisionId: command.decisionId,
              code: command.code,
              message: command.message,
              historyPosition: command.historyPosition,
              retryAt: iso(command.now + delay),
            },
          },
        ];
      }

      case 'Tick': {
        if (final) return [];
        const events: WorkflowEvent[] = [];
        const target = command.target;
        if ((!target || target.kind === 'decision') && state.decision && state.decision.leaseExpiresAt <= command.now) {
          events.push({ type: 'DecisionTimedOut', data: { decisionId: state.decision.id } });
        }
        const timers = target ? (target.kind === 'timer' ? [target.seq] : []) : [...state.timers.keys()];
        for (const seq of timers) {
          const timer = state.timers.get(seq);
          if (timer?.status === 'started' && timer.fireAt <= command.now) events.push({ type: 'TimerFired', data: { seq } });
        }
        const tasks = target ? (target.kind === 'task' ? [target.seq] : []) : [...state.tasks.keys()];
        for (const seq of tasks) {
          const task = state.tasks.get(seq);
          if (task) events.push(...withSeq(decideExpiry(task.attempt, command.now, seq)));
        }
        return events;
      }

      case 'StartTask': {
        if (state.status !== 'running') throw new ConflictError(`workflow is ${state.status}; no task is dispatched`);
        const task = taskOf(state, command.seq);
        return withSeq(decideStart(task.attempt, command, command.seq));
      }
      case 'HeartbeatDecision':
        if (final || state.decision?.id !== command.decisionId || !leaseWorthExtending(state.decision.leaseExpiresAt, command.now, command.leaseMs)) return [];
        return [{ type: 'DecisionLeaseExtended', data: { decisionId: command.decisionId, leaseExpiresAt: iso(command.now + command.leaseMs) } }];
      case 'HeartbeatTask':
        if (final) return [];
        return withSeq(decideHeartbeat(taskOf(state, command.seq).attempt, command, command.seq));
      case 'CompleteTask':
        return withSeq(decideComplete(taskOf(state, command.seq).attempt, command, command.seq));
      case 'CompleteTaskAndDecide': {
        const completed = withSeq(decideComplete(taskOf(state, command.seq).attempt, command, command.seq));
        return completed.length === 1 && completed[0].type === 'TaskCompleted' ? [...completed, ...decideNext(state, completed[0], command.next)] : completed;
      }
      case 'FailTask':
        return withSeq(decideFail(taskOf(state, command.seq).attempt, command, command.seq));
      case 'ReleaseTask':
        return withSeq(decideRelease(taskOf(state, command.seq).attempt, command, command.seq));

      case 'RecordControlApplied':
        if (state.controlsApplied?.has(command.seq)) return [];
        return [{ type: 'ControlApplied', data: { seq: command.seq, matched: command.matched, changed: command.changed } }];

      case 'RetryWorkflow': {
        if (state.status !== 'failed') return [];
        const resetTasks = command.resetTasks.filter((seq) => state.tasks.get(seq)?.attempt.status === 'failed');
        return withReleases(state, [{ type: 'WorkflowRetried', data: { resetTasks, retriedAt: iso(command.now) } }]);
      }

      case 'ResolveChild': {
        const child = state.children.get(command.seq);
        if (!child || child.childId !== command.childId || child.status !== 'started') return [];
        return command.outcome.ok
          ? [{ type: 'ChildWorkflowCompleted', data: { seq: command.seq, childId: command.childId, result: command.outcome.result } }]
          : [{ type: 'ChildWorkflowFailed', data: { seq: command.seq, childId: command.childId, error: command.outcome.error } }];
      }
    }
  },

  evolve(state, event) {
    if (event.type === 'WorkflowDispatched' || event.type === 'WorkflowContinuedAsNew') {
      const next = event.type === 'WorkflowContinuedAsNew';
      return {
        status: 'running',
        id: event.data.workflowId,
        appId: event.data.appId,
        environment: event.data.environment,
        name: event.data.name,
        tag: event.data.tag,
        parent: event.data.parent,
        version: next ? event.data.version : null,
        needsDecision: true,
        decision: null,
        lastDecision: null,
        completedDecisionId: next ? (event.data.decisionId ?? null) : null,
        decisionFailures: 0,
        decisionRetryAt: 0,
        run: next ? event.data.run : 1,
        runStartRevision: event.revision ?? 0n,
        seqBase: next ? event.data.seqBase : 0,
        // One that lists the children but not where from (the version before the field) is taken as from the start.
        ...(next && event.data.awaitedChildren !== undefined ? { childrenEndedFrom: event.data.childrenEndedFrom ?? 0 } : {}),
        ...(next && event.data.retried ? { retried: true as const } : {}),
        ...(next && event.data.causes?.length ? { causes: IOrderedSet(event.data.causes) } : {}),
        ...(next && event.data.queued?.at.length ? { queued: IList(event.data.queued.at.map((at, i) => ({ at, bytes: event.data.queued!.bytes[i] ?? 0 }))) } : {}),
        input: event.data.input,
        tasks: IMap(),
        timers: IMap(),
        children: IMap(),
      };
    }
    if (state.status === 'none') return state;
    switch (event.type) {
      case 'DecisionStarted':
        return {
          ...state,
          version: state.version ?? event.data.version,
          needsDecision: false,
          decision: {
            id: event.data.decisionId,
            workerId: event.data.workerId,
            leaseExpiresAt: Date.parse(event.data.leaseExpiresAt),
            ...(event.data.pollId !== undefined ? { pollId: event.data.pollId } : {}),
          },
          eventsDuringDecision: undefined,
          lastDecision: { id: event.data.decisionId, workerId: event.data.workerId, revision: event.revision ?? -1n, startedAt: Date.parse(event.data.startedAt) },
        };
      case 'DecisionCompleted': {
        // Its code saw every event received before it started; those received since, it did not.
        const seen = (state.unseen ?? 0) - (state.eventsDuringDecision ?? 0);
        return {
          ...state,
          decision: null,
          eventsDuringDecision: undefined,
          unseen: state.eventsDuringDecision,
          seenByLastDecision: seen > 0 ? seen : undefined,
          decisionFailures: 0,
          completedDecisionId: event.data.decisionId,
        };
      }
      case 'DecisionFailed':
        return {
          ...state,
          decision: null,
          eventsDuringDecision: undefined,
          needsDecision: true,
          decisionFailures: state.decisionFailures + 1,
          decisionRetryAt: Date.parse(event.data.retryAt),
        };
      case 'DecisionTimedOut':
        return { ...state, decision: null, eventsDuringDecision: undefined, needsDecision: true };
      case 'DecisionDiscarded':
        // Its report was taken (and set aside): the same report again is acknowledged, as a recorded one's is.
        return { ...state, decision: null, eventsDuringDecision: undefined, needsDecision: true, completedDecisionId: event.data.decisionId };
      case 'DecisionLeaseExtended':
        return state.decision?.id === event.data.decisionId ? { ...state, decision: { ...state.decision, leaseExpiresAt: Date.parse(event.data.leaseExpiresAt) } } : state;
      case 'TaskScheduled':
        // The arguments stay in the stream (the worker gets them with its claim).
        return { ...state, tasks: state.tasks.set(event.data.seq, { name: event.data.name, args: event.data.args, attempt: initialAttemptState() }) };
      case 'TaskStarted':
      case 'TaskLeaseExtended':
      case 'TaskAttemptFailed':
      case 'TaskResultIgnored':
      case 'TaskCompleted':
      case 'TaskFailed': {
        const task = state.tasks.get(event.data.seq);
        if (!task) return state;
        const attempt = evolveAttempt(task.attempt, event as AttemptEvent);
        return {
          ...state,
          needsDecision: state.needsDecision || event.type === 'TaskCompleted' || event.type === 'TaskFailed',
          // A completed task keeps no arguments: only what a repeated or late report needs (a failed
          // one keeps them: retryWorkflows may run it again).
          tasks: state.tasks.set(event.data.seq, { name: task.name, args: attempt.status === 'completed' ? [] : task.args, attempt }),
        };
      }
      case 'TimerStarted':
        return { ...state, timers: state.timers.set(event.data.seq, { fireAt: Date.parse(event.data.fireAt), status: 'started' }) };
      case 'TimerFired':
      case 'TimerCanceled': {
        const timer = state.timers.get(event.data.seq);
        if (!timer) return state;
        const fired = event.type === 'TimerFired';
        return {
          ...state,
          needsDecision: state.needsDecision || fired,
          timers: state.timers.set(event.data.seq, { ...timer, status: fired ? 'fired' : 'canceled' }),
        };
      }
      case 'ChildWorkflowStarted':
        return { ...state, children: state.children.set(event.data.seq, { childId: event.data.childId, status: 'started', wait: event.data.wait === true }) };
      case 'ChildWorkflowCompleted':
      case 'ChildWorkflowFailed': {
        const child = state.children.get(event.data.seq);
        if (!child) return state;
        const status = event.type === 'ChildWorkflowCompleted' ? 'completed' : 'failed';
        // Only a child the code awaits (`ctx.workflow`) wakes it: the end of one it dispatched
        // (`ctx.dispatch`, fire and forget) is recorded for the audit, and no code waits on it.
        return { ...state, needsDecision: state.needsDecision || child.wait === true, children: state.children.set(event.data.seq, { ...child, status }) };
      }
      case 'WorkflowEventReceived': {
        const during = state.decision === null ? state.eventsDuringDecision : (state.eventsDuringDecision ?? 0) + 1;
        // A release takes the oldest event kept back (its cause was applied when it was queued).
        const queued = event.data.queuedAt !== undefined && state.queued ? state.queued.shift() : state.queued;
        return withCause({ ...state, needsDecision: true, eventsDuringDecision: during, unseen: (state.unseen ?? 0) + 1, queued: queued?.size ? queued : undefined }, event.data.causeId);
      }
      case 'WorkflowEventQueued': {
        // Where it is and how big: its data stays in the stream.
        const kept: QueuedEvent = { at: Number(event.revision ?? -1n), bytes: eventDataBytes(event.data.data) };
        return withCause({ ...state, queued: (state.queued ?? IList<QueuedEvent>()).push(kept) }, event.data.causeId);
      }
      case 'WorkflowPaused':
        return withCause({ ...state, status: 'paused' }, event.data.causeId);
      case 'WorkflowResumed':
        return withCause({ ...state, status: 'running' }, event.data.causeId);
      case 'WorkflowTerminated':
        return withCause({ ...state, status: 'terminated', needsDecision: false }, event.data.causeId);
      case 'WorkflowCompleted':
        return { ...state, status: 'completed', needsDecision: false };
      case 'WorkflowFailed':
        return { ...state, status: 'failed', needsDecision: false };
      case 'WorkflowRetried': {
        let tasks = state.tasks;
        for (const seq of event.data.resetTasks) {
          const task = tasks.get(seq);
          if (task) tasks = tasks.set(seq, { ...task, attempt: retriedAttemptState(task.attempt) });
        }
        // The failing decision is rewound (replayableHistory): what its code saw is new again to the next one.
        const unseen = (state.unseen ?? 0) + (state.seenByLastDecision ?? 0);
        return {
          ...state,
          status: 'running',
          needsDecision: true,
          decision: null,
          eventsDuringDecision: undefined,
          unseen: unseen > 0 ? unseen : undefined,
          seenByLastDecision: undefined,
          decisionFailures: 0,
          decisionRetryAt: 0,
          tasks,
          retried: true,
        };
      }
      case 'ControlApplied':
        return { ...state, controlsApplied: (state.controlsApplied ?? ISet<number>()).add(event.data.seq) };
      default:
        // TaskDispatchRequested, ControlRequested, ScheduleRequested change nothing here; a type
        // this version does not know (a newer Baton wrote it) is skipped, never fatal.
        return state;
    }
  },
};

/**
 * Causes a continue-as-new carries to the next run (\`WorkflowContinuedAsNew.causes\`): a send
 * is carried out again only until its \`ControlApplied\` is recorded (the reactor's retry, an
 * instance that died in between, another instance's reactor a moment behind), so the newest
 * few hundred are enough; at 36 bytes each they add at most 9 KiB to the event.
 */
export const CARRIED_CAUSES = 256;

/** After `WorkflowContinuedAsNew` the state depends on nothing earlier: cold loads start there. */
export const WORKFLOW_RESET_TYPES: ReadonlySet<string> = new Set(['WorkflowContinuedAsNew']);
Object.assign(workflowDecider, { resetTypes: WORKFLOW_RESET_TYPES });

/** `decisionId`: the decision whose commands these are. */
function commandEvents(command: DecisionCommand, state: ExistingWorkflow, ids: Record<number, string>, decisionId: string): WorkflowEvent[] {
  if ('seq' in command && command.seq < state.seqBase) {
    throw new BadUserInputError('commands', `call ${command.seq} belongs to an earlier run (this run numbers its calls from ${state.seqBase})`);
  }
  switch (command.type) {
    case 'ScheduleTask':
      if (state.tasks.has(command.seq)) return [];
      return [{ type: 'TaskScheduled', data: { seq: command.seq, name: command.name, args: command.args } }];
    case 'StartTimer':
      if (state.timers.has(command.seq)) return [];
      return [{ type: 'TimerStarted', data: { seq: command.seq, fireAt: command.fireAt } }];
    case 'CancelTimer':
      return state.timers.get(command.seq)?.status === 'started' ? [{ type: 'TimerCanceled', data: { seq: command.seq } }] : [];
    case 'StartChildWorkflow':
      if (state.children.has(command.seq)) return [];
      return [
        {
          type: 'ChildWorkflowStarted',
          data: { seq: command.seq, childId: idFor(ids, command.seq), name: command.name, args: command.args, tag: command.tag ?? null, wait: command.wait },
        },
      ];
    case 'DispatchTask':
      return [{ type: 'TaskDispatchRequested', data: { seq: command.seq, taskId: idFor(ids, command.seq), name: command.name, args: command.args } }];
    case 'ControlWorkflows':
      return [
        {
          type: 'ControlRequested',
          data: { seq: command.seq, selector: command.selector, action: command.action, event: command.event ?? null },
        },
      ];
    case 'RecordStep':
      if (command.error !== undefined) {
        const error = { message: command.error.message, ...(command.error.name ? { name: command.error.name } : {}) };
        return [{ type: 'StepFailed', data: { seq: command.seq, name: command.name, error } }];
      }
      if (command.result !== undefined) return [{ type: 'StepCompleted', data: { seq: command.seq, name: command.name, result: command.result } }];
      return [];
    case 'CompleteWorkflow':
      return [{ type: 'WorkflowCompleted', data: { result: command.result } }];
    case 'FailWorkflow':
      return [{ type: 'WorkflowFailed', data: { error: command.error } }];
    case 'CreateSchedule':
      return [
        {
          type: 'ScheduleRequested',
          data: {
            seq: command.seq,
            scheduleId: idFor(ids, command.seq),
            kind: command.kind,
            name: command.name,
            args: command.args,
            cron: command.cron,
            timezone: command.timezone,
            tag: command.tag,
          },
        },
      ];
    case 'ContinueAsNew': {
      // A loop, not Math.max(...seqs): a run with ~150,000 tasks, timers and children (the run
      // continueAsNew is for) overflowed the stack with the spread, and the decision never recorded.
      let seqBase = Math.max(state.seqBase, command.seq + 1);
      for (const keys of [state.tasks.keys(), state.timers.keys(), state.children.keys()]) for (const n of keys) if (n + 1 > seqBase) seqBase = n + 1;
      // The new run cannot await the old run's children: those still running are ended with the
      // old run (the effects reactor terminates them), as when a workflow completes without them.
      const awaitedChildren = awaitedRunning(state); // written even when empty: this run's end is the one that ends them
      return [
        {
          type: 'WorkflowContinuedAsNew',
          data: {
            workflowId: state.id,
            appId: state.appId,
            environment: state.environment,
            name: state.name,
            tag: state.tag,
            input: command.args,
            parent: state.parent,
            scheduleId: null,
            dispatchedAt: command.at,
            run: state.run + 1,
            seqBase,
            version: state.version,
            awaitedChildren,
            // This run's children are listed here; those of the runs before, as far as their own continue-as-news did.
            childrenEndedFrom: state.run === 1 ? 0 : (state.childrenEndedFrom ?? state.seqBase),
            ...(state.retried ? { retried: true as const } : {}),
            ...(state.causes?.size ? { causes: state.causes.toArray().slice(-CARRIED_CAUSES) } : {}),
            // References (numbers), not copies: the new run is in the same stream.
            ...(state.queued?.size ? { queued: { at: state.queued.map((q) => q.at).toArray(), bytes: state.queued.map((q) => q.bytes).toArray() } } : {}),
            decisionId,
            ownDraws: true,
          },
        },
      ];
    }
  }
}

/** An event sent now is kept back: the run already has `EVENTS_PER_DECISION` events its code has not seen, or earlier ones are kept back (they go first). */
function keptBack(state: ExistingWorkflow): boolean {
  return (state.queued?.size ?? 0) > 0 || (state.unseen ?? 0) >= EVENTS_PER_DECISION;
}

/**
 * Releases of the events kept back that the next decision has room for (`EVENTS_PER_DECISION`,
 * `RELEASE_BYTES` of their data, always one), oldest first: each points at its `WorkflowEventQueued`.
 */
function releases(state: ExistingWorkflow): WorkflowEvent[] {
  const room = Math.min(state.queued?.size ?? 0, EVENTS_PER_DECISION - (state.unseen ?? 0));
  const out: WorkflowEvent[] = [];
  let bytes = 0;
  for (let i = 0; i < room; i++) {
    const q = state.queued!.get(i)!;
    bytes += q.bytes;
    if (out.length > 0 && bytes > RELEASE_BYTES) break;
    out.push({ type: 'WorkflowEventReceived', data: { queuedAt: q.at } });
  }
  return out;
}

/** `events` (a resume, a retry) and then the releases the state after them has room for. */
function withReleases(state: ExistingWorkflow, events: WorkflowEvent[]): WorkflowEvent[] {
  if (!state.queued?.size) return events;
  const after = events.reduce<WorkflowState>((s, e) => workflowDecider.evolve(s, e), state);
  return after.status === 'running' ? [...events, ...releases(after)] : events;
}

/** The state with `causeId` (an effect of another workflow's `select()`) among the causes applied. */
function withCause(state: ExistingWorkflow, causeId: string | undefined): ExistingWorkflow {
  return causeId === undefined ? state : { ...state, causes: (state.causes ?? IOrderedSet<string>()).add(causeId) };
}

/** The children a run awaits (`ctx.workflow`, not `ctx.dispatch`) that have not ended, by id. */
export function awaitedRunning(state: ExistingWorkflow): string[] {
  const ids: string[] = [];
  for (const child of state.children.values()) if (child.wait === true && child.status === 'started') ids.push(child.childId);
  return ids;
}

/**
 * The commands as `DecisionCompleted` keeps them: a step's outcome is recorded once, in its own
 * `StepCompleted`/`StepFailed` event, so the decision keeps only what replay checks (type, seq, name).
 */
function withoutStepOutcomes(commands: DecisionCommand[]): DecisionCommand[] {
  if (!commands.some((c) => c.type === 'RecordStep' || (c.type === 'ContinueAsNew' && c.events !== undefined))) return commands;
  return commands.map((c) => {
    if (c.type === 'RecordStep') return { type: c.type, seq: c.seq, name: c.name };
    // The events a continue-as-new carries are recorded in the new run; stored once, not twice.
    if (c.type === 'ContinueAsNew' && c.events !== undefined) return { type: c.type, seq: c.seq, args: c.args, at: c.at };
    return c;
  });
}

/**
 * The decision a worker made right after a task's result, on the run as it held it: recorded
 * (DecisionStarted and DecisionCompleted, in the same append as the result) only when that run is
 * still the whole truth: its last decision is the basis, made by this worker and completed, and
 * nothing the code has not seen happened since (no event, timer, child or other task outcome);
 * and its clock is not before the basis decision's.
 * Anything else, and commands the decider refuses, leave the result alone: the decision is then
 * claimed and made as usual. Never throws.
 */
function decideNext(state: ExistingWorkflow, completed: WorkflowEvent, next: NextDecision): WorkflowEvent[] {
  const basis = state.lastDecision;
  if (state.status !== 'running' || state.needsDecision || state.decision !== null) return [];
  if (basis?.id !== next.basisDecisionId || basis.workerId !== next.workerId || state.completedDecisionId !== next.basisDecisionId) return [];
  // The code's clock never runs backwards from one decision to the next.
  if (next.now < basis.startedAt) return [];
  if (state.version !== next.version) return [];
  try {
    const afterResult = workflowDecider.evolve(state, completed);
    const started = workflowDecider.decide(
      { type: 'StartDecision', decisionId: next.decisionId, workerId: next.workerId, workflows: [next.version], now: next.now, leaseMs: next.leaseMs },
      afterResult,
    );
    const afterStart = started.reduce((s, e) => workflowDecider.evolve(s, e), afterResult);
    const decided = workflowDecider.decide({ type: 'CompleteDecision', decisionId: next.decisionId, commands: next.commands, ids: next.ids, queries: next.queries }, afterStart);
    return [...started, ...decided];
  } catch (error) {
    if (error instanceof BatonError) return [];
    throw error;
  }
}

function idFor(ids: Record<number, string>, seq: number): string {
  const id = ids[seq];
  if (!id) throw new BadUserInputError('commands', `no id was prepared for call ${seq}`);
  return id;
}

function taskOf(state: ExistingWorkflow, seq: number): WorkflowTask {
  const task = state.tasks.get(seq);
  if (!task) throw new NotFoundError('task call', `#${seq}`);
  return task;
}

const withSeq = (events: AttemptEvent[]): WorkflowEvent[] => events as WorkflowEvent[];

export function decisionClaimable(state: WorkflowState, now: number): boolean {
  return state.status === 'running' && state.needsDecision && state.decision === null && state.decisionRetryAt <= now;
}

/** True when the task of call `seq` may be claimed by a worker now. */
export function taskClaimable(state: WorkflowState, seq: number, now: number): boolean {
  if (state.status !== 'running') return false;
  const attempt = state.tasks.get(seq)?.attempt;
  return attempt !== undefined && attempt.status === 'pending' && attempt.readyAt <= now;
}

/** When the clock must next act on the task of call `seq`: its lease, or its retry becoming claimable. */
export function taskDueAt(state: WorkflowState, seq: number, now: number): number | undefined {
  if (state.status === 'none' || FINAL_STATUSES.has(state.status)) return undefined;
  const attempt = state.tasks.get(seq)?.attempt;
  if (!attempt) return undefined;
  if (attempt.status === 'pending') return attempt.readyAt > now ? attempt.readyAt : undefined;
  return attemptDueAt(attempt);
}

/** When the timer of call `seq` fires, while it is still started. */
export function timerDueAt(state: WorkflowState, seq: number): number | undefined {
  if (state.status === 'none' || FINAL_STATUSES.has(state.status)) return undefined;
  const timer = state.timers.get(seq);
  return timer?.status === 'started' ? timer.fireAt : undefined;
}

/** When the clock must next act on the workflow's decision: its lease, or the end of a failed decision's backoff. */
export function decisionDueAt(state: WorkflowState, now: number): number | undefined {
  if (state.status === 'none' || FINAL_STATUSES.has(state.status)) return undefined;
  if (state.decision) return state.decision.leaseExpiresAt;
  if (state.needsDecision && state.decisionRetryAt > now) return state.decisionRetryAt;
  return undefined;
}

/** Sequence numbers of this workflow's tasks that a worker may claim now (all of them: O(tasks)). */
export function claimableTasks(state: WorkflowState, now: number): number[] {
  if (state.status === 'none') return [];
  return [...state.tasks.keys()].filter((seq) => taskClaimable(state, seq, now));
}

/**
 * The next moment the clock must act on this workflow, over all of its items (O(items); the
 * engine indexes each item on its own instead). Undefined when nothing waits on time.
 */
export function nextDueAt(state: WorkflowState, now: number): number | undefined {
  if (state.status === 'none') return undefined;
  const times = [
    decisionDueAt(state, now),
    ...[...state.timers.keys()].map((seq) => timerDueAt(state, seq)),
    ...[...state.tasks.keys()].map((seq) => taskDueAt(state, seq, now)),
  ].filter((t): t is number => t !== undefined);
  return times.length > 0 ? Math.min(...times) : undefined;
}
