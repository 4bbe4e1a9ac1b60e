/**
 * Holding an app's effects up, for specs of what happens while the effects reactor is behind (a
 * child's id is recorded in its parent's history before the reactor creates the child): a
 * workflow's `ctx.select({ name }).send()` to 3,000 workflows no worker serves is an effect the
 * reactor carries out before any later one of the app. Uses the `events-controls` fixtures
 * (`RevIdle`, `RevBroadcast`), run by a real `baton worker` process.
 */
import type { Client } from '../../src/sdk/index.js';
import { waitFor } from './wait-for.js';

export class BusyReactor {
  private seeded = false;

  constructor(
    private readonly client: Client,
    private readonly appId: string,
    private readonly environment: string,
  ) {}

  /** `broadcasts` broadcasts to 3,000 idle workflows (dispatched once), each seen requested before this resolves. */
  async hold(broadcasts = 1): Promise<void> {
    const { client, appId, environment } = this;
    for (let i = 0; !this.seeded && i < 3000; i += 100) {
      await Promise.all(Array.from({ length: 100 }, () => client.dispatchWorkflow({ appId, environment, name: 'RevIdle', input: [] })));
    }
    this.seeded = true;
    const broadcasters = await Promise.all(Array.from({ length: broadcasts }, () => client.dispatchWorkflow({ appId, environment, name: 'RevBroadcast', input: ['RevIdle'] })));
    for (const broadcaster of broadcasters) {
      await waitFor(async () => (await client.workflowHistory(appId, environment, broadcaster)).some((e) => e.type === 'ControlRequested') || null, { timeoutMs: 20_000 });
    }
  }

  /** The id of the child `parent` recorded, read from its history as soon as it is there. */
  childOf(parent: string): Promise<string> {
    const { client, appId, environment } = this;
    return waitFor(async () => ((await client.workflowHistory(appId, environment, parent)).find((e) => e.type === 'ChildWorkflowStarted')?.data as { childId: string } | undefined)?.childId ?? null, {
      timeoutMs: 20_000,
      intervalMs: 10,
      description: "the parent's ChildWorkflowStarted",
    });
  }
}
