import { describe, expect, it, jest } from '@jest/globals';
import { fold } from '../shared/decider.js';
import { RetryPolicy, TaskError } from '../tasks/domain/task-attempts.js';
import { WorkflowCommand, WorkflowEvent, workflowDecider } from '../workflows/domain/workflow.decider.js';
import { replayableHistory } from '../protocol/workflow-retry.js';
import { WorkflowDefinition, defineTask, defineWorkflow } from './definitions.js';
import { NonDeterminismError, NonRetryableError, RetryableError, TaskFailedError } from './errors.js';
import { HistoryEvent, MAX_CARRIED_EVENT_BYTES, StepAttempt, WorkflowReplay, tagged } from './workflow-context.js';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const WF = '0190aaaa-0000-7000-8000-00000000000a';
const POLICY: RetryPolicy = { maxAttempts: 1, initialDelayMs: 100, backoffFactor: 2, maxDelayMs: 1000 };

type Command = Record<string, unknown>;

/**
 * A workflow's stream driven through the real workflow decider, with WorkflowReplay playing the
 * worker: `decide()` claims a decision at the simulator's time, replays the code over the
 * history and completes the decision with the commands it returns.
 */
class Simulation {
  readonly events: WorkflowEvent[] = [];
  now = T0;
  private decisions = 0;
  private attempts = 0;

  constructor(
    readonly workflow: WorkflowDefinition,
    readonly input: unknown[] = [],
    readonly workflowId = WF,
  ) {
    this.apply({ type: 'DispatchWorkflow', workflowId, appId: 'demo', environment: 'test', name: workflow.name, tag: null, input: input as never[], now: T0 });
  }

  apply(command: WorkflowCommand): WorkflowEvent[] {
    const events = workflowDecider.decide(command, fold(workflowDecider, this.events));
    this.events.push(...events);
    return events;
  }

  history(): HistoryEvent[] {
    return this.events.map((e, revision) => ({ revision, type: e.type, data: JSON.parse(JSON.stringify(e.data)) }));
  }

  replay(code: WorkflowDefinition = this.workflow): Promise<Command[]> {
    return new WorkflowReplay(code, this.workflowId, this.input, this.history()).execute();
  }

  /** One decision at `this.now` (advanced by `advanceMs` first); returns the commands it made. */
  async decide(advanceMs = 0, code: WorkflowDefinition = this.workflow): Promise<Command[]> {
    this.now += advanceMs;
    const decisionId = `d${++this.decisions}`;
    this.apply({ type: 'StartDecision', decisionId, workerId: 'w', workflows: [code.name], now: this.now, leaseMs: 10_000 });
    const commands = await this.replay(code);
    const ids: Record<number, string> = {};
    for (const c of commands) if (c.type === 'StartChildWorkflow' || c.type === 'DispatchTask') ids[c.seq as number] = `id-${c.seq}`;
    this.apply({ type: 'CompleteDecision', decisionId, commands: JSON.parse(JSON.stringify(commands)), ids });
    return commands;
  }

  private startTask(seq: number): string {
    const attemptId = `a${++this.attempts}`;
    this.apply({ type: 'StartTask', seq, attemptId, workerId: 'w', now: this.now, leaseMs: 10_000, retryPolicy: POLICY, timeoutMs: null });
    return attemptId;
  }

  completeTask(seq: number, result: unknown): void {
    this.apply({ type: 'CompleteTask', seq, attemptId: this.startTask(seq), result: result as never });
  }

  failTask(seq: number, error: TaskError): void {
    this.apply({ type: 'FailTask', seq, attemptId: this.startTask(seq), error, now: this.now });
  }

  send(name: string, ...data: unknown[]): void {
    this.apply({ type: 'DeliverEvent', name, data: data as never[] });
  }

  tick(toMs: number): WorkflowEvent[] {
    this.now = T0 + toMs;
    return this.apply({ type: 'Tick', now: this.now });
  }
}

const hello = defineTask('hello', (_ctx, name: string) => `hello ${name}`);
const shout = defineTask('shout', (_ctx, text: string) => text.toUpperCase());
const keep = defineTask('keep', (_ctx, value: unknown) => value);

const greet = defineWorkflow('Greet', async (ctx, name: string) => {
  const greeting = await ctx.run(hello, name);
  return ctx.run(shout, greeting);
});

describe('WorkflowReplay', () => {
  it('turns the first new call into a command of the first decision', async () => {
    const sim = new Simulation(greet, ['ada']);
    expect(await sim.decide()).toEqual([{ type: 'ScheduleTask', seq: 0, name: 'hello', args: ['ada'] }]);
    expect(sim.events.map((e) => e.type)).toEqual(['WorkflowDispatched', 'DecisionStarted', 'DecisionCompleted', 'TaskScheduled']);
  });

  it('returns recorded results on replay and moves on to the next call, then completes', async () => {
    const sim = new Simulation(greet, ['ada']);
    await sim.decide();
    sim.completeTask(0, 'hello ada');
    expect(await sim.decide(10)).toEqual([{ type: 'ScheduleTask', seq: 1, name: 'shout', args: ['hello ada'] }]);
    sim.completeTask(1, 'HELLO ADA');
    expect(await sim.decide(10)).toEqual([{ type: 'CompleteWorkflow', result: 'HELLO ADA' }]);
    expect(sim.events.at(-1)).toEqual({ type: 'WorkflowCompleted', data: { result: 'HELLO ADA' } });
  });

  it('replays the same history to the same commands every time (the task body never runs in replay)', async () => {
    const body = jest.fn((_ctx: unknown, name: string) => name);
    const spied = defineWorkflow('Spied', async (ctx) => ctx.run(defineTask('spy', body), 'x'));
    const sim = new Simulation(spied);
    await sim.decide();
    sim.completeTask(0, 'x');
    sim.apply({ type: 'StartDecision', decisionId: 'dx', workerId: 'w', workflows: ['Spied'], now: T0 + 5, leaseMs: 1000 });
    const first = await sim.replay();
    const second = await sim.replay();
    expect(first).toEqual([{ type: 'CompleteWorkflow', result: 'x' }]);
    expect(second).toEqual(first);
    expect(body).not.toHaveBeenCalled();
  });

  it('runs tasks in parallel with Promise.all and resumes only when all are done', async () => {
    const fanOut = defineWorkflow('FanOut', async (ctx) => Promise.all([ctx.run(hello, 'a'), ctx.run(hello, 'b'), ctx.run(shout, 'c')]));
    const sim = new Simulation(fanOut);
    expect(await sim.decide()).toEqual([
      { type: 'ScheduleTask', seq: 0, name: 'hello', args: ['a'] },
      { type: 'ScheduleTask', seq: 1, name: 'hello', args: ['b'] },
      { type: 'ScheduleTask', seq: 2, name: 'shout', args: ['c'] },
    ]);
    sim.completeTask(2, 'C');
    sim.completeTask(0, 'hello a');
    expect(await sim.decide()).toEqual([]);
    sim.completeTask(1, 'hello b');
    expect(await sim.decide()).toEqual([{ type: 'CompleteWorkflow', result: ['hello a', 'hello b', 'C'] }]);
  });

  it('rejects ctx.run with a catchable TaskFailedError when the task failed for good', async () => {
    const careful = defineWorkflow('Careful', async (ctx) => {
      try {
        await ctx.run(hello, 'x');
        return 'no error';
      } catch (error) {
        return { caught: (error as Error).name, message: (error as Error).message, isTaskFailed: error instanceof TaskFailedError };
      }
    });
    const sim = new Simulation(careful);
    await sim.decide();
    sim.failTask(0, { message: 'smtp down', name: 'Error' });
    expect(await sim.decide()).toEqual([{ type: 'CompleteWorkflow', result: { caught: 'TaskFailedError', message: 'smtp down', isTaskFailed: true } }]);
  });

  it('fails the workflow with the error its code throws', async () => {
    const sim = new Simulation(greet, ['ada']);
    await sim.decide();
    sim.failTask(0, { message: 'smtp down' });
    expect(await sim.decide()).toEqual([{ type: 'FailWorkflow', error: { message: 'smtp down', name: 'TaskFailedError' } }]);

    const thrower = defineWorkflow('Thrower', async () => {
      throw new TypeError('bad input');
    });
    expect(await new Simulation(thrower).decide()).toEqual([{ type: 'FailWorkflow', error: { message: 'bad input', name: 'TypeError' } }]);
  });

  it('keeps the message (and name) of a plain object thrown by workflow code or a step, and writes anything else with String()', async () => {
    const objectThrower = defineWorkflow('ObjectThrower', async () => {
      throw { message: 'quota exceeded', name: 'QuotaError', code: 429 };
    });
    expect(await new Simulation(objectThrower).decide()).toEqual([{ type: 'FailWorkflow', error: { message: 'quota exceeded', name: 'QuotaError' } }]);
    const stringThrower = defineWorkflow('StringThrower', async () => {
      throw 'plain text';
    });
    expect(await new Simulation(stringThrower).decide()).toEqual([{ type: 'FailWorkflow', error: { message: 'plain text', name: 'Error' } }]);
    const stepThrower = defineWorkflow('StepThrower', async (ctx) =>
      ctx.step('call api', () => {
        throw { message: 'rate limited' };
      }).catch((e: Error) => e.message),
    );
    expect(await new Simulation(stepThrower).decide()).toEqual([
      { type: 'RecordStep', seq: 0, name: 'call api', error: { message: 'rate limited' } },
      { type: 'CompleteWorkflow', result: 'rate limited' },
    ]);
  });

  it('sleeps with a durable timer from the time of the decision', async () => {
    const sleeper = defineWorkflow('Sleeper', async (ctx) => {
      await ctx.sleep('2s');
      return 'awake';
    });
    const sim = new Simulation(sleeper);
    expect(await sim.decide(5)).toEqual([{ type: 'StartTimer', seq: 0, fireAt: at(2005) }]);
    expect(sim.tick(2004)).toEqual([]);
    expect(sim.tick(2005)).toEqual([{ type: 'TimerFired', data: { seq: 0 } }]);
    expect(await sim.decide()).toEqual([{ type: 'CompleteWorkflow', result: 'awake' }]);
  });

  describe('waitForEvent', () => {
    const approval = defineWorkflow('Approval', async (ctx) => ctx.waitForEvent('approved', { timeout: '1h' }));

    it('resolves [name, ...data] when the event comes, and cancels its timeout timer', async () => {
      const sim = new Simulation(approval);
      expect(await sim.decide()).toEqual([{ type: 'StartTimer', seq: 0, fireAt: at(3_600_000) }]);
      sim.send('other', 1);
      expect(await sim.decide()).toEqual([]);
      sim.send('approved', 'bob', { level: 2 });
      expect(await sim.decide()).toEqual([
        { type: 'CancelTimer', seq: 0 },
        { type: 'CompleteWorkflow', result: ['approved', 'bob', { level: 2 }] },
      ]);
      expect(sim.events.map((e) => e.type)).toContain('TimerCanceled');
    });

    it('resolves null when the timeout passes first', async () => {
      const sim = new Simulation(approval);
      await sim.decide();
      sim.tick(3_600_000);
      expect(await sim.decide()).toEqual([{ type: 'CompleteWorkflow', result: null }]);
    });

    it('takes an event that arrived before the call (buffered), without a timer', async () => {
      const later = defineWorkflow('Later', async (ctx) => {
        await ctx.run(hello, 'x');
        return ctx.waitForEvent('go', { timeout: '1m' });
      });
      const sim = new Simulation(later);
      await sim.decide();
      sim.send('go', 42);
      expect(await sim.decide()).toEqual([]);
      sim.completeTask(0, 'hello x');
      expect(await sim.decide()).toEqual([{ type: 'CompleteWorkflow', result: ['go', 42] }]);
    });

    it('continueAsNew carries the events never taken, with their causes, the most recent within a bound', async () => {
      const loop = defineWorkflow('Loop', async (ctx) => {
        await ctx.waitForEvent('go');
        return ctx.continueAsNew(1);
      });
      const sim = new Simulation(loop);
      await sim.decide();
      sim.apply({ type: 'DeliverEvent', name: 'noise', data: [1], causeId: 'cause-1' });
      sim.send('noise', 2);
      sim.send('go');
      const [command] = await sim.decide();
      expect(command).toEqual({ type: 'ContinueAsNew', seq: 1, args: [1], at: at(0), events: [{ name: 'noise', data: [1], causeId: 'cause-1' }, { name: 'noise', data: [2] }] });
      // 300 untaken events of 1 KB: only the most recent that fit MAX_CARRIED_EVENT_BYTES go.
      const many = new Simulation(loop);
      await many.decide();
      for (let i = 0; i < 300; i++) many.send('noise', String(i).padEnd(1000, '.'));
      many.send('go');
      const warn = jest.spyOn(console, 'warn').mockImplementation(() => {});
      const [big] = (await many.decide()) as Array<{ events: Array<{ data: string[] }> }>;
      const warned = warn.mock.calls.map((args) => args.join(' '));
      warn.mockRestore();
      const carried = big.events.map((e) => Number.parseInt(e.data[0], 10));
      expect(big.events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e)), 0)).toBeLessThanOrEqual(MAX_CARRIED_EVENT_BYTES);
      expect(carried.length).toBeGreaterThan(200);
      expect(carried).toEqual(Array.from({ length: carried.length }, (_, i) => 300 - carried.length + i));
      expect(warned).toEqual([expect.stringContaining(`${300 - carried.length} of 300 events received and never taken are not carried`)]);
    });

    it('a bad timeout throws in the code and leaves no wait behind to take the next event', async () => {
      const careless = defineWorkflow('Careless', async (ctx) => {
        let refused = '';
        try {
          await ctx.waitForEvent('go', { timeout: 'soon' as never });
        } catch (error) {
          refused = (error as Error).name;
        }
        return { refused, got: await ctx.waitForEvent('go') };
      });
      const sim = new Simulation(careless);
      expect(await sim.decide()).toEqual([]);
      sim.send('go', 1);
      expect(await sim.decide()).toEqual([{ type: 'CompleteWorkflow', result: { refused: expect.any(String), got: ['go', 1] } }]);
    });

    it('without a timeout waits with no command at all', async () => {
      const forever = defineWorkflow('Forever', async (ctx) => ctx.waitForEvent('go'));
      const sim = new Simulation(forever);
      expect(await sim.decide()).toEqual([]);
      sim.send('go');
      expect(await sim.decide()).toEqual([{ type: 'CompleteWorkflow', result: ['go'] }]);
    });

    it('hands successive events of one name to successive waits, in order', async () => {
      const collector = defineWorkflow('Collector', async (ctx) => {
        const got: unknown[] = [];
        for (let i = 0; i < 3; i++) got.push((await ctx.waitForEvent('item'))![1]);
        return got;
      });
      const sim = new Simulation(collector);
      await sim.decide();
      sim.send('item', 'a');
      sim.send('item', 'b');
      sim.send('item', 'c');
      expect(await sim.decide()).toEqual([{ type: 'CompleteWorkflow', result: ['a', 'b', 'c'] }]);
    });
  });

  it('calls onEvent handlers for every event of that name, earlier ones included', async () => {
    const listener = defineWorkflow('Listener', async (ctx) => {
      await ctx.run(hello, 'x');
      const seen: unknown[] = [];
      ctx.onEvent('ping', (n) => seen.push(n));
      await ctx.waitForEvent('stop');
      return seen;
    });
    const sim = new Simulation(listener);
    await sim.decide();
    sim.send('ping', 1);
    sim.completeTask(0, 'hello x');
    expect(await sim.decide()).toEqual([]);
    sim.send('ping', 2);
    sim.send('ping', 3);
    expect(await sim.decide()).toEqual([]);
    sim.send('stop');
    expect(await sim.decide()).toEqual([{ type: 'CompleteWorkflow', result: [1, 2, 3] }]);
  });

  it('starts children (tagged), dispatches tasks and acts on selected workflows', async () => {
    const child = defineWorkflow('Child', async () => 'child result');
    const parent = defineWorkflow('Parent', async (ctx) => {
      ctx.dispatch(hello, 'fire-and-forget');
      ctx.dispatch(child, 'no-wait', tagged('loose'));
      ctx.select({ name: 'Other', tag: 't' }).send('hi', 1);
      ctx.select({ id: 'x' }).terminate();
      return ctx.workflow(child, 'arg', tagged('order:1'));
    });
    const sim = new Simulation(parent);
    expect(await sim.decide()).toEqual([
      { type: 'DispatchTask', seq: 0, name: 'hello', args: ['fire-and-forget'] },
      { type: 'StartChildWorkflow', seq: 1, name: 'Child', args: ['no-wait'], tag: 'loose', wait: false },
      { type: 'ControlWorkflows', seq: 2, selector: { name: 'Other', tag: 't' }, action: 'send', event: { name: 'hi', data: [1] } },
      { type: 'ControlWorkflows', seq: 3, selector: { id: 'x' }, action: 'terminate' },
      { type: 'StartChildWorkflow', seq: 4, name: 'Child', args: ['arg'], tag: 'order:1', wait: true },
    ]);
    sim.apply({ type: 'ResolveChild', seq: 4, childId: 'id-4', outcome: { ok: true, result: 'child result' } });
    expect(await sim.decide()).toEqual([{ type: 'CompleteWorkflow', result: 'child result' }]);
  });

  describe('determinism', () => {
    const sample = (ctx: { now(): Date; random(): number; uuid(): string }) => ({ now: ctx.now().toISOString(), random: ctx.random(), uuid: ctx.uuid() });
    const clocky = defineWorkflow('Clocky', async (ctx) => {
      const first = sample(ctx);
      await ctx.run(keep, first);
      return { first, second: sample(ctx) };
    });

    it('gives the same now/random/uuid on every replay', async () => {
      const sim = new Simulation(clocky);
      const [scheduled] = await sim.decide(5);
      const first = (scheduled.args as unknown[])[0] as ReturnType<typeof sample>;
      expect(first.now).toBe(at(5));
      expect(first.random).toBeGreaterThanOrEqual(0);
      expect(first.random).toBeLessThan(1);
      expect(first.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

      sim.completeTask(0, 'ok');
      sim.apply({ type: 'StartDecision', decisionId: 'd-final', workerId: 'w', workflows: ['Clocky'], now: T0 + 1000, leaseMs: 1000 });
      const [a] = await sim.replay();
      const [b] = await sim.replay();
      expect(a).toEqual(b);
      const result = a.result as { first: ReturnType<typeof sample>; second: ReturnType<typeof sample> };
      expect(result.first).toEqual(first);
      expect(result.second.uuid).not.toBe(first.uuid);
      expect(result.second.random).not.toBe(first.random);
    });

    it('seeds random and uuid per workflow', async () => {
      const one = await new Simulation(clocky, [], '0190aaaa-0000-7000-8000-0000000000b1').decide();
      const two = await new Simulation(clocky, [], '0190aaaa-0000-7000-8000-0000000000b2').decide();
      expect((one[0].args as any[])[0].uuid).not.toBe((two[0].args as any[])[0].uuid);
    });

    // Regression (found by this spec, fixed in 161f239): code that resumed after a task result
    // ran with the clock of the decision that scheduled the task, not of the one that runs it.
    it('now() after an await is the time of the decision that runs that code', async () => {
      const sim = new Simulation(clocky);
      await sim.decide(5);
      sim.completeTask(0, 'ok');
      const [completed] = await sim.decide(60_000);
      expect((completed.result as any).second.now).toBe(at(60_005));
    });

    // Regression (same cause): a `sleep('1h')` after a task that ran 30 minutes fired 30 minutes
    // after the task finished.
    it('sleep() after an await counts from the decision that runs it', async () => {
      const slow = defineWorkflow('SlowThenSleep', async (ctx) => {
        await ctx.run(hello, 'x');
        await ctx.sleep('1h');
      });
      const sim = new Simulation(slow);
      await sim.decide(0);
      sim.completeTask(0, 'done');
      expect(await sim.decide(1_800_000)).toEqual([{ type: 'StartTimer', seq: 1, fireAt: at(1_800_000 + 3_600_000) }]);
    });

    // Regression (same cause): code running for the first time after an await saw
    // isReplaying === true, and its ctx.log output was muted.
    it('is not "replaying" (and logs) in code that runs for the first time after an await', async () => {
      const seen: boolean[] = [];
      const logger = defineWorkflow('Logger', async (ctx) => {
        await ctx.run(hello, 'x');
        seen.push(ctx.isReplaying);
        ctx.log.info('after the task');
      });
      const sim = new Simulation(logger);
      await sim.decide();
      sim.completeTask(0, 'done');
      const info = jest.spyOn(console, 'info').mockImplementation(() => undefined);
      try {
        await sim.decide();
        expect(seen).toEqual([false]);
        expect(info).toHaveBeenCalledTimes(1);
      } finally {
        info.mockRestore();
      }
    });

    it('mutes logs while replaying code that already ran', async () => {
      const logger = defineWorkflow('Logger2', async (ctx) => {
        ctx.log.info('first');
        await ctx.sleep(10);
      });
      const sim = new Simulation(logger);
      const info = jest.spyOn(console, 'info').mockImplementation(() => undefined);
      try {
        await sim.decide();
        expect(info).toHaveBeenCalledTimes(1);
        sim.tick(10);
        await sim.decide();
        expect(info).toHaveBeenCalledTimes(1);
      } finally {
        info.mockRestore();
      }
    });
  });

  describe('changed code', () => {
    const original = defineWorkflow('Shape', async (ctx) => {
      await ctx.run(hello, 'a');
      await ctx.waitForEvent('continue');
      return ctx.run(shout, 'b');
    });

    async function recorded(): Promise<Simulation> {
      const sim = new Simulation(original);
      await sim.decide(); // revision 1: DecisionStarted, 2: DecisionCompleted [ScheduleTask #0 hello]
      sim.completeTask(0, 'hello a');
      await sim.decide(); // waits for 'continue'
      sim.send('continue');
      sim.apply({ type: 'StartDecision', decisionId: 'd-now', workerId: 'w', workflows: ['Shape'], now: T0 + 100, leaseMs: 1000 });
      return sim;
    }

    it('replays fine when unchanged', async () => {
      expect(await (await recorded()).replay()).toEqual([{ type: 'ScheduleTask', seq: 2, name: 'shout', args: ['b'] }]);
    });

    it('is a NonDeterminismError naming the revision when a call differs from the history', async () => {
      const changed = defineWorkflow('Shape', async (ctx) => {
        await ctx.run(shout, 'a');
        await ctx.waitForEvent('continue');
        return 'x';
      });
      const sim = await recorded();
      const error = await sim.replay(changed).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(NonDeterminismError);
      const nd = error as NonDeterminismError;
      expect(nd.code).toBe('NON_DETERMINISTIC');
      const revision = sim.history().find((e) => e.type === 'DecisionCompleted')!.revision;
      expect(nd.historyPosition).toBe(revision);
      expect(nd.message).toContain(`revision ${revision}`);
      expect(nd.message).toContain('ScheduleTask #0 (shout)');
      expect(nd.message).toContain('ScheduleTask #0 (hello)');
    });

    it('is a NonDeterminismError when the code makes a call the history does not have, or skips one', async () => {
      const extra = defineWorkflow('Shape', async (ctx) => {
        await Promise.all([ctx.run(hello, 'a'), ctx.run(hello, 'extra')]);
        await ctx.waitForEvent('continue');
      });
      await expect((await recorded()).replay(extra)).rejects.toBeInstanceOf(NonDeterminismError);
      const skipped = defineWorkflow('Shape', async (ctx) => {
        await ctx.waitForEvent('continue');
        return 'done';
      });
      await expect((await recorded()).replay(skipped)).rejects.toBeInstanceOf(NonDeterminismError);
    });

    it('accepts changes past the point the history has reached', async () => {
      const extended = defineWorkflow('Shape', async (ctx) => {
        await ctx.run(hello, 'a');
        await ctx.waitForEvent('continue');
        return ctx.run(hello, 'a new ending');
      });
      expect(await (await recorded()).replay(extended)).toEqual([{ type: 'ScheduleTask', seq: 2, name: 'hello', args: ['a new ending'] }]);
    });
  });
});

/** The same simulation, but one replay kept between decisions and fed only the new events (sticky execution). */
class StickySimulation extends Simulation {
  private held: WorkflowReplay | undefined;

  override replay(code: WorkflowDefinition = this.workflow): Promise<Command[]> {
    this.held ??= new WorkflowReplay(code, this.workflowId, this.input);
    const history = this.history();
    return this.held.feed(history.slice(this.held.nextRevision));
  }
}

describe('sticky execution', () => {
  const busy = defineWorkflow('Busy', async (ctx, n: number) => {
    const seen: unknown[] = [];
    ctx.onEvent('*', (name: string, ...data: unknown[]) => {
      seen.push([name, ...data]);
    });
    const first = await Promise.all([ctx.run(keep, 1), ctx.run(keep, 2)]);
    await ctx.sleep(100);
    let sum = first.reduce((a: number, b) => a + (b as number), 0);
    for (let i = 0; i < n; i++) sum += (await ctx.run(keep, i)) as number;
    return { sum, seen, id: ctx.uuid(), r: Math.floor(ctx.random() * 1e9) };
  });

  async function drive(sim: Simulation): Promise<Command[][]> {
    const decisions: Command[][] = [];
    decisions.push(await sim.decide());
    sim.completeTask(0, 1);
    sim.send('ping', 1);
    decisions.push(await sim.decide(5));
    sim.completeTask(1, 2);
    decisions.push(await sim.decide(5));
    sim.tick(200);
    decisions.push(await sim.decide(0));
    for (let i = 0; i < 3; i++) {
      const seq = 3 + i;
      sim.completeTask(seq, i * 10);
      sim.send('pong', i);
      decisions.push(await sim.decide(1));
    }
    return decisions;
  }

  it('a replay fed only what followed each decision makes exactly the commands a full replay makes', async () => {
    const full = await drive(new Simulation(busy, [3]));
    const sticky = new StickySimulation(busy, [3]);
    expect(await drive(sticky)).toEqual(full);
    expect(full.at(-1)![0]).toMatchObject({ type: 'CompleteWorkflow' });
    // And a full replay of the sticky run's history agrees with its recorded decisions.
    await expect(new WorkflowReplay(busy, WF, [3], sticky.history()).execute()).resolves.toEqual([]);
  });

  it('catches non-determinism at the next recorded decision, fed incrementally too', async () => {
    const sim = new StickySimulation(greet, ['ada']);
    await sim.decide();
    sim.completeTask(0, 'hello ada');
    await sim.decide(10);
    const changed = defineWorkflow('Greet', async (ctx, name: string) => ctx.run(keep, name));
    await expect(new WorkflowReplay(changed, WF, ['ada'], sim.history()).execute()).rejects.toBeInstanceOf(NonDeterminismError);
  });
});

describe('ctx.step (inline steps recorded with the decision)', () => {
  /** A step body that returns how often it ran: a second run would show in the result. */
  const counter = () => {
    let runs = 0;
    return jest.fn(async () => ++runs);
  };

  it('runs a workflow of steps in one decision and records each outcome once, in its own event', async () => {
    const a = counter();
    const b = counter();
    const twoSteps = defineWorkflow('TwoSteps', async (ctx) => [await ctx.step('a', a), await ctx.step('b', b)]);
    const sim = new Simulation(twoSteps);
    expect(await sim.decide()).toEqual([
      { type: 'RecordStep', seq: 0, name: 'a', result: 1 },
      { type: 'RecordStep', seq: 1, name: 'b', result: 1 },
      { type: 'CompleteWorkflow', result: [1, 1] },
    ]);
    expect(sim.events.slice(2)).toEqual([
      // The decision keeps what replay checks; the outcome is in the step's event only.
      { type: 'DecisionCompleted', data: { decisionId: 'd1', commands: [{ type: 'RecordStep', seq: 0, name: 'a' }, { type: 'RecordStep', seq: 1, name: 'b' }, { type: 'CompleteWorkflow', result: [1, 1] }] } },
      { type: 'StepCompleted', data: { seq: 0, name: 'a', result: 1 } },
      { type: 'StepCompleted', data: { seq: 1, name: 'b', result: 1 } },
      { type: 'WorkflowCompleted', data: { result: [1, 1] } },
    ]);
    expect(a).toHaveBeenCalledTimes(1);
    expect(b).toHaveBeenCalledTimes(1);
  });

  it('hands back the recorded outcome on replay without running the step again, full or sticky', async () => {
    const a = counter();
    const waits = defineWorkflow('Waits', async (ctx) => {
      const first = await ctx.step('a', a);
      const event = await ctx.waitForEvent('go');
      return [first, event, await ctx.step('a', a)];
    });
    for (const sim of [new Simulation(waits), new StickySimulation(waits)]) {
      a.mockClear();
      await sim.decide();
      sim.send('go', 7);
      const last = await sim.decide(5);
      expect(last.at(-1)).toMatchObject({ type: 'CompleteWorkflow' });
      expect(sim.events.filter((e) => e.type === 'StepCompleted').map((e) => e.data)).toEqual([
        { seq: 0, name: 'a', result: expect.any(Number) },
        { seq: 2, name: 'a', result: expect.any(Number) },
      ]);
      // Two steps, two runs: the first one was not run again by the second decision's replay.
      expect(a).toHaveBeenCalledTimes(2);
      const [first, , second] = (last.at(-1) as { result: number[] }).result;
      expect(second).toBe(first + 1);
      await expect(new WorkflowReplay(waits, WF, [], sim.history()).execute()).resolves.toEqual([]);
      expect(a).toHaveBeenCalledTimes(2);
    }
  });

  it('rejects a step that throws with a TaskFailedError, recorded and replayed as such', async () => {
    const body = jest.fn(() => {
      throw new RangeError('no rate for XYZ');
    });
    const caught = defineWorkflow('Caught', async (ctx) => {
      try {
        return await ctx.step('rate', body);
      } catch (error) {
        return { failed: (error as Error).message, isTaskFailed: error instanceof TaskFailedError, name: (error as TaskFailedError).errorName ?? null };
      }
    });
    const sim = new Simulation(caught);
    const commands = await sim.decide();
    expect(commands[0]).toEqual({ type: 'RecordStep', seq: 0, name: 'rate', error: { message: 'no rate for XYZ', name: 'RangeError' } });
    expect(sim.events).toContainEqual({ type: 'StepFailed', data: { seq: 0, name: 'rate', error: { message: 'no rate for XYZ', name: 'RangeError' } } });
    expect(commands.at(-1)).toEqual({ type: 'CompleteWorkflow', result: { failed: 'no rate for XYZ', isTaskFailed: true, name: 'RangeError' } });
    await expect(new WorkflowReplay(caught, WF, [], sim.history()).execute()).resolves.toEqual([]);
    expect(body).toHaveBeenCalledTimes(1);
  });

  it('runs a step again in the decision that replaces one never recorded (at least once)', async () => {
    const a = counter();
    const once = defineWorkflow('Once', async (ctx) => ctx.step('a', a));
    const sim = new Simulation(once);
    sim.apply({ type: 'StartDecision', decisionId: 'lost', workerId: 'w', workflows: ['Once'], now: T0, leaseMs: 1000 });
    await sim.replay(); // the worker ran the step, then died before reporting
    expect(sim.tick(5000).map((e) => e.type)).toEqual(['DecisionTimedOut']);
    // The next decision replays the lost one (no outcome recorded for its step) and runs it live.
    expect(await sim.decide()).toEqual([
      { type: 'RecordStep', seq: 0, name: 'a', result: 2 },
      { type: 'CompleteWorkflow', result: 2 },
    ]);
    expect(a).toHaveBeenCalledTimes(2);
  });

  it('hands a step back at the decision that recorded it, with that decision\'s clock, when an earlier one was lost', async () => {
    const a = counter();
    const timed = defineWorkflow('Timed', async (ctx) => {
      const value = await ctx.step('a', a);
      const at = ctx.now().toISOString();
      await ctx.waitForEvent('go');
      return [value, at];
    });
    const sim = new Simulation(timed);
    sim.apply({ type: 'StartDecision', decisionId: 'lost', workerId: 'w', workflows: ['Timed'], now: T0, leaseMs: 1000 });
    await sim.replay();
    sim.tick(5000);
    await sim.decide(); // at T0 + 5000: runs the step again and records it
    sim.send('go');
    // A fresh replay of the whole run: the step's outcome is not handed back during the lost decision.
    expect(await sim.decide(10)).toEqual([{ type: 'CompleteWorkflow', result: [2, at(5000)] }]);
    expect(a).toHaveBeenCalledTimes(2);
  });

  it('runs parallel steps at once and hands them back in call order, so replay makes the same calls', async () => {
    let release!: () => void;
    const slow = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    let bEnded!: () => void;
    const bDone = new Promise<void>((resolve) => (bEnded = resolve));
    const step = (name: string, wait?: Promise<void>) => async () => {
      order.push(`start ${name}`);
      await wait;
      order.push(`end ${name}`);
      if (name === 'b') bEnded();
      return name;
    };
    const parallel = defineWorkflow('Parallel', async (ctx) =>
      Promise.all([
        (async () => [await ctx.step('a', step('a', slow)), await ctx.step('c', step('c'))])(),
        (async () => [await ctx.step('b', step('b')), await ctx.step('d', step('d'))])(),
      ]),
    );
    const sim = new Simulation(parallel);
    const deciding = sim.decide();
    // b finishes first, but a is handed back first: the seqs of c and d do not depend on timing.
    await bDone;
    expect(order).toEqual(['start a', 'start b', 'end b']);
    release();
    const commands = await deciding;
    expect(commands.map((c) => `${c.type} ${c.seq ?? ''} ${c.name ?? ''}`.trim())).toEqual([
      'RecordStep 0 a',
      'RecordStep 1 b',
      'RecordStep 2 c',
      'RecordStep 3 d',
      'CompleteWorkflow',
    ]);
    expect(commands.at(-1)).toEqual({ type: 'CompleteWorkflow', result: [['a', 'c'], ['b', 'd']] });
    await expect(new WorkflowReplay(parallel, WF, [], sim.history()).execute()).resolves.toEqual([]);
  });

  it('after retryWorkflows, runs again the step whose failure failed the workflow, not the ones that completed', async () => {
    const a = counter();
    let flaky = 0;
    const b = jest.fn(async () => {
      if (++flaky === 1) throw new Error('gateway timeout');
      return 'paid';
    });
    const pay = defineWorkflow('Pay', async (ctx) => [await ctx.step('a', a), await ctx.step('b', b)]);
    const sim = new Simulation(pay);
    expect((await sim.decide()).at(-1)).toEqual({ type: 'FailWorkflow', error: { message: 'gateway timeout', name: 'TaskFailedError' } });
    sim.apply({ type: 'RetryWorkflow', resetTasks: [], now: T0 + 10 });
    sim.apply({ type: 'StartDecision', decisionId: 'd2', workerId: 'w', workflows: ['Pay'], now: T0 + 10, leaseMs: 10_000 });
    // What the service hands the worker after a retry (replayableHistory): step a's result, not b's failure.
    const commands = await new WorkflowReplay(pay, WF, [], replayableHistory(sim.history())).execute();
    expect(commands).toEqual([
      { type: 'RecordStep', seq: 0, name: 'a' },
      { type: 'RecordStep', seq: 1, name: 'b', result: 'paid' },
      { type: 'CompleteWorkflow', result: [1, 'paid'] },
    ]);
    expect(a).toHaveBeenCalledTimes(1);
    expect(b).toHaveBeenCalledTimes(2);
    sim.apply({ type: 'CompleteDecision', decisionId: 'd2', commands: JSON.parse(JSON.stringify(commands)), ids: {} });
    // The repeated step a records nothing new: one StepCompleted for it in the whole history.
    expect(sim.events.filter((e) => e.type === 'StepCompleted').map((e) => e.data)).toEqual([
      { seq: 0, name: 'a', result: 1 },
      { seq: 1, name: 'b', result: 'paid' },
    ]);
  });

  it('retries a step within its decision by its policy, and records only the outcome', async () => {
    let calls = 0;
    const flaky = jest.fn(async () => {
      if (++calls < 3) throw new RetryableError('busy', { retryAfterMs: 1 });
      return calls;
    });
    const stubborn = jest.fn(async () => {
      throw new NonRetryableError('card declined');
    });
    const once = jest.fn(async () => {
      throw new Error('no policy, one attempt');
    });
    const retried = defineWorkflow('Retried', async (ctx) => {
      const value = await ctx.step('flaky', flaky, { retry: { maxAttempts: 5, initialDelay: 1 } });
      const refusals: string[] = [];
      for (const [name, fn] of [['stubborn', stubborn], ['once', once]] as const) {
        await ctx.step(name, fn, { retry: name === 'stubborn' ? { maxAttempts: 5, initialDelay: 1 } : undefined }).catch((e: Error) => refusals.push(e.message));
      }
      return { value, refusals };
    });
    const sim = new Simulation(retried);
    expect((await sim.decide()).at(-1)).toEqual({ type: 'CompleteWorkflow', result: { value: 3, refusals: ['card declined', 'no policy, one attempt'] } });
    expect([flaky.mock.calls.length, stubborn.mock.calls.length, once.mock.calls.length]).toEqual([3, 1, 1]);
    expect(sim.events.filter((e) => e.type === 'StepCompleted' || e.type === 'StepFailed').map((e) => e.type)).toEqual(['StepCompleted', 'StepFailed', 'StepFailed']);
  });

  it('fails an attempt that passes its timeout, aborting its signal, and retries it by the policy', async () => {
    const signals: AbortSignal[] = [];
    const hangs = jest.fn(({ signal }: StepAttempt) => {
      signals.push(signal);
      return new Promise<never>(() => {});
    });
    const quick = jest.fn(async ({ attempt, signal }: StepAttempt) => ({ attempt, aborted: signal.aborted }));
    const timed = defineWorkflow('Timed', async (ctx) => {
      const error = await ctx.step('hangs', hangs, { timeout: 20, retry: { maxAttempts: 2, initialDelay: 1 } }).catch((e: Error) => e.message);
      return { error, quick: await ctx.step('quick', quick, { timeout: '5s' }) };
    });
    const sim = new Simulation(timed);
    expect((await sim.decide()).at(-1)).toEqual({ type: 'CompleteWorkflow', result: { error: 'step hangs timed out after 20 ms', quick: { attempt: 1, aborted: false } } });
    expect(hangs.mock.calls.map(([a]) => a.attempt)).toEqual([1, 2]);
    expect(signals.map((signal) => signal.aborted)).toEqual([true, true]);
    expect(sim.events).toContainEqual({ type: 'StepFailed', data: { seq: 0, name: 'hangs', error: { message: 'step hangs timed out after 20 ms' } } });
  });

  it('refuses a step timeout that is not a duration, in the workflow code', async () => {
    const body = jest.fn(() => 1);
    const bad = defineWorkflow('BadTimeout', async (ctx) => ctx.step('a', body, { timeout: 'soon' as never }));
    const sim = new Simulation(bad);
    expect((await sim.decide()).at(-1)).toMatchObject({ type: 'FailWorkflow' });
    expect(body).not.toHaveBeenCalled();
  });

  it('runs no step when it only checks code against a history (baton replay), even a decision in flight', async () => {
    const a = counter();
    const inFlight = new Simulation(defineWorkflow('InFlight', async (ctx) => ctx.step('a', a)));
    inFlight.apply({ type: 'StartDecision', decisionId: 'd1', workerId: 'w', workflows: ['InFlight'], now: T0, leaseMs: 10_000 });
    await expect(new WorkflowReplay(inFlight.workflow, WF, [], inFlight.history(), { verifyOnly: true }).execute()).resolves.toEqual([{ type: 'RecordStep', seq: 0, name: 'a' }]);
    expect(a).not.toHaveBeenCalled();
  });

  it('catches code that no longer makes the step its history recorded', async () => {
    const sim = new Simulation(defineWorkflow('Changes', async (ctx) => {
      await ctx.step('a', () => 1);
      return ctx.waitForEvent('go');
    }));
    await sim.decide();
    sim.send('go');
    sim.apply({ type: 'StartDecision', decisionId: 'dx', workerId: 'w', workflows: ['Changes'], now: T0 + 5, leaseMs: 1000 });
    const renamed = defineWorkflow('Changes', async (ctx) => {
      await ctx.step('b', () => 1);
      return ctx.waitForEvent('go');
    });
    await expect(new WorkflowReplay(renamed, WF, [], sim.history()).execute()).rejects.toBeInstanceOf(NonDeterminismError);
  });
});

describe('a decision made right after a task, before the service records either (decideAfterTask)', () => {
  const chain = defineWorkflow('Chain', async (ctx, n: number) => {
    const seen: unknown[] = [];
    for (let i = 0; i < n; i++) {
      const value = await ctx.run(keep, i);
      const doubled = await ctx.step('double', () => (value as number) * 2);
      seen.push([value, doubled, ctx.now().getTime() - T0]);
    }
    return seen;
  });

  /** The worker's side: one held replay; each task result either goes with a next decision or the usual way. */
  class Worker extends Simulation {
    held: WorkflowReplay | undefined;
    lastDecision = '';
    private made = 0;

    override replay(code: WorkflowDefinition = this.workflow): Promise<Command[]> {
      this.held ??= new WorkflowReplay(code, this.workflowId, this.input);
      return this.held.feed(this.history().slice(this.held.nextRevision));
    }

    override async decide(advanceMs = 0): Promise<Command[]> {
      const commands = await super.decide(advanceMs);
      this.lastDecision = `d${this.events.filter((e) => e.type === 'DecisionStarted').length}`;
      return commands;
    }

    /** Task `seq` succeeds with `result`; the worker decides at once and reports both. */
    async completeWithNext(seq: number, result: unknown, advanceMs: number): Promise<{ commands: Command[]; recorded: boolean }> {
      this.now += advanceMs;
      expect(this.held!.waitsOnlyOnTask(seq)).toBe(true);
      const commands = await this.held!.decideAfterTask(seq, result as never, this.now);
      const attemptId = `n${++this.made}`;
      this.apply({ type: 'StartTask', seq, attemptId, workerId: 'w', now: this.now, leaseMs: 10_000, retryPolicy: POLICY, timeoutMs: null });
      const decisionId = `next-${this.made}`;
      const events = this.apply({
        type: 'CompleteTaskAndDecide',
        seq,
        attemptId,
        result: result as never,
        next: { basisDecisionId: this.lastDecision, decisionId, workerId: 'w', version: this.workflow.name, now: this.now, leaseMs: 10_000, commands: JSON.parse(JSON.stringify(commands)), ids: {} },
      });
      const recorded = events.some((e) => e.type === 'DecisionStarted');
      if (recorded) {
        this.held!.resumeAt(this.events.findIndex((e) => e.type === 'DecisionStarted' && e.data.decisionId === decisionId) + 1);
        this.lastDecision = decisionId;
      } else {
        this.held = undefined; // no longer matches the history: the next decision replays it afresh
      }
      return { commands, recorded };
    }
  }

  it('makes the commands the usual decision would, and the history it leaves replays cleanly, full or sticky', async () => {
    const usual = new Simulation(chain, [3]);
    const expected: Command[][] = [await usual.decide()];
    for (let i = 0; i < 3; i++) {
      usual.completeTask(i * 2, i + 10);
      expected.push(await usual.decide(7));
    }
    const worker = new Worker(chain, [3]);
    const made: Command[][] = [await worker.decide()];
    for (let i = 0; i < 3; i++) {
      const { commands, recorded } = await worker.completeWithNext(i * 2, i + 10, 7);
      expect(recorded).toBe(true);
      made.push(commands);
    }
    expect(made).toEqual(expected);
    expect(made.at(-1)![1]).toMatchObject({ type: 'CompleteWorkflow', result: [[10, 20, 7], [11, 22, 14], [12, 24, 21]] });
    expect(worker.events.filter((e) => e.type === 'DecisionStarted')).toHaveLength(4);
    await expect(new WorkflowReplay(chain, WF, [3], worker.history()).execute()).resolves.toEqual([]);
  });

  it('goes on sticky after a recorded next decision, and replays afresh after one that was not', async () => {
    const worker = new Worker(chain, [3]);
    await worker.decide();
    expect((await worker.completeWithNext(0, 10, 5)).recorded).toBe(true);
    // Task 2's result comes the usual way, with an event the code has not seen before it.
    worker.completeTask(2, 11);
    worker.send('noise');
    const third = await worker.decide(5);
    expect(third).toEqual([expect.objectContaining({ type: 'RecordStep', seq: 3, result: 22 }), { type: 'ScheduleTask', seq: 4, name: 'keep', args: [2] }]);
    // Next decision refused: an event arrived after the basis decision.
    worker.send('late');
    const refused = await worker.completeWithNext(4, 12, 5);
    expect(refused.recorded).toBe(false);
    const last = await worker.decide(5);
    expect(last.at(-1)).toMatchObject({ type: 'CompleteWorkflow', result: [[10, 20, 5], [11, 22, 10], [12, 24, 20]] });
    await expect(new WorkflowReplay(chain, WF, [3], worker.history()).execute()).resolves.toEqual([]);
  });

  it('is offered only while the code waits on that one task', async () => {
    const pair = defineWorkflow('Pair', async (ctx) => Promise.all([ctx.run(keep, 1), ctx.run(keep, 2)]));
    const racing = defineWorkflow('Racing', async (ctx) => Promise.race([ctx.run(keep, 1), ctx.sleep(1000)]));
    const waiting = defineWorkflow('Waiting', async (ctx) => Promise.race([ctx.run(keep, 1), ctx.waitForEvent('go')]));
    for (const workflow of [pair, racing, waiting]) {
      const sim = new Worker(workflow);
      await sim.decide();
      expect(sim.held!.waitsOnlyOnTask(0)).toBe(false);
    }
    const single = new Worker(greet, ['ada']);
    await single.decide();
    expect(single.held!.waitsOnlyOnTask(0)).toBe(true);
    expect(single.held!.waitsOnlyOnTask(1)).toBe(false);
  });
});
