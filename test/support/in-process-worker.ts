import { Client, Worker, type WorkerOptions } from '../../src/sdk/index.js';
import { type Service, type ServiceOptions, startService } from './service.js';

/** A worker that logs nothing (the specs check outcomes, not lines). */
export const quietLogger = { info() {}, warn() {}, error() {} };

export interface InProcessWorker {
  service: Service;
  client: Client;
  worker: Worker;
  /** Shuts the worker down (its loop ended), then the service. */
  stop(): Promise<void>;
}

/**
 * A real service and an SDK `Worker` in the test's own process, for specs whose workflow and task
 * code shares state with the test (gates it opens, counts it reads): the worker serves `options`
 * (its url and token are the service's; it logs nothing unless given a logger).
 */
export async function startInProcessWorker(options: Omit<WorkerOptions, 'url' | 'token'>, service: ServiceOptions = {}): Promise<InProcessWorker> {
  const started = await startService(service);
  const client = new Client({ url: started.url, token: started.token });
  const worker = new Worker({ logger: quietLogger, ...options, url: started.url, token: started.token });
  const running = worker.run();
  return {
    service: started,
    client,
    worker,
    async stop() {
      await worker.shutdown();
      await running;
      await started.stop();
    },
  };
}
