import { createHash } from 'node:crypto';
import type { TaskDefinition, WorkflowDefinition } from './definitions.js';
import { Duration, toMs } from './duration.js';
import { NonDeterminismError, TaskFailedError } from './errors.js';

/** Picks workflows: by id, by name, or by name and tag. */
export type Selector = { id: string } | { name: string; tag?: string };

const CHILD_OPTIONS = Symbol('baton.childOptions');

/** Options for a child workflow, passed as the last argument of `ctx.workflow` / `ctx.dispatch`. */
export interface ChildOptions {
  readonly [CHILD_OPTIONS]: true;
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

/** Actions on the workflows a selector picks, from inside a workflow (fire and forget). */
export interface SelectedWorkflows {
  send(event: string, ...data: unknown[]): void;
  pause(): void;
  resume(): void;
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
  /** Starts a task or a child workflow without waiting for it. */
  dispatch(target: TaskDefinition | WorkflowDefinition | string, ...args: unknown[]): void;
  /** Runs a child workflow (optionally `tagged(...)` as the last argument) and resolves with its result. */
  workflow<Result = unknown>(workflow: WorkflowDefinition<any[], Result> | string, ...args: unknown[]): Promise<Result>;
  /** Waits durably: survives restarts of workers and of the service. */
  sleep(duration: Duration): Promise<void>;
  /** Waits until a moment, durably. */
  sleepUntil(date: Date | number | string): Promise<void>;
  /**
   * Waits for the next event of that name sent to this workflow (one that arrived earlier and
   * was not yet taken counts). Resolves `[name, ...data]`, or `null` when `timeout` passes first.
   */
  waitForEvent(name: string, options?: { timeout?: Duration }): Promise<[string, ...unknown[]] | null>;
  /** Calls `handler(...data)` for every event of that name this workflow receives. */
  onEvent(name: string, handler: (...data: any[]) => void): void;
  /** Acts on other workflows of this app and environment. */
  select(selector: Selector): SelectedWorkflows;
  /** The time of the current decision (deterministic: use it instead of `Date.now()`). */
  now(): Date;
  /** A deterministic random number in [0, 1). */
  random(): number;
  /** A deterministic UUID (v4 format). */
  uuid(): string;
  /** Logs, muted while replaying. */
  readonly log: Pick<Console, 'info' | 'warn' | 'error'>;
}

/** One event of a workflow's history, as the server sends it with a decision. */
export interface HistoryEvent {
  revision: number;
  type: string;
  data: any;
}

type Command = { type: string; seq?: number; name?: string; [key: string]: unknown };

interface Pending {
  resolve: (value: any) => void;
  reject: (error: Error) => void;
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
  private readonly handlers = new Map<string, Array<(...data: any[]) => void>>();
  private unclaimed: Array<{ name: string; data: unknown[] }> = [];
  private time = 0;
  private rng: () => number;
  private replaying = true;
  private finished = false;

  constructor(
    private readonly workflow: WorkflowDefinition,
    private readonly workflowId: string,
    private readonly input: unknown[],
    private readonly history: HistoryEvent[],
  ) {
    this.rng = mulberry32(createHash('sha256').update(workflowId).digest().readUInt32LE(0));
  }

  /** Replays the history and returns the new commands of the current (last) decision. */
  async execute(): Promise<Command[]> {
    const recorded = new Map<string, { commands: Command[]; revision: number }>();
    for (const e of this.history) if (e.type === 'DecisionCompleted') recorded.set(e.data.decisionId, { commands: e.data.commands, revision: e.revision });
    // Outcomes recorded between two decisions are seen by the code at the next one, with that
    // decision's clock: the code that runs on them runs then.
    let unseen: HistoryEvent[] = [];
    let started = false;
    const last = this.history.length - 1;
    for (let i = 0; i <= last; i++) {
      const event = this.history[i];
      if (event.type !== 'DecisionStarted') {
        if (OUTCOMES.has(event.type)) unseen.push(event);
        continue;
      }
      this.time = Date.parse(event.data.startedAt);
      this.replaying = i < last;
      if (!started) {
        started = true;
        this.start();
      }
      await drain();
      for (const outcome of unseen) {
        this.apply(outcome);
        await drain();
      }
      unseen = [];
      const done = recorded.get(event.data.decisionId);
      if (done) {
        this.check(done.commands, done.revision);
        this.buffer = [];
      }
    }
    return this.buffer;
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
        return this.deliver(event.data.name, event.data.data ?? []);
    }
  }

  private start(): void {
    const ctx = this.context();
    Promise.resolve()
      .then(() => this.workflow.handler(ctx, ...this.input))
      .then(
        (result) => this.finish({ type: 'CompleteWorkflow', result: result === undefined ? null : result }),
        (error: unknown) => {
          const e = error instanceof Error ? error : new Error(String(error));
          this.finish({ type: 'FailWorkflow', error: { message: e.message, name: e.name } });
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
    for (let i = 0; i < n; i++) {
      const a = produced[i];
      const b = recorded[i];
      if (!a || !b || a.type !== b.type || a.seq !== b.seq || (a.name ?? null) !== (b.name ?? null)) {
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

  private deliver(name: string, data: unknown[]): void {
    const handlers = this.handlers.get(name) ?? [];
    for (const handler of handlers) handler(...data);
    const index = this.waiters.findIndex((w) => w.name === name);
    if (index >= 0) {
      const [waiter] = this.waiters.splice(index, 1);
      if (waiter.timed) {
        this.timers.delete(waiter.seq);
        this.command({ type: 'CancelTimer', seq: waiter.seq });
      }
      waiter.resolve([name, ...data]);
    } else if (handlers.length === 0) {
      this.unclaimed.push({ name, data });
    }
  }

  private await<T>(seq: number): Promise<T> {
    return new Promise<T>((resolve, reject) => this.awaiting.set(seq, { resolve, reject }));
  }

  private context(): WorkflowContext {
    const self = this;
    const childArgs = (args: unknown[]): { args: unknown[]; tag: string | null } => {
      const last = args[args.length - 1] as ChildOptions | undefined;
      if (last && typeof last === 'object' && CHILD_OPTIONS in last) return { args: args.slice(0, -1), tag: last.tag ?? null };
      return { args, tag: null };
    };
    const nameOf = (target: { name: string } | string) => (typeof target === 'string' ? target : target.name);
    const log = (level: 'info' | 'warn' | 'error') => (...args: unknown[]) => {
      if (!self.replaying) console[level](`[${self.workflow.name} ${self.workflowId}]`, ...args);
    };
    const control = (selector: Selector, action: string, event?: { name: string; data: unknown[] }) =>
      self.command({ type: 'ControlWorkflows', seq: self.seq++, selector, action, ...(event ? { event } : {}) });
    return {
      workflowId: this.workflowId,
      get isReplaying() {
        return self.replaying;
      },
      run(task, ...args) {
        const seq = self.seq++;
        self.command({ type: 'ScheduleTask', seq, name: nameOf(task), args });
        return self.await(seq);
      },
      dispatch(target, ...args) {
        const seq = self.seq++;
        if (typeof target !== 'string' && target.kind === 'workflow') {
          const child = childArgs(args);
          self.command({ type: 'StartChildWorkflow', seq, name: target.name, args: child.args, tag: child.tag, wait: false });
        } else {
          self.command({ type: 'DispatchTask', seq, name: nameOf(target), args });
        }
      },
      workflow(workflow, ...args) {
        const seq = self.seq++;
        const child = childArgs(args);
        self.command({ type: 'StartChildWorkflow', seq, name: nameOf(workflow), args: child.args, tag: child.tag, wait: true });
        return self.await(seq);
      },
      sleep(duration) {
        return this.sleepUntil(self.time + toMs(duration));
      },
      sleepUntil(date) {
        const seq = self.seq++;
        const at = new Date(date).getTime();
        if (Number.isNaN(at)) throw new RangeError(`invalid date: ${String(date)}`);
        self.command({ type: 'StartTimer', seq, fireAt: new Date(at).toISOString() });
        return new Promise<void>((resolve) => self.timers.set(seq, resolve));
      },
      waitForEvent(name, options = {}) {
        const seq = self.seq++;
        const index = self.unclaimed.findIndex((e) => e.name === name);
        if (index >= 0) {
          const [event] = self.unclaimed.splice(index, 1);
          return Promise.resolve([name, ...event.data] as [string, ...unknown[]]);
        }
        return new Promise((resolve) => {
          const timed = options.timeout !== undefined;
          self.waiters.push({ seq, name, resolve, timed });
          if (timed) {
            self.command({ type: 'StartTimer', seq, fireAt: new Date(self.time + toMs(options.timeout!)).toISOString() });
            self.timers.set(seq, () => {
              self.waiters = self.waiters.filter((w) => w.seq !== seq);
              resolve(null);
            });
          }
        });
      },
      onEvent(name, handler) {
        self.handlers.set(name, [...(self.handlers.get(name) ?? []), handler]);
        const earlier = self.unclaimed.filter((e) => e.name === name);
        self.unclaimed = self.unclaimed.filter((e) => e.name !== name);
        for (const event of earlier) handler(...event.data);
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
      random: () => self.rng(),
      uuid() {
        const hex = Array.from({ length: 16 }, () => Math.floor(self.rng() * 256));
        hex[6] = (hex[6] & 0x0f) | 0x40;
        hex[8] = (hex[8] & 0x3f) | 0x80;
        const h = hex.map((b) => b.toString(16).padStart(2, '0')).join('');
        return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
      },
      log: { info: log('info'), warn: log('warn'), error: log('error') },
    };
  }
}

const OUTCOMES = new Set(['TaskCompleted', 'TaskFailed', 'ChildWorkflowCompleted', 'ChildWorkflowFailed', 'TimerFired', 'WorkflowEventReceived']);

/** Lets every promise continuation that is ready run (all microtasks) before going on. */
const drain = () => new Promise<void>((resolve) => setImmediate(resolve));

function describe(command: Command | undefined): string {
  if (!command) return 'nothing';
  return `${command.type}${command.seq !== undefined ? ` #${command.seq}` : ''}${command.name ? ` (${command.name})` : ''}`;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
