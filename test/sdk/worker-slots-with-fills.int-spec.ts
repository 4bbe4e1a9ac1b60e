/**
 * An SDK worker's claims against its `concurrency`. The SDK
 * counts a kind's free slots when it sends a poll (`poll(kind, free)`, parked up to its waitMs)
 * and again when it sends a report (`maxTasks = free('TASK') + tasks.length`). Before reports
 * filled slots, a report's claim took only its own outcomes' next steps; now a claim with a
 * `pollId` also takes the waiting work for those free slots, which the parked poll asks for too:
 * both are answered, and the worker holds more task attempts than it has slots. The extra ones
 * wait in the worker (heartbeated) while another worker could run them. Measured here as the
 * worker's own accounting, sampled every millisecond: attempts it holds unfinished, running or
 * waiting for a slot (`running` + `waiting`), at most `concurrency` before reports filled slots
 * (with the claim's pollId left out: 4 in every run), 5 with it. A real service and an in-process
 * SDK worker. Not the slots themselves (`inFlight`): a finished task keeps its slot until its
 * report's answer is handled, and the work that answer hands on is queued a moment before the
 * slot is let go, which a loaded machine let the sampler see (5 and 6, with nothing over-claimed).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { defineTask } from '../../src/sdk/index.js';
import { Client } from '../api/api-helpers.js';
import { type InProcessWorker, startInProcessWorker } from '../support/in-process-worker.js';
import { waitFor } from '../support/wait-for.js';

const APP = 'demo';
const ENV = 'review-fill-slots';
const CONCURRENCY = 4;

let running = 0;
let mostRunning = 0;
const work = defineTask('reviewFillWork', async (_ctx, ms: number) => {
  running++;
  mostRunning = Math.max(mostRunning, running);
  await new Promise((resolve) => setTimeout(resolve, ms));
  running--;
  return ms;
});

let w: InProcessWorker;
let api: Client;
beforeAll(async () => {
  w = await startInProcessWorker({ appId: APP, environment: ENV, tasks: [work], workflows: [], concurrency: CONCURRENCY });
  api = new Client(w.service, APP, ENV);
});
afterAll(async () => w?.stop());

describe('an SDK worker under bursts of tasks, with a poll parked while its reports fill free slots', () => {
  it(`never holds more task attempts (running or waiting for a slot) than its concurrency (${CONCURRENCY})`, async () => {
    const worker = w.worker as unknown as { running: Map<string, unknown>; waiting: { TASK: unknown[] } };
    let mostHeld = 0;
    const sampler = setInterval(() => (mostHeld = Math.max(mostHeld, worker.running.size + worker.waiting.TASK.length)), 1);
    try {
      const ids: string[] = [];
      // Bursts of three, 15 ms apart, tasks of 20 to 48 ms: slots free up while polls are parked and reports are on their way.
      for (let round = 0; round < 100 && mostHeld <= CONCURRENCY; round++) {
        ids.push(...(await Promise.all(Array.from({ length: 3 }, () => api.dispatchTask('reviewFillWork', JSON.stringify([20 + (round % 5) * 7]))))));
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
      await waitFor(async () => ((await Promise.all(ids.slice(-3).map((id) => api.task(id)))).every((t) => t?.state === 'COMPLETED') || null), {
        timeoutMs: 60_000,
        description: 'the last tasks completed',
      });
    } finally {
      clearInterval(sampler);
    }
    expect({ mostRunning: mostRunning <= CONCURRENCY, mostHeld }).toEqual({ mostRunning: true, mostHeld: CONCURRENCY });
  }, 120_000);
});
