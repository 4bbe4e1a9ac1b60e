/**
 * Workflow code written as plain JavaScript allows, run by a real worker process: what the SDK
 * must tolerate without taking the worker (and every workflow it runs) down.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { FixtureWorker, killAllWorkers, startWorker } from '../support/worker.js';
import { Engine, ofType } from './engine-helpers.js';

const ENV = 'workflow-code';

describe('workflow code (service + worker process)', () => {
  let service: Service;
  let worker: FixtureWorker;
  let engine: Engine;

  beforeAll(async () => {
    service = await startService({ env: { LEASE_MS: '2000' } });
    worker = await startWorker({ url: service.url, token: service.token, environment: ENV });
    engine = new Engine(service, ENV);
  });

  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  it('a task that fails while the code awaits something else rejects the promise the code awaits later (the worker does not crash)', async () => {
    const id = await engine.dispatch('AwaitLater', ['card declined']);
    // The failure is decided on while the code waits for `go`: a decision follows it.
    await engine.waitForHistory(id, (events) => ofType(events, 'TaskFailed').length === 1 && events.at(-1)?.type === 'DecisionCompleted', 'a decision after TaskFailed');
    expect(worker.process.exitCode).toBeNull();

    await engine.send({ id }, 'go');
    const done = await engine.waitForState(id);
    expect(done.result).toEqual({ caught: 'TaskFailedError', message: 'card declined' });
    expect(worker.process.exitCode).toBeNull();
  });

  // Before, turning such a value into an error message threw itself, as an unhandled rejection:
  // Node ended the worker process with every workflow it ran (and the next worker to replay it too).
  it.each(['null-prototype', 'throwing-toString', 'throwing-message'])(
    'workflow code that throws a value String() cannot print (%s) fails the workflow, and the worker lives on',
    async (kind) => {
      const id = await engine.dispatch('ThrowsUnprintable', [kind, false]);
      const failed = await engine.waitForState(id, 'FAILED', 15_000);
      expect(typeof failed.error).toBe('string');
      expect(worker.process.exitCode).toBeNull();
    },
  );

  it.each(['null-prototype', 'throwing-toString', 'throwing-message'])(
    'a task that throws a value String() cannot print (%s) fails its attempt, and the worker lives on',
    async (kind) => {
      const id = await engine.dispatch('ThrowsUnprintable', [kind, true]);
      const done = await engine.waitForState(id, 'COMPLETED', 15_000);
      expect(done.result).toMatchObject({ caught: 'TaskFailedError' });
      expect(worker.process.exitCode).toBeNull();
    },
  );
});
