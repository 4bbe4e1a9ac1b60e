import { defineTask, defineWorkflow } from '@baton/sdk';

/** The task: a plain async function, registered under the name the workflow and clients use. */
export const sendEmail = defineTask(
  'SendEmail',
  async (_ctx, to: string, subject: string) => {
    console.info(`[migration example] to ${to}: ${subject}`);
    return subject;
  },
  { retry: { maxAttempts: 5, initialDelay: '1s' } },
);

/**
 * Welcomes a new user, then waits for `Activated`; each wait that times out sends a reminder,
 * at most `maxReminders` of them. Same name and arguments as the original, so the code that
 * dispatches it and sends it events does not change.
 */
export const activationReminders = defineWorkflow(
  'ActivationReminders',
  async (ctx, email: string, maxWaitSeconds: number, maxReminders: number) => {
    await ctx.run(sendEmail, email, 'Welcome');
    let event: [string, ...unknown[]] | null = null;
    for (let sent = 0; sent < maxReminders && event === null; sent++) {
      event = await ctx.waitForEvent('Activated', { timeout: maxWaitSeconds * 1000 });
      if (event === null) await ctx.run(sendEmail, email, `Reminder #${sent + 1}`);
    }
    if (event !== null) await ctx.run(sendEmail, email, 'Congrats');
    return { activated: event !== null, data: event === null ? null : event.slice(1) };
  },
);
