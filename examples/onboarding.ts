import { defineTask, defineWorkflow } from '@baton/sdk';

/** Sends the welcome email (here: logs it; swap in your mailer). */
export const sendWelcomeEmail = defineTask(
  'sendWelcomeEmail',
  async (_ctx, email: string) => {
    console.info(`[examples] welcome email to ${email}`);
    return { sentTo: email, template: 'welcome' };
  },
  { retry: { maxAttempts: 5, initialDelay: '1s' }, timeout: '30s' },
);

export const sendReminderEmail = defineTask('sendReminderEmail', async (_ctx, email: string) => {
  console.info(`[examples] reminder email to ${email}`);
  return { sentTo: email, template: 'reminder' };
});

/**
 * Welcomes a new user, then waits up to three days for the `activated` event (sent with
 * `sendEventToWorkflows` by name and tag); without it, sends a reminder.
 */
export const onboarding = defineWorkflow('Onboarding', async (ctx, email: string) => {
  await ctx.run(sendWelcomeEmail, email);
  const activated = await ctx.waitForEvent('activated', { timeout: '3d' });
  if (activated) return { email, activated: true, details: activated.slice(1) };
  await ctx.run(sendReminderEmail, email);
  return { email, activated: false };
});
