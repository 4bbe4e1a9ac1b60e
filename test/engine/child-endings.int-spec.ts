/**
 * Children ended with their parent, when the effects reactor carries out again, after a restart
 * from an older checkpoint, the effects of a history already acted on: what it ended stays ended
 * once, and what it left running is left running.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createEventStore } from '../../src/event-store/create-event-store.js';
import Database from '../../src/event-store/sqlite/better-sqlite3.js';
import { uuidv7 } from '../../src/shared/ids.js';
import { Service, freshStoreUrl, startService } from '../support/service.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { APP, Engine, ofType, unique } from './engine-helpers.js';

/**
 * Stops the workers and `service`, and starts it again on its store with its effects reactor at
 * the log's start (as after a crash long before its checkpoint): every effect is carried out again.
 */
async function restartFromLogStart(service: Service): Promise<Service> {
  await killAllWorkers();
  await service.stop();
  const db = new Database(service.storeUrl.slice('sqlite:'.length));
  try {
    db.prepare(`DELETE FROM rm_checkpoints WHERE name = 'effects'`).run();
  } finally {
    db.close();
  }
  return startService({ storeUrl: service.storeUrl });
}

describe('child workflows ended with their parent, across a replay of the effects', () => {
  let service: Service | undefined;
  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  it('a replay ends no child its parent left running (ctx.dispatch), and ends no child twice', async () => {
    service = await startService();
    const { token } = service;
    const environment = unique('child-endings');
    let engine = new Engine(service, environment);
    await startWorker({ url: service.url, token, environment });

    // A child its parent dispatched goes on when the parent is terminated.
    const dispatcherId = await engine.dispatch('DispatchThenWait', [unique('detached')]);
    const leftRunning = await engine.childOf(dispatcherId);
    await engine.waitForState(leftRunning, 'RUNNING');
    await engine.terminate({ id: dispatcherId });
    // The first run's awaited child ends when its parent continues as new.
    const continuedId = await engine.dispatch('ChildOrContinue', [unique('continued'), 300, 0]);
    expect((await engine.waitForState(continuedId)).result).toBe('second run done');
    const continuedChild = await engine.childOf(continuedId);
    await engine.waitForState(continuedChild, 'TERMINATED');

    // A tree terminated: each of its workflows terminated once, each parent told once.
    const rootId = await engine.dispatch('Grandparent', [unique('tree')]);
    const parentId = await engine.childOf(rootId);
    const childId = await engine.childOf(parentId);
    await engine.waitForState(childId, 'RUNNING');
    await engine.terminate({ id: rootId }, 'tree cut');
    await engine.waitForState(childId, 'TERMINATED');
    await engine.waitForEventType(parentId, 'ChildWorkflowFailed');

    service = await restartFromLogStart(service);
    engine = new Engine(service, environment, token);
    await startWorker({ url: service.url, token, environment });

    // Its ControlRequested's effect starts once every earlier one of the app is carried out again.
    await engine.dispatch('Releaser', [leftRunning]);
    expect((await engine.waitForState(leftRunning)).result).toEqual({ label: 'detached', released: 'from a releaser', childId: leftRunning });
    expect(ofType(await engine.history(leftRunning), 'WorkflowTerminated')).toHaveLength(0);
    for (const id of [rootId, parentId, childId, continuedChild]) expect(ofType(await engine.history(id), 'WorkflowTerminated')).toHaveLength(1);
    expect(ofType(await engine.history(continuedId), 'ChildWorkflowFailed')).toHaveLength(0);
    for (const id of [rootId, parentId]) expect(ofType(await engine.history(id), 'ChildWorkflowFailed')).toHaveLength(1);
    expect(service.output()).not.toMatch(/cannot be carried out|failed \(attempt/);
  }, 120_000);
});

describe('child workflows ended with their parent, by two instances on one store', () => {
  const services: Service[] = [];
  afterAll(async () => {
    await killAllWorkers();
    await Promise.all(services.map((s) => s.stop()));
  });

  it('each child is terminated once, each parent told once, nothing logged as failed', async () => {
    const storeUrl = freshStoreUrl();
    const a = await startService({ storeUrl });
    services.push(a);
    const b = await startService({ storeUrl });
    services.push(b);
    const environment = unique('child-endings-2');
    const onA = new Engine(a, environment);
    const onB = new Engine(b, environment, a.token);
    await startWorker({ url: a.url, token: a.token, environment });
    await startWorker({ url: b.url, token: a.token, environment });

    const trees = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const rootId = await (i % 2 ? onA : onB).dispatch('Grandparent', [unique('tree')]);
        const parentId = await onA.childOf(rootId);
        const childId = await onA.childOf(parentId);
        await onA.waitForState(childId, 'RUNNING');
        return { i, rootId, parentId, childId };
      }),
    );
    const leftBehind = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? onA : onB).dispatch('ChildThenDone', [unique('left-behind')])));
    await Promise.all(trees.map(({ i, rootId }) => (i % 2 ? onB : onA).terminate({ id: rootId }, 'tree cut')));

    for (const { rootId, parentId, childId } of trees) {
      await onB.waitForState(childId, 'TERMINATED');
      await onA.waitForHistory(parentId, (h) => ofType(h, 'ChildWorkflowFailed').length > 0, 'the child\'s end');
      await onA.waitForHistory(rootId, (h) => ofType(h, 'ChildWorkflowFailed').length > 0, 'the child\'s end');
    }
    for (const parentId of leftBehind) {
      const childId = await onA.childOf(parentId);
      await onA.waitForState(childId, 'TERMINATED');
      await onA.waitForHistory(parentId, (h) => ofType(h, 'ChildWorkflowFailed').length > 0, 'the child\'s end');
    }
    // Both reactors carried out every effect up to the head (a duplicate would be in by then).
    for (const engine of [onA, onB]) await engine.effectsCaughtUp();
    for (const { rootId, parentId, childId } of trees) {
      for (const id of [rootId, parentId, childId]) expect({ id, n: ofType(await onA.history(id), 'WorkflowTerminated').length }).toEqual({ id, n: 1 });
      for (const id of [rootId, parentId]) expect({ id, n: ofType(await onA.history(id), 'ChildWorkflowFailed').length }).toEqual({ id, n: 1 });
    }
    for (const parentId of leftBehind) {
      const childId = await onA.childOf(parentId);
      expect(ofType(await onA.history(childId), 'WorkflowTerminated')).toHaveLength(1);
      expect(ofType(await onA.history(parentId), 'ChildWorkflowFailed')).toHaveLength(1);
    }
    for (const service of [a, b]) expect(service.output()).not.toMatch(/cannot be carried out|failed \(attempt/);
  }, 120_000);
});

describe('a child workflow its failed parent awaited, once the parent is retried', () => {
  let service: Service | undefined;
  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  it('goes on while the parent is failed, and is terminated, though paused, when the retried parent is', async () => {
    service = await startService();
    const environment = unique('child-endings-3');
    const engine = new Engine(service, environment);
    await startWorker({ url: service.url, token: service.token, environment });
    const parentId = await engine.dispatch('ChildAndCharge', [unique('retried'), unique('key')]);
    await engine.waitForState(parentId, 'FAILED');
    const childId = await engine.childOf(parentId);
    await engine.waitForState(childId, 'RUNNING');
    expect(await engine.pause({ id: childId })).toMatchObject({ matched: 1, changed: 1 });

    const retried = await engine.client.request<{ retryWorkflows: { changed: number } }>(
      'mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { changed } }',
      { input: { appId: APP, environment, selector: { id: parentId } } },
    );
    expect(retried.retryWorkflows.changed).toBe(1);
    // The retry charged, and waits on the child it started before it failed.
    await engine.waitForHistory(parentId, (h) => ofType(h, 'TaskCompleted').length > 0, 'the charge');
    expect((await engine.workflow(parentId)).state).toBe('RUNNING');

    await engine.terminate({ id: parentId }, 'given up');
    await engine.waitForState(childId, 'TERMINATED');
    expect(ofType(await engine.history(childId), 'WorkflowTerminated').map((e) => e.data.reason)).toEqual([`its parent workflow ${parentId} was terminated`]);
  }, 60_000);
});

describe('a child workflow its parent saw fail, retried after the parent continued as new', () => {
  let service: Service | undefined;
  afterAll(async () => {
    await killAllWorkers();
    await service?.stop();
  });

  it('runs on across a replay of the effects (its parent\'s run was told of its end), also once it continued as new', async () => {
    service = await startService();
    const { token } = service;
    const environment = unique('child-endings-4');
    let engine = new Engine(service, environment);
    await startWorker({ url: service.url, token, environment });
    const parentId = await engine.dispatch('ChildFailsThenContinue', [unique('retried-child'), unique('key'), 0]);
    expect((await engine.waitForState(parentId)).result).toBe('second run done');
    const childId = await engine.childOf(parentId);
    await engine.waitForState(childId, 'FAILED');
    // The continue-as-new found it failed: nothing to end.
    expect(ofType(await engine.history(parentId), 'WorkflowContinuedAsNew').map((e) => e.data.awaitedChildren)).toEqual([[]]);

    // An operator fixes the charge and retries the child: it charges, and waits for its event.
    const retried = await engine.client.request<{ retryWorkflows: { changed: number } }>(
      'mutation($input: RetryWorkflowsInput!) { retryWorkflows(input: $input) { changed } }',
      { input: { appId: APP, environment, selector: { id: childId } } },
    );
    expect(retried.retryWorkflows.changed).toBe(1);
    await engine.waitForHistory(childId, (h) => ofType(h, 'TaskCompleted').length > 0, 'the charge');

    // Then it continues as new: its new run keeps the mark (the replay reads the child from there).
    expect((await engine.send({ id: childId }, 'release', 'continue as new')).changed).toBe(1);
    await engine.waitForHistory(childId, (h) => ofType(h, 'WorkflowContinuedAsNew').length > 0 && ofType(h, 'TaskCompleted').length > 1, 'the new run\'s charge');
    expect(ofType(await engine.history(childId), 'WorkflowContinuedAsNew').map((e) => e.data.retried)).toEqual([true]);

    service = await restartFromLogStart(service);
    engine = new Engine(service, environment, token);
    await engine.effectsCaughtUp();
    expect(ofType(await engine.history(childId), 'WorkflowTerminated')).toEqual([]);
    expect((await engine.workflow(childId)).state).toBe('RUNNING');
  }, 120_000);
});

/**
 * A parent whose first run started an awaited child and continued as new before the child was
 * created (the effects never ran), then as many times again as `continues` has entries. Each
 * entry is what its `WorkflowContinuedAsNew` says of the children: `awaitedChildren` as this
 * version writes it, with or without `childrenEndedFrom` (the version before wrote no such field),
 * or nothing as versions before both wrote it (they left such children running).
 */
async function writeParent(store: Awaited<ReturnType<typeof createEventStore>>, environment: string, continues: Array<Record<string, unknown>>): Promise<{ parentId: string; childId: string }> {
  const parentId = uuidv7();
  const childId = uuidv7();
  const metadata = { actor: 'test', appId: APP, environment, correlationId: uuidv7() };
  const dispatched = { workflowId: parentId, appId: APP, environment, name: 'ChildOrContinue', tag: null, input: ['t', 300, 0], parent: null, scheduleId: null, dispatchedAt: new Date().toISOString() };
  await store.append(`workflow-${parentId}`, [
    { id: uuidv7(), type: 'WorkflowDispatched', data: dispatched, metadata },
    { id: uuidv7(), type: 'ChildWorkflowStarted', data: { seq: 0, childId, name: 'Child', args: ['raced'], tag: 't', wait: true }, metadata },
    ...continues.map((children, i) => ({
      id: uuidv7(),
      type: 'WorkflowContinuedAsNew',
      data: { ...dispatched, input: ['t', 300, 1, 'timed out'], run: i + 2, seqBase: 2 * (i + 1), version: 'ChildOrContinue', ...children },
      metadata,
    })),
  ]);
  return { parentId, childId };
}

/**
 * The child failed, and its parent continued as new before it was told (the `ResolveChild` of
 * the child's failure reached the new run, which has no such call): the continue-as-new listed
 * the child as still running. Its effect found it failed and changed nothing; then an operator
 * retried the child. The effects are then carried out again from the log's start.
 */
async function writeRetriedChild(store: Awaited<ReturnType<typeof createEventStore>>, environment: string): Promise<{ parentId: string; childId: string }> {
  const parentId = uuidv7();
  const childId = uuidv7();
  const metadata = { actor: 'test', appId: APP, environment, correlationId: uuidv7() };
  const at = new Date().toISOString();
  const dispatched = { workflowId: parentId, appId: APP, environment, name: 'ChildOrContinue', tag: null, input: ['t', 300, 0], parent: null, scheduleId: null, dispatchedAt: at };
  await store.append(`workflow-${parentId}`, [
    { id: uuidv7(), type: 'WorkflowDispatched', data: dispatched, metadata },
    { id: uuidv7(), type: 'ChildWorkflowStarted', data: { seq: 0, childId, name: 'Child', args: ['raced'], tag: 't', wait: true }, metadata },
  ]);
  const child = { workflowId: childId, appId: APP, environment, name: 'Child', tag: 't', input: ['raced'], parent: { workflowId: parentId, seq: 0 }, scheduleId: null, dispatchedAt: at };
  await store.append(`workflow-${childId}`, [
    { id: uuidv7(), type: 'WorkflowDispatched', data: child, metadata },
    { id: uuidv7(), type: 'WorkflowFailed', data: { error: { message: 'charge declined' } }, metadata },
  ]);
  await store.append(`workflow-${parentId}`, [
    {
      id: uuidv7(),
      type: 'WorkflowContinuedAsNew',
      data: { ...dispatched, input: ['t', 300, 1, 'timed out'], run: 2, seqBase: 2, version: 'ChildOrContinue', awaitedChildren: [childId], childrenEndedFrom: 0 },
      metadata,
    },
  ]);
  await store.append(`workflow-${childId}`, [{ id: uuidv7(), type: 'WorkflowRetried', data: { resetTasks: [], retriedAt: new Date().toISOString() }, metadata }]);
  return { parentId, childId };
}

/**
 * The histories of the two describes below (each in its own environment) are written into one
 * store before one instance starts on it: its effects reactor starts from the log's start and
 * carries out the effects of both, as it would of either alone.
 */
describe('histories written before the instance started (its effects reactor at the log\'s start)', () => {
  let service: Service | undefined;
  const formats = unique('continued-formats');
  const retriedEnvironment = unique('continued-retried');
  let older: { parentId: string; childId: string };
  let current: { parentId: string; childId: string };
  let previous: { parentId: string; childId: string };
  let olderThenCurrent: { parentId: string; childId: string };
  let retriedChild: { parentId: string; childId: string };
  beforeAll(async () => {
    const storeUrl = freshStoreUrl();
    const store = await createEventStore(storeUrl);
    older = await writeParent(store, formats, [{}]);
    current = await writeParent(store, formats, [{ awaitedChildren: [], childrenEndedFrom: 0 }]);
    // The version before this one listed the children without saying from where: taken as from the start.
    previous = await writeParent(store, formats, [{ awaitedChildren: [] }]);
    // An older version's continue-as-new, then this version's: the second ended only its own run's children (from seq 2 on).
    olderThenCurrent = await writeParent(store, formats, [{}, { awaitedChildren: [], childrenEndedFrom: 2 }]);
    retriedChild = await writeRetriedChild(store, retriedEnvironment);
    await store.close();
    // Its effects reactor starts from the log's start: each child is created by its creation effect.
    service = await startService({ storeUrl });
  }, 60_000);
  afterAll(async () => {
    await service?.stop();
  });

  describe('a child its parent awaited when the parent continued as new, recorded by an older version or by this one', () => {
    it('ends it when this version recorded the continue-as-new, and leaves it running when an older one did, even if this one continued after it', async () => {
      const engine = new Engine(service!, formats);
      for (const ended of [current, previous]) {
        await engine.waitForState(ended.childId, 'TERMINATED');
        expect(ofType(await engine.history(ended.childId), 'WorkflowTerminated').map((e) => e.data.reason)).toEqual([`its parent workflow ${ended.parentId} continued as new without waiting for it`]);
      }
      await engine.effectsCaughtUp();
      for (const left of [older, olderThenCurrent]) {
        expect((await engine.workflow(left.childId)).state).toBe('RUNNING');
        expect(ofType(await engine.history(left.childId), 'WorkflowTerminated')).toEqual([]);
      }
    }, 60_000);
  });

  describe('a child that failed while its parent continued as new, retried since', () => {
    it('runs on across a replay of its parent\'s continue-as-new effect, as it did when that effect first ran', async () => {
      const engine = new Engine(service!, retriedEnvironment);
      const { childId } = retriedChild;
      await engine.effectsCaughtUp();
      expect(ofType(await engine.history(childId), 'WorkflowTerminated')).toEqual([]);
      expect((await engine.workflow(childId)).state).toBe('RUNNING');
    }, 60_000);
  });
});
