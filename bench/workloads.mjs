// The bench worker's tasks and workflows (loaded by `baton worker bench/workloads.mjs`).
// BENCH_OBS_FILE, when set, receives "<workflowId>\t<epoch ms>" when a workflow's first step starts
// (a task or an inline step), so the runner can measure dispatch → first-step-start from the client's
// point of view.
import { appendFileSync } from 'node:fs';
import { defineTask, defineWorkflow } from '../dist/src/sdk/index.js';
import { wallNow } from './lib/clock.mjs';

const obsFile = process.env.BENCH_OBS_FILE;
let buffer = '';
const flush = () => {
  if (buffer && obsFile) {
    appendFileSync(obsFile, buffer);
    buffer = '';
  }
};
if (obsFile) {
  setInterval(flush, 50).unref();
  process.on('exit', flush);
}
const observe = (id) => {
  if (obsFile && id) buffer += `${id}\t${wallNow()}\n`;
};

/** First no-op task: records when it starts. */
export const benchStep1 = defineTask('benchStep1', (ctx) => {
  observe(ctx.workflowId);
  return null;
});

/** Second no-op task. */
export const benchStep2 = defineTask('benchStep2', () => null);

/** Scenario 2: two sequential no-op tasks. */
export const benchTwoStep = defineWorkflow('BenchTwoStep', async (ctx) => {
  await ctx.run(benchStep1);
  await ctx.run(benchStep2);
  return null;
});

/**
 * Scenario 2, like for like with Restate's `ctx.run` and DBOS's steps: the same two no-op steps run
 * inline in the decision (`ctx.step`) instead of as tasks. The first records when it starts, as
 * benchStep1 does: a step's function runs live, not on replay (should a lost decision run it again,
 * the runner keeps the first record).
 */
export const benchTwoStepInline = defineWorkflow('BenchTwoStepInline', async (ctx) => {
  await ctx.step('step1', () => {
    observe(ctx.workflowId);
    return null;
  });
  await ctx.step('step2', () => null);
  return null;
});

/** Scenario 3 and the recovery/memory stores: waits for one event, then completes. */
export const benchWaiter = defineWorkflow('BenchWaiter', async (ctx) => {
  await ctx.waitForEvent('go');
  return null;
});

/** Scenario 5 (large): a no-op task. */
export const benchTick = defineTask('benchTick', () => null);

/** Scenario 5: `n` no-op tasks one after another in one workflow. */
export const benchSequential = defineWorkflow('BenchSequential', async (ctx, n) => {
  for (let i = 0; i < n; i++) await ctx.run(benchTick);
  return n;
});

/** Scenario 5: `n` no-op tasks at once in one workflow. */
export const benchParallel = defineWorkflow('BenchParallel', async (ctx, n) => {
  await Promise.all(Array.from({ length: n }, () => ctx.run(benchTick)));
  return n;
});
