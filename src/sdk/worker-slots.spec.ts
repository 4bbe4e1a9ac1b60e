/**
 * A worker's slots bound what runs, whatever it was handed. A parked poll and a report's eager
 * claim are both answered from the same free slots (the service cannot know what the other was
 * given), so a worker of `concurrency: 2` was handed three tasks and ran them all at once. Work
 * beyond the slots now waits, heartbeated, for one to free. And `shutdown()` waits for work a
 * report's answer brought after the stop (it resolved while such work ran, and its report went
 * out after); a task so brought is given back unrun. The service is a scripted stand-in for the
 * worker's GraphQL client: these are orderings a real service produces only by chance.
 */
import { describe, expect, it } from '@jest/globals';
import { Worker, defineTask } from './index.js';

const quiet = { info() {}, warn() {}, error() {} };

function taskItem(n: number) {
  return {
    kind: 'TASK' as const,
    ref: `task:t${n}`,
    workflowId: null,
    taskId: `t${n}`,
    name: 'held',
    version: null,
    decisionId: null,
    attemptId: `a${n}`,
    attempt: 1,
    input: JSON.stringify([n]),
    history: null,
    historyFrom: null,
    runFrom: null,
    leaseExpiresAt: new Date(Date.now() + 60_000).toISOString(),
  };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Tasks that run until released, counting how many run at once. */
function heldTasks() {
  const gates = new Map<number, () => void>();
  const state = { running: 0, most: 0, ran: [] as number[] };
  const task = defineTask('held', async (_ctx, n: number) => {
    state.running++;
    state.most = Math.max(state.most, state.running);
    state.ran.push(n);
    await new Promise<void>((resolve) => gates.set(n, resolve));
    state.running--;
    return n;
  });
  const release = (n: number) => {
    gates.get(n)!();
    gates.delete(n);
  };
  return { task, state, gates, release };
}

type Request = (query: string, variables: { input: Record<string, any> }, options?: { signal?: AbortSignal }) => Promise<unknown>;

/** A worker whose requests `script` answers. */
function scripted(concurrency: number, task: ReturnType<typeof heldTasks>['task'], script: Request) {
  const worker = new Worker({ url: 'http://127.0.0.1:1', token: 't', appId: 'demo', environment: 'x', tasks: [task], concurrency, heartbeatIntervalMs: 50, logger: quiet });
  (worker as unknown as { client: { request: Request } }).client.request = script;
  return worker;
}

/** Answers a parked poll when told, or rejects it when the worker aborts it. */
function parked(signal?: AbortSignal) {
  let answer!: (items: unknown[]) => void;
  const promise = new Promise<{ pollWork: unknown[] }>((resolve, reject) => {
    answer = (items) => resolve({ pollWork: items });
    signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
  });
  return { promise, answer };
}

describe('a worker runs at most its slots, whatever it is handed', () => {
  it('two tasks a report claimed and one a parked poll brought, on 2 slots: two run, the third waits (heartbeated), and all run', async () => {
    const { task, state, gates, release } = heldTasks();
    const polls: Array<{ input: Record<string, any>; answer: (items: unknown[]) => void }> = [];
    const claims: unknown[] = [];
    const heartbeats: string[][] = [];
    const reports: unknown[] = [];
    const worker = scripted(2, task, async (query, variables, options) => {
      if (query.includes('pollWork')) {
        if (polls.length === 0) {
          polls.push({ input: variables.input, answer: () => undefined });
          return { pollWork: [taskItem(1)] };
        }
        const poll = parked(options?.signal);
        polls.push({ input: variables.input, answer: poll.answer });
        return poll.promise;
      }
      if (query.includes('reportWork')) {
        reports.push(...variables.input.tasks);
        claims.push(variables.input.claim);
        return { reportWork: { accepted: variables.input.tasks.length, rejected: [], items: reports.length === 1 ? [taskItem(2), taskItem(3)] : [], decided: [] } };
      }
      if (query.includes('heartbeat')) {
        heartbeats.push(variables.input.attempts.map((a: { ref: string }) => a.ref));
        return { heartbeat: [] };
      }
      throw new Error(`unexpected request ${query}`);
    });
    const running = worker.run();
    await until(() => state.running === 1 && polls.length === 2, 'task 1 running and a poll parked for the free slot');
    expect(polls[1].input).toMatchObject({ maxTasks: 1 });
    release(1);
    // The report's claim counts the slot the parked poll waits on too: it is handed two tasks.
    await until(() => state.running === 2, 'tasks 2 and 3 handed over by the report');
    expect(claims[0]).toMatchObject({ maxTasks: 2 });
    polls[1].answer([taskItem(4)]);
    // Task 4 waits for a slot; its lease is kept meanwhile.
    await until(() => heartbeats.some((refs) => refs.includes('task:t4')), 'the waiting task heartbeated');
    expect(state.running).toBe(2);
    for (let done = 0; done < 3; done++) {
      await until(() => gates.size > 0 && state.running === Math.min(2, 3 - done), `a running task (${done} released)`);
      release([...gates.keys()][0]);
    }
    await until(() => reports.length === 4, 'every result reported');
    expect(state.most).toBe(2);
    expect(state.ran.sort()).toEqual([1, 2, 3, 4]);
    await worker.shutdown();
    await running;
  });

  it('a waiting task the service stops because its workflow failed is given back unrun, not left to lapse', async () => {
    const { task, state, release } = heldTasks();
    let polled = 0;
    const reports: Array<Record<string, unknown>> = [];
    const worker = scripted(1, task, async (query, variables, options) => {
      if (query.includes('pollWork')) {
        polled++;
        // Two tasks on one slot (as a parked poll and a report's claim can hand over): task 2 waits.
        if (polled === 1) return { pollWork: [taskItem(1), taskItem(2)] };
        return parked(options?.signal).promise;
      }
      if (query.includes('reportWork')) {
        reports.push(...variables.input.tasks);
        return { reportWork: { accepted: variables.input.tasks.length, rejected: [], items: [], decided: [] } };
      }
      if (query.includes('heartbeat')) {
        const refs: string[] = variables.input.attempts.map((a: { ref: string }) => a.ref);
        return { heartbeat: refs.map((ref) => ({ ref, cancel: ref === 'task:t2', reason: ref === 'task:t2' ? 'workflow failed' : null })) };
      }
      throw new Error(`unexpected request ${query}`);
    });
    const running = worker.run();
    await until(() => reports.some((r) => r.ref === 'task:t2'), 'the waiting task given back');
    expect(reports.find((r) => r.ref === 'task:t2')).toEqual({ ref: 'task:t2', attemptId: 'a2', released: true });
    release(1);
    await until(() => reports.some((r) => r.ref === 'task:t1'), 'task 1 reported');
    expect(state.ran).toEqual([1]);
    await worker.shutdown();
    await running;
  });

  it('shutdown waits for a report answered after the stop, and gives back the task that answer brought, unrun', async () => {
    const { task, state, release } = heldTasks();
    let answerReport!: () => void;
    const reports: Array<Record<string, unknown>> = [];
    let polled = 0;
    let pollAborted = false;
    const worker = scripted(2, task, async (query, variables, options) => {
      if (query.includes('pollWork')) {
        if (polled++ === 0) return { pollWork: [taskItem(1)] };
        options?.signal?.addEventListener('abort', () => (pollAborted = true), { once: true });
        return parked(options?.signal).promise;
      }
      if (query.includes('reportWork')) {
        reports.push(...variables.input.tasks);
        if (reports.length > 1) return { reportWork: { accepted: 1, rejected: [], items: [], decided: [] } };
        // The first report is answered once the worker is stopping, with a task its claim asked for.
        await new Promise<void>((resolve) => (answerReport = resolve));
        return { reportWork: { accepted: 1, rejected: [], items: [taskItem(2)], decided: [] } };
      }
      return { heartbeat: [] };
    });
    const running = worker.run();
    await until(() => state.running === 1, 'task 1 running');
    release(1);
    await until(() => answerReport !== undefined, 'task 1 reported');
    const stopping = worker.shutdown();
    await until(() => pollAborted, 'the parked poll aborted by the stop');
    answerReport();
    await stopping;
    // Settled when shutdown resolved: task 2 was given back, not run.
    expect(state.ran).toEqual([1]);
    expect(reports).toEqual([
      { ref: 'task:t1', attemptId: 'a1', result: '1' },
      { ref: 'task:t2', attemptId: 'a2', released: true },
    ]);
    await running;
  });
});
