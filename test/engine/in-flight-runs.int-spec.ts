/**
 * A restart rebuilds the engine's memory of the workflows in flight from their current runs: a
 * workflow that continued as new is read from its last `WorkflowContinuedAsNew`, not from its
 * first event. Continue-as-new is how a long-lived workflow keeps its history short; before,
 * every restart still read every run it ever had.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { Engine, ofType, portOf, unique } from './engine-helpers.js';

const RUNS = 25;

describe('a restart with a workflow that continued as new in flight', () => {
  let service: Service | undefined;
  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  it('reads its current run only, and the workflow goes on from there', async () => {
    service = await startService({ env: { LOG_LEVEL: 'info' } });
    const { storeUrl, token } = service;
    const port = portOf(service);
    const env = unique('runs');
    await startWorker({ url: service.url, token, environment: env });
    const engine = new Engine(service, env);
    const id = await engine.dispatch('Entity', [0]);
    for (let run = 1; run <= RUNS; run++) {
      await engine.waitForHistory(id, (events) => ofType(events, 'WorkflowContinuedAsNew').length === run - 1 && events.at(-1)!.type === 'DecisionCompleted', `run ${run} to wait`);
      await engine.send({ id }, 'poke', 'again');
    }
    const history = await engine.waitForHistory(
      id,
      (events) => ofType(events, 'WorkflowContinuedAsNew').length === RUNS && events.at(-1)!.type === 'DecisionCompleted',
      'the last run to wait',
    );
    const runStart = ofType(history, 'WorkflowContinuedAsNew').at(-1)!.revision;
    await killAllWorkers();
    await service.stop();

    service = await startService({ storeUrl, env: { LOG_LEVEL: 'info', PORT: port } });
    // This store holds one stream in flight: the workflow, from its last continue-as-new.
    const line = await service.logged(/\((\d+) in-flight streams rebuilt in memory from (\d+) events\)/);
    const [, streams, events] = /\((\d+) in-flight streams rebuilt in memory from (\d+) events\)/.exec(line)!;
    expect({ streams: Number(streams), events: Number(events) }).toEqual({ streams: 1, events: history.length - runStart });
    expect(history.length).toBeGreaterThan(4 * RUNS);

    await startWorker({ url: service.url, token, environment: env });
    const restarted = new Engine(service, env, token);
    await restarted.send({ id }, 'poke', 'stop');
    const done = await restarted.waitForState(id, 'COMPLETED', 15_000);
    expect(done.result).toEqual({ runs: RUNS, last: 'stop' });
  });
});
