import { Inject, Injectable } from '@nestjs/common';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { CommandContext, DeciderRunner } from '../event-store/decider-runner.js';
import { Json } from '../event-store/event-store.port.js';
import { CLOCK, type Clock } from '../shared/clock.js';
import { BadUserInputError, BatonError, ConflictError, NotFoundError } from '../shared/errors.js';
import { derivedUuid, uuidv7 } from '../shared/ids.js';
import { taskDecider } from '../tasks/domain/task.decider.js';
import { DEFAULT_RETRY_POLICY, RetryPolicy, TaskError, holdsAttempt } from '../tasks/domain/task-attempts.js';
import { DECISION_COMMAND_TYPES, DecisionCommand } from '../workflows/domain/workflow-commands.js';
import { FINAL_STATUSES, WorkflowEventData, workflowDecider } from '../workflows/domain/workflow.decider.js';
import { replayableHistory } from '../workflows/domain/workflow-retry.js';
import { Candidate, EngineState } from './engine-state.js';
import { parseRef } from './work-refs.js';
import {
  DecisionReportInput,
  HeartbeatInput,
  HeartbeatResult,
  PollWorkInput,
  ReportRejection,
  ReportWorkInput,
  TaskReportInput,
  WorkItem,
  WorkKind,
} from './worker-protocol.types.js';

const workerContext = (input: { appId: string; environment: string; workerId: string }): CommandContext => ({
  actor: `worker:${input.workerId}`,
  appId: input.appId,
  environment: input.environment,
  correlationId: uuidv7(),
});

/**
 * The server side of the worker protocol: claims (appends with an expected revision), reports
 * and heartbeats. A poll answers the moment it has claimed something; with nothing to claim it
 * parks until the engine state announces work for the worker's names, or its wait runs out.
 */
@Injectable()
export class EngineService {
  private readonly claiming = new Set<string>();

  constructor(
    private readonly engine: EngineState,
    private readonly runner: DeciderRunner,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
  ) {}

  async poll(input: PollWorkInput, signal?: AbortSignal): Promise<WorkItem[]> {
    const max = input.maxItems ?? 10;
    const deadline = Date.now() + (input.waitMs ?? 20_000);
    const taskNames = input.tasks.map((t) => t.name);
    const policies = new Map(input.tasks.map((t) => [t.name, { retry: t.retry ?? DEFAULT_RETRY_POLICY, timeoutMs: t.timeoutMs ?? null }]));
    for (;;) {
      if (signal?.aborted) return [];
      const candidates = this.engine.candidates(input.appId, input.environment, input.workflows, taskNames, max, this.claiming);
      const items = (await Promise.all(candidates.map((c) => this.claim(input, c, policies)))).filter((i): i is WorkItem => i !== null);
      if (items.length > 0) return items;
      const remaining = deadline - Date.now();
      if (remaining <= 0) return [];
      // Candidates that could not be claimed were taken elsewhere (another instance, whose event
      // this one has not projected yet): give the log a moment instead of spinning on them.
      const wait = candidates.length === 0 ? remaining : Math.min(remaining, 20);
      await this.engine.waitForWork(input.appId, input.environment, input.workflows, taskNames, wait, signal);
    }
  }

  private async claim(
    input: PollWorkInput,
    candidate: Candidate,
    policies: Map<string, { retry: RetryPolicy; timeoutMs: number | null }>,
  ): Promise<WorkItem | null> {
    this.claiming.add(candidate.ref);
    try {
      return candidate.kind === 'decision' ? await this.claimDecision(input, candidate.ref) : await this.claimTask(input, candidate.ref, policies);
    } catch (error) {
      if (error instanceof ConflictError || error instanceof NotFoundError) return null;
      throw error;
    } finally {
      this.claiming.delete(candidate.ref);
    }
  }

  private async claimDecision(input: PollWorkInput, ref: string): Promise<WorkItem> {
    const workflowId = ref.slice(3);
    const decisionId = uuidv7();
    const now = this.clock.now();
    const result = await this.runner.run(
      `workflow-${workflowId}`,
      workflowDecider,
      { type: 'StartDecision', decisionId, workerId: input.workerId, workflows: input.workflows, now, leaseMs: this.config.leaseMs },
      workerContext(input),
    );
    const started = result.events[0].data as WorkflowEventData['DecisionStarted'];
    const dispatched = result.history[0].data as WorkflowEventData['WorkflowDispatched'];
    // After a retry, the code replays the history as if the failure never happened (workflow-retry.ts).
    const history = replayableHistory([
      ...result.history.map((e) => ({ revision: Number(e.revision), type: e.type, data: e.data })),
      { revision: result.history.length, type: 'DecisionStarted', data: started },
    ]);
    return {
      kind: WorkKind.DECISION,
      ref,
      workflowId,
      taskId: null,
      name: dispatched.name,
      version: started.version,
      decisionId,
      attemptId: null,
      attempt: null,
      input: JSON.stringify(dispatched.input),
      history: JSON.stringify(history),
      leaseExpiresAt: new Date(started.leaseExpiresAt),
    };
  }

  private async claimTask(
    input: PollWorkInput,
    ref: string,
    policies: Map<string, { retry: RetryPolicy; timeoutMs: number | null }>,
  ): Promise<WorkItem> {
    const parsed = parseRef(ref);
    const attemptId = uuidv7();
    const now = this.clock.now();
    const base = { attemptId, workerId: input.workerId, now, leaseMs: this.config.leaseMs };
    if (parsed?.kind === 'workflowTask') {
      const result = await this.runner.run(
        `workflow-${parsed.workflowId}`,
        workflowDecider,
        (state) => {
          const name = state.status === 'none' ? '' : (state.tasks[parsed.seq]?.name ?? '');
          const policy = policies.get(name) ?? { retry: DEFAULT_RETRY_POLICY, timeoutMs: null };
          return { type: 'StartTask' as const, seq: parsed.seq, ...base, retryPolicy: policy.retry, timeoutMs: policy.timeoutMs };
        },
        workerContext(input),
      );
      const state = result.state;
      if (state.status === 'none') throw new NotFoundError('workflow', parsed.workflowId);
      const task = state.tasks[parsed.seq];
      const started = result.events[0].data as WorkflowEventData['TaskStarted'];
      return this.taskItem(ref, parsed.workflowId, null, task.name, task.args, started);
    }
    if (parsed?.kind === 'task') {
      const result = await this.runner.run(
        `task-${parsed.taskId}`,
        taskDecider,
        (state) => {
          const policy = policies.get(state.status === 'none' ? '' : state.name) ?? { retry: DEFAULT_RETRY_POLICY, timeoutMs: null };
          return { type: 'StartTask' as const, ...base, retryPolicy: policy.retry, timeoutMs: policy.timeoutMs };
        },
        workerContext(input),
      );
      if (result.state.status === 'none') throw new NotFoundError('task', parsed.taskId);
      const started = result.events[0].data as WorkflowEventData['TaskStarted'];
      return this.taskItem(ref, null, parsed.taskId, result.state.name, result.state.args, started);
    }
    throw new NotFoundError('work item', ref);
  }

  private taskItem(
    ref: string,
    workflowId: string | null,
    taskId: string | null,
    name: string,
    args: Json[],
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
      input: JSON.stringify(args),
      history: null,
      leaseExpiresAt: new Date(started.leaseExpiresAt),
    };
  }

  async report(input: ReportWorkInput): Promise<{ accepted: number; rejected: ReportRejection[] }> {
    const context = workerContext(input);
    const outcomes = await Promise.all([
      ...(input.decisions ?? []).map((d) => this.settle(d.ref, () => this.reportDecision(context, d))),
      ...(input.tasks ?? []).map((t) => this.settle(t.ref, () => this.reportTask(context, t))),
    ]);
    const rejected = outcomes.filter((o): o is ReportRejection => o !== null);
    return { accepted: outcomes.length - rejected.length, rejected };
  }

  private async settle(ref: string, apply: () => Promise<void>): Promise<ReportRejection | null> {
    try {
      await apply();
      return null;
    } catch (error) {
      if (error instanceof BatonError && error.httpStatus === 200) return { ref, code: error.code, message: error.message };
      throw error;
    }
  }

  private async reportDecision(context: CommandContext, report: DecisionReportInput): Promise<void> {
    const parsed = parseRef(report.ref);
    if (parsed?.kind !== 'decision') throw new BadUserInputError('decisions.ref', `not a decision ref: ${report.ref}`);
    const streamId = `workflow-${parsed.workflowId}`;
    if (report.failureCode) {
      await this.runner.run(
        streamId,
        workflowDecider,
        {
          type: 'FailDecision',
          decisionId: report.decisionId,
          code: report.failureCode,
          message: report.failureMessage ?? report.failureCode,
          historyPosition: report.historyPosition ?? null,
          now: this.clock.now(),
        },
        context,
      );
      return;
    }
    const commands = parseCommands(report.commands);
    const ids: Record<number, string> = {};
    for (const c of commands) {
      if (c.type === 'StartChildWorkflow' || c.type === 'DispatchTask') ids[c.seq] = derivedUuid(parsed.workflowId, String(c.seq));
    }
    await this.runner.run(streamId, workflowDecider, { type: 'CompleteDecision', decisionId: report.decisionId, commands, ids }, context);
  }

  private async reportTask(context: CommandContext, report: TaskReportInput): Promise<void> {
    const parsed = parseRef(report.ref);
    const now = this.clock.now();
    let outcome: { kind: 'ok'; result: Json } | { kind: 'error'; error: TaskError };
    if (report.error) {
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
      await this.runner.run(
        `workflow-${parsed.workflowId}`,
        workflowDecider,
        outcome.kind === 'ok'
          ? { type: 'CompleteTask', seq, attemptId: report.attemptId, result: outcome.result }
          : { type: 'FailTask', seq, attemptId: report.attemptId, error: outcome.error, now },
        context,
      );
    } else if (parsed?.kind === 'task') {
      await this.runner.run(
        `task-${parsed.taskId}`,
        taskDecider,
        outcome.kind === 'ok'
          ? { type: 'CompleteTask', attemptId: report.attemptId, result: outcome.result }
          : { type: 'FailTask', attemptId: report.attemptId, error: outcome.error, now },
        context,
      );
    } else {
      throw new BadUserInputError('tasks.ref', `not a task ref: ${report.ref}`);
    }
  }

  async heartbeat(input: HeartbeatInput): Promise<HeartbeatResult[]> {
    const context = workerContext(input);
    return Promise.all(input.attempts.map((a) => this.heartbeatOne(context, a.ref, a.attemptId)));
  }

  private async heartbeatOne(context: CommandContext, ref: string, attemptId: string): Promise<HeartbeatResult> {
    const parsed = parseRef(ref);
    const now = this.clock.now();
    const leaseMs = this.config.leaseMs;
    try {
      if (parsed?.kind === 'workflowTask') {
        const { state } = await this.runner.run(
          `workflow-${parsed.workflowId}`,
          workflowDecider,
          { type: 'HeartbeatTask', seq: parsed.seq, attemptId, now, leaseMs },
          context,
        );
        if (state.status === 'none') return { ref, cancel: true, reason: 'unknown workflow' };
        if (FINAL_STATUSES.has(state.status)) return { ref, cancel: true, reason: `workflow ${state.status}` };
        const task = state.tasks[parsed.seq];
        return task && holdsAttempt(task.attempt, attemptId) ? { ref, cancel: false, reason: null } : { ref, cancel: true, reason: 'attempt no longer current (lease lapsed)' };
      }
      if (parsed?.kind === 'task') {
        const { state } = await this.runner.run(`task-${parsed.taskId}`, taskDecider, { type: 'HeartbeatTask', attemptId, now, leaseMs }, context);
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

function parseJson(field: string, raw: string): Json {
  try {
    return JSON.parse(raw) as Json;
  } catch (error) {
    throw new BadUserInputError(field, `is not valid JSON (${(error as Error).message})`);
  }
}

const COMMAND_TYPES = new Set<string>(DECISION_COMMAND_TYPES);

/** Checks the shape of the commands a worker reports; the decider checks what they mean. */
export function parseCommands(raw: string | null | undefined): DecisionCommand[] {
  const value = parseJson('decisions.commands', raw ?? '[]');
  if (!Array.isArray(value)) throw new BadUserInputError('decisions.commands', 'must be a JSON array');
  return value.map((c, i) => {
    if (typeof c !== 'object' || c === null || Array.isArray(c) || typeof c.type !== 'string' || !COMMAND_TYPES.has(c.type)) {
      throw new BadUserInputError('decisions.commands', `command ${i} has no known type`);
    }
    const needsSeq = c.type !== 'CompleteWorkflow' && c.type !== 'FailWorkflow';
    if (needsSeq && (typeof c.seq !== 'number' || !Number.isInteger(c.seq) || c.seq < 0)) {
      throw new BadUserInputError('decisions.commands', `command ${i} (${c.type}) needs a whole-number seq`);
    }
    if ((c.type === 'ScheduleTask' || c.type === 'StartChildWorkflow' || c.type === 'DispatchTask') && (typeof c.name !== 'string' || !Array.isArray(c.args))) {
      throw new BadUserInputError('decisions.commands', `command ${i} (${c.type}) needs a name and args`);
    }
    if (c.type === 'StartTimer' && (typeof c.fireAt !== 'string' || Number.isNaN(Date.parse(c.fireAt)))) {
      throw new BadUserInputError('decisions.commands', `command ${i} (StartTimer) needs an ISO fireAt`);
    }
    return c as unknown as DecisionCommand;
  });
}
