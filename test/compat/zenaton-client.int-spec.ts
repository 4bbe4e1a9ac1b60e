/**
 * The original service's own Node.js client, the `zenaton` package from npm (0.8.0, its default
 * "serverless" code path), pointed at Baton with ZENATON_GATEWAY_URL and used unchanged. Every
 * call is then checked through Baton's own queries: the workflow's state and history, the task,
 * the schedule. Workflows run on a real worker process serving the test fixtures.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import zenaton from 'zenaton';
import { Service, startService } from '../support/service.js';
import { killAllWorkers, startWorker } from '../support/worker.js';
import { waitFor } from '../support/wait-for.js';
import { APP, Engine, unique } from '../engine/engine-helpers.js';

const ENV = 'zenaton';

describe('the original zenaton npm client (0.8.0) against Baton', () => {
  let service: Service;
  let engine: Engine;
  let client: InstanceType<typeof zenaton.Client>;
  const previousGateway = process.env.ZENATON_GATEWAY_URL;

  const query = async <T = any>(document: string, variables: Record<string, unknown>): Promise<T> => {
    const response = await service.gql<T>(document, { appId: APP, environment: ENV, ...variables });
    expect(response.body.errors).toBeUndefined();
    return response.body.data!;
  };
  const task = async (id: string) =>
    (await query('query($appId: String!, $environment: String!, $id: ID!) { task(appId: $appId, environment: $environment, id: $id) { name state tag input output } }', { id })).task;
  const SCHEDULE_FIELDS = 'id kind name tag cron cronDescription timezone nextFireAt nextFirings(count: 3) { at local }';
  const schedule = async (id: string) =>
    (await query(`query($appId: String!, $environment: String!, $id: ID!) { schedule(appId: $appId, environment: $environment, id: $id) { ${SCHEDULE_FIELDS} } }`, { id })).schedule;
  const schedulesNamed = async (name: string) =>
    (
      await query(
        `query($appId: String!, $environment: String!, $name: String) { schedules(filter: { appId: $appId, environment: $environment, name: $name }) { nodes { ${SCHEDULE_FIELDS} } } }`,
        { name },
      )
    ).schedules.nodes;
  const types = async (id: string) => (await engine.history(id)).map((e) => e.type);

  beforeAll(async () => {
    service = await startService();
    await startWorker({ url: service.url, token: service.token, environment: ENV });
    engine = new Engine(service, ENV);
    // The client reads the gateway from the environment at every request and posts to `${url}/graphql`.
    process.env.ZENATON_GATEWAY_URL = service.url;
    client = new zenaton.Client(APP, service.token, ENV);
  });

  afterAll(async () => {
    if (previousGateway === undefined) delete process.env.ZENATON_GATEWAY_URL;
    else process.env.ZENATON_GATEWAY_URL = previousGateway;
    await killAllWorkers();
    await service?.stop();
  });

  it('is the 0.8.0 package on its default (serverless) code path', () => {
    expect(zenaton.infos).toEqual({ appVersion: '0.8.0', codePath: 'serverless' });
  });

  it('dispatches a workflow with a tag, then finds it by name and tag to send an event, pause, resume and terminate it', async () => {
    const tag = unique('email:ada');
    const dispatched = await client.run.withTag(tag).workflow('Listener');
    const id = dispatched!.id;
    expect(await engine.workflow(id)).toMatchObject({ name: 'Listener', tag, state: 'RUNNING' });
    await engine.waitForEventType(id, 'DecisionCompleted');

    const byTag = () => client.select.workflow('Listener').withTag(tag);
    expect(await byTag().send('ping', 1, 'two')).toEqual({ status: 'OK' });
    await engine.waitForEventType(id, 'WorkflowEventReceived', (d) => d.name === 'ping' && JSON.stringify(d.data) === '[1,"two"]');

    expect(await byTag().pause()).toEqual({ status: 'OK' });
    expect((await engine.workflow(id)).state).toBe('PAUSED');
    expect(await byTag().resume()).toEqual({ status: 'OK' });
    expect((await engine.workflow(id)).state).toBe('RUNNING');
    // terminate resolves to undefined whatever Baton answers: the client reads `killWorkflows`.
    expect(await byTag().terminate()).toBeUndefined();
    expect((await engine.workflow(id)).state).toBe('TERMINATED');

    const history = await types(id);
    for (const type of ['WorkflowDispatched', 'WorkflowEventReceived', 'WorkflowPaused', 'WorkflowResumed', 'WorkflowTerminated']) expect(history).toContain(type);
    expect(history.indexOf('WorkflowPaused')).toBeLessThan(history.indexOf('WorkflowResumed'));
    expect(history.indexOf('WorkflowResumed')).toBeLessThan(history.indexOf('WorkflowTerminated'));
  });

  it('selects by id with the name (the form select.workflow(name).withId(id) sends), and reads a name that disagrees as not found', async () => {
    const { id } = (await client.run.workflow('Listener'))!;
    expect(await client.select.workflow('Listener').withId(id).send('ping', 'by id')).toEqual({ status: 'OK' });
    await engine.waitForEventType(id, 'WorkflowEventReceived', (d) => JSON.stringify(d.data) === '["by id"]');

    // Another name: Baton answers NOT_FOUND with `type: "NOT_FOUND"`, which the client turns into a
    // quiet null instead of throwing; nothing happens to the workflow.
    expect(await client.select.workflow('Collector').withId(id).pause()).toBeNull();
    expect(await client.select.workflow('Listener').withId('00000000-0000-7000-8000-000000000000').pause()).toBeNull();
    expect(await types(id)).not.toContain('WorkflowPaused');
    expect((await engine.workflow(id)).state).toBe('RUNNING');
    // The answer the client parsed: the field null in `data`, the error typed NOT_FOUND (and coded).
    const raw = await service.gql('mutation($input: PauseWorkflowsInput!) { pauseWorkflows(input: $input) { status } }', {
      input: { appId: APP, environment: ENV, selector: { name: 'Collector', id } },
    });
    expect(raw.body).toEqual({
      data: { pauseWorkflows: null },
      errors: [{ message: `workflow ${id} not found`, path: ['pauseWorkflows'], type: 'NOT_FOUND', extensions: { code: 'NOT_FOUND' } }],
    });

    await client.select.workflow('Listener').withId(id).terminate();
    expect((await engine.workflow(id)).state).toBe('TERMINATED');
  });

  it('events sent right after the dispatch, before a worker has run the workflow, reach it in order', async () => {
    const tag = unique('eager');
    const { id } = (await client.run.withTag(tag).workflow('Listener'))!;
    const byTag = () => client.select.workflow('Listener').withTag(tag);
    expect(await byTag().send('ping', 1)).toEqual({ status: 'OK' });
    expect(await client.select.workflow('Listener').withId(id).send('ping', 2)).toEqual({ status: 'OK' });
    expect(await byTag().send('stop')).toEqual({ status: 'OK' });
    expect(await engine.waitForState(id)).toMatchObject({ state: 'COMPLETED', result: [[1], [2]] });
  });

  it('selects by an id given back in upper case (as some databases hand UUIDs back): the same workflow, not a quiet null', async () => {
    const { id } = (await client.run.workflow('Listener'))!;
    await engine.waitForEventType(id, 'DecisionCompleted');
    expect(await client.select.workflow('Listener').withId(id.toUpperCase()).send('ping', 'upper')).toEqual({ status: 'OK' });
    await engine.waitForEventType(id, 'WorkflowEventReceived', (d) => JSON.stringify(d.data) === '["upper"]');
    expect(await client.select.workflow().withId(id.toUpperCase()).pause()).toEqual({ status: 'OK' });
    expect((await engine.workflow(id)).state).toBe('PAUSED');
    const raw = await service.gql('mutation($input: ResumeWorkflowsInput!) { resumeWorkflows(input: $input) { status workflowIds } }', {
      input: { appId: APP, environment: ENV, selector: { id: id.toUpperCase() } },
    });
    expect(raw.body).toEqual({ data: { resumeWorkflows: { status: 'OK', workflowIds: [id] } } });
    await client.select.workflow('Listener').withId(id.toUpperCase()).terminate();
    expect((await engine.workflow(id)).state).toBe('TERMINATED');
  });

  it('one tag on many workflows: a name-and-tag selection reaches each of them, through pause, events while paused and resume; one that matches none resolves NO_MATCH', async () => {
    const tag = unique('account:42');
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await client.run.withTag(tag).workflow('Listener'))!.id);
    const stranger = (await client.run.withTag(`${tag}-other`).workflow('Listener'))!.id;
    // A numeric tag is sent as its string, as the client documents.
    const numbered = (await client.run.withTag(4242).workflow('Listener'))!.id;
    expect((await engine.workflow(numbered)).tag).toBe('4242');
    for (const id of ids) await engine.waitForEventType(id, 'DecisionCompleted');

    const byTag = () => client.select.workflow('Listener').withTag(tag);
    expect(await byTag().pause()).toEqual({ status: 'OK' });
    for (const id of ids) expect((await engine.workflow(id)).state).toBe('PAUSED');
    expect((await engine.workflow(stranger)).state).toBe('RUNNING');
    // Events sent while paused are recorded, and acted on after resume, in order.
    expect(await byTag().send('ping', 'while paused')).toEqual({ status: 'OK' });
    expect(await byTag().resume()).toEqual({ status: 'OK' });
    expect(await byTag().send('ping', 'after resume')).toEqual({ status: 'OK' });
    expect(await byTag().send('stop')).toEqual({ status: 'OK' });
    for (const id of ids) expect((await engine.waitForState(id)).result).toEqual([['while paused'], ['after resume']]);
    expect((await engine.workflow(stranger)).state).toBe('RUNNING');

    // Finished: a name-and-tag selection matches none of them any more; by id, the workflow is
    // matched but nothing is delivered.
    expect(await byTag().send('ping', 'too late')).toEqual({ status: 'NO_MATCH' });
    expect(await byTag().pause()).toEqual({ status: 'NO_MATCH' });
    expect(await client.select.workflow('Listener').withId(ids[0]).send('ping', 'too late')).toEqual({ status: 'OK' });
    expect(JSON.stringify(await engine.history(ids[0]))).not.toContain('too late');
    expect(await client.select.workflow('Listener').withTag(unique('nobody')).send('ping')).toEqual({ status: 'NO_MATCH' });

    await client.select.workflow('Listener').withTag(`${tag}-other`).terminate();
    await client.select.workflow('Listener').withId(numbered).terminate();
    expect((await engine.workflow(stranger)).state).toBe('TERMINATED');
  });

  it('surfaces refusals as the ExternalZenatonError its users catch, with "(operation) field: reason"', async () => {
    const refusal = async (call: () => Promise<unknown>) => {
      try {
        await call();
      } catch (error) {
        return error as Error;
      }
      throw new Error('the call resolved');
    };
    const tagAlone = await refusal(() => client.select.workflow(undefined).withTag('email:ada').send('ping'));
    expect(tagAlone).toBeInstanceOf(zenaton.Errors.ExternalZenatonError);
    expect(tagAlone.message).toBe('(sendEventToWorkflows) selector: a tag alone is not a selector; give the workflow name with it');

    const tagAndId = await refusal(() => client.select.workflow('Listener').withTag('email:ada').withId('00000000-0000-7000-8000-000000000000').pause());
    expect(tagAndId).toBeInstanceOf(zenaton.Errors.ExternalZenatonError);
    expect(tagAndId.message).toBe('(pauseWorkflows) selector: an id selector takes no tag');

    const cron = await refusal(() => client.schedule('0 0 31 2 * *').workflow('Noop'));
    expect(cron).toBeInstanceOf(zenaton.Errors.ExternalZenatonError);
    expect(cron.message).toBe('(scheduleWorkflow) cron: "0 0 31 2 * *" never fires (no matching date exists, or its years are past)');

    const tooBig = await refusal(() => client.run.workflow('Listener', 'x'.repeat(300 * 1024)));
    expect(tooBig).toBeInstanceOf(zenaton.Errors.ExternalZenatonError);
    expect(tooBig.message).toBe('(dispatchWorkflow) input: must be at most 262144 bytes of JSON');

    const stranger = new zenaton.Client(APP, 'not-a-baton-token', ENV, 'stranger');
    const unauthenticated = await refusal(() => stranger.run.workflow('Listener'));
    expect(unauthenticated).toBeInstanceOf(zenaton.Errors.ExternalZenatonError);
    expect(unauthenticated.message).toBe('unknown or revoked API token');

    const otherApp = new zenaton.Client('another-app', service.token, ENV, 'other-app');
    const forbidden = await refusal(() => otherApp.run.task('echo', 1));
    expect(forbidden).toBeInstanceOf(zenaton.Errors.ExternalZenatonError);
    expect(forbidden.message).toMatch(/^\(dispatchTask\) .*another-app/);
  });

  it('runs the version a Name_vN name asks for (sent as name and version)', async () => {
    // The worker serves Versioned_v1 and Versioned_v2; without the version, v2 (the highest) would run.
    const { id } = (await client.run.workflow('Versioned_v1'))!;
    expect(await engine.workflow(id)).toMatchObject({ name: 'Versioned_v1' });
    await engine.waitForEventType(id, 'TaskCompleted');
    expect((await engine.workflow(id)).version).toBe('Versioned_v1');
    await client.select.workflow('Versioned').withId(id).send('go');
    expect((await engine.waitForState(id)).result).toEqual({ version: 'v1' });
    const history = JSON.stringify(await engine.history(id));
    expect(history).toContain('v1 step');
    expect(history).not.toContain('v2 step');
  });

  it('dispatches and schedules a name with two version suffixes, which the client splits at the last one', async () => {
    // `Order_v2_v3` is sent as name `Order_v2`, version `v3`; it used to be refused as two versions.
    const name = `${unique('Order').replace(/-/g, '')}_v2_v3`;
    const { id } = (await client.run.workflow(name))!;
    expect((await engine.workflow(id)).name).toBe(name);
    const scheduled = await client.schedule('0 2 * * * *').workflow(name);
    expect((await schedule(scheduled!.id)).name).toBe(name);
    await client.select.workflow(name).withId(id).terminate();
    expect((await engine.workflow(id)).state).toBe('TERMINATED');
  });

  it('dispatches and schedules a Name_vN whose N is long (a date-stamped version), which the client sends as the version', async () => {
    // The client splits any `_v` and digits off the name; nine digits and fewer used to be all Baton took.
    for (const version of ['v2020012001', 'v20200120013000123456789']) {
      const name = `${unique('Report').replace(/-/g, '')}_${version}`;
      const { id } = (await client.run.workflow(name))!;
      expect((await engine.workflow(id)).name).toBe(name);
      const scheduled = await client.schedule('0 2 * * * *').workflow(name);
      expect((await schedule(scheduled!.id)).name).toBe(name);
      await client.select.workflow(name).withId(id).terminate();
    }
    // A name and version longer together than a name may be is refused on the name, as a long name is.
    const tooLong = await client.run.workflow(`${'N'.repeat(250)}_v1234567`).then(
      () => null,
      (error: Error) => error,
    );
    expect(tooLong).toBeInstanceOf(zenaton.Errors.ExternalZenatonError);
    expect(tooLong!.message).toBe('(dispatchWorkflow) name: with its version, must be at most 256 characters');
  });

  it('what does not carry over, as the migration guide says: a pinned-version selection', async () => {
    // Dispatched as `Versioned`, it runs Versioned_v2; `Versioned_v2` (sent as it is) does not pick it.
    const tag = unique('pinned');
    const { id } = (await client.run.withTag(tag).workflow('Versioned'))!;
    await engine.waitForEventType(id, 'TaskCompleted');
    expect(await engine.workflow(id)).toMatchObject({ name: 'Versioned', version: 'Versioned_v2' });
    expect(await client.select.workflow('Versioned_v2').withTag(tag).send('go')).toEqual({ status: 'NO_MATCH' });
    expect(await client.select.workflow('Versioned_v2').withId(id).send('go')).toBeNull();
    expect(await client.select.workflow('Versioned').withTag(tag).send('go')).toEqual({ status: 'OK' });
    expect((await engine.waitForState(id)).result).toEqual({ version: 'v2' });

  });

  it('a gateway URL that ends in a slash works (the client posts to //graphql), authenticated as /graphql', async () => {
    process.env.ZENATON_GATEWAY_URL = `${service.url}/`;
    try {
      const { id } = (await client.run.workflow('Noop'))!;
      expect((await engine.waitForState(id)).state).toBe('COMPLETED');
    } finally {
      process.env.ZENATON_GATEWAY_URL = service.url;
    }
    const anonymous = await fetch(`${service.url}//graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"{ __typename }"}' });
    expect({ status: anonymous.status, code: ((await anonymous.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0].extensions.code }).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
  });

  it('a gateway URL that already ends in /graphql is a refusal the client throws as such (not a crash on a missing `data`)', async () => {
    process.env.ZENATON_GATEWAY_URL = `${service.url}/graphql`;
    try {
      const error = await client.run.workflow('Noop').then(
        () => null,
        (e: Error) => e,
      );
      // The 404 is coded NOT_FOUND but not typed so: typed, the client would return the absent `data` and fail reading it.
      expect(error).toBeInstanceOf(zenaton.Errors.ExternalZenatonError);
      expect(error!.message).toBe('Cannot POST /graphql/graphql');
    } finally {
      process.env.ZENATON_GATEWAY_URL = service.url;
    }
  });

  it('dispatches a task', async () => {
    const { id } = (await client.run.task('echo', 'hello from zenaton'))!;
    const done = await waitFor(async () => {
      const t = await task(id);
      return t?.state === 'COMPLETED' ? t : null;
    }, { timeoutMs: 15_000, description: 'the task to complete' });
    expect(done).toMatchObject({ name: 'echo', tag: null, input: '["hello from zenaton"]', output: '"hello from zenaton"' });
    // A tag on a task is dropped by the client itself, as the migration guide says.
    const tagged = (await client.run.withTag('invoice:42').task('echo', 'tagged'))!;
    expect(await task(tagged.id)).toMatchObject({ name: 'echo', tag: null, input: '["tagged"]' });
  });

  it("schedules a workflow and a task with the original's six-field cron (`0 2 * * * *`: daily at 02:00)", async () => {
    const tag = unique('team:data');
    const workflowSchedule = await client.schedule('0 2 * * * *').withTag(tag).workflow('Noop', { format: 'pdf' });
    const s = await schedule(workflowSchedule!.id);
    expect(s).toMatchObject({ kind: 'WORKFLOW', name: 'Noop', tag, cron: '0 2 * * * *', cronDescription: 'At 02:00', timezone: 'UTC' });
    const next = new Date(s.nextFireAt);
    expect([next.getUTCHours(), next.getUTCMinutes(), next.getUTCSeconds()]).toEqual([2, 0, 0]);
    expect(s.nextFirings.map((f: { at: string }) => Date.parse(f.at) - next.getTime())).toEqual([0, 86_400_000, 2 * 86_400_000]);

    // A versioned name schedules that version; a null tag is no tag.
    const versioned = await client.schedule('30 9 * * MON 2099').workflow('Versioned_v2');
    expect(await schedule(versioned!.id)).toMatchObject({ name: 'Versioned_v2', tag: null, cron: '30 9 * * MON 2099' });

    // scheduleTask resolves to undefined (the client reads `createTaskSchedule`): find it by name.
    const taskName = unique('nightlyTask');
    expect(await client.schedule('0 2 * * * *').task(taskName, 1)).toBeUndefined();
    const [taskSchedule] = await schedulesNamed(taskName);
    expect(taskSchedule).toMatchObject({ kind: 'TASK', cron: '0 2 * * * *', cronDescription: 'At 02:00' });

    // The same call again is a second schedule, as the migration guide warns.
    await client.schedule('0 2 * * * *').task(taskName, 1);
    expect(new Set((await schedulesNamed(taskName)).map((s: { id: string }) => s.id)).size).toBe(2);
  });

  it('schedules odd but valid six-field crons (`?`, `0/15`, L, #, W) to fire when they say', async () => {
    const DAY = 86_400_000;
    const firings = async (cron: string): Promise<Date[]> => {
      const created = await client.schedule(cron).workflow('Noop');
      const s = await schedule(created!.id);
      expect(s.cron).toBe(cron);
      return s.nextFirings.map((f: { at: string }) => new Date(f.at));
    };
    const at = (d: Date) => [d.getUTCHours(), d.getUTCMinutes()];
    const lastDayOfMonth = (d: Date) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();

    // `?` is "no specific value": the other day field alone decides (it used to fire every day).
    const mondays = await firings('0 2 ? * MON *');
    for (const d of mondays) expect([d.getUTCDay(), ...at(d)]).toEqual([1, 2, 0]);
    expect(mondays[1].getTime() - mondays[0].getTime()).toBe(7 * DAY);
    for (const d of await firings('0 8 1 * ? *')) expect([d.getUTCDate(), ...at(d)]).toEqual([1, 8, 0]);
    for (const d of await firings('0 0 L * ? *')) expect(d.getUTCDate()).toBe(lastDayOfMonth(d));
    for (const d of await firings('0 0 ? * 5L *')) expect([d.getUTCDay(), lastDayOfMonth(d) - d.getUTCDate() < 7]).toEqual([5, true]);
    for (const d of await firings('0 0 ? * FRI#3 *')) expect([d.getUTCDay(), d.getUTCDate() >= 15 && d.getUTCDate() <= 21]).toEqual([5, true]);
    for (const d of await firings('0 12 LW * ? *')) {
      expect([1, 2, 3, 4, 5]).toContain(d.getUTCDay());
      expect(lastDayOfMonth(d) - d.getUTCDate()).toBeLessThan(3);
    }
    // A step with a start (Quartz and AWS write `0/15`): refused before.
    const quarters = await firings('0/15 * * * ? *');
    for (const d of quarters) expect([0, 15, 30, 45]).toContain(d.getUTCMinutes());
    expect(quarters[1].getTime() - quarters[0].getTime()).toBe(15 * 60_000);
    for (const d of await firings('5/20 9 * * ? *')) expect([5, 25, 45]).toContain(d.getUTCMinutes());
    // Sunday as 0 and as SUN.
    for (const cron of ['30 6 * * 0 *', '30 6 ? * SUN *']) for (const d of await firings(cron)) expect([d.getUTCDay(), ...at(d)]).toEqual([0, 6, 30]);
  });

  it('runs the task a task schedule created by the client fires, with its arguments', async () => {
    const taskName = unique('everySecondTask');
    // Resolves to undefined (the client reads `createTaskSchedule`): the schedule is found by name.
    expect(await client.schedule('* * * * * * *').task(taskName, 'from a schedule', 7)).toBeUndefined();
    const [created] = await schedulesNamed(taskName);
    expect(created).toMatchObject({ kind: 'TASK', name: taskName });
    const byName = 'query($appId: String!, $environment: String!, $name: String) { tasks(filter: { appId: $appId, environment: $environment, name: $name }) { nodes { id name input scheduleId } } }';
    const fired = await waitFor(async () => (await query(byName, { name: taskName })).tasks.nodes[0], { timeoutMs: 10_000, description: 'a task dispatched by the schedule' });
    expect(fired).toMatchObject({ name: taskName, input: '["from a schedule",7]', scheduleId: created.id });
    const removed = await service.gql('mutation($input: DeleteScheduleInput!) { deleteSchedule(input: $input) { id state } }', { input: { appId: APP, environment: ENV, id: created.id } });
    expect(removed.body.errors).toBeUndefined();
  });

  it('dispatches what a schedule created by the client fires, with its tag', async () => {
    const tag = unique('every-second');
    // Seven fields: seconds first, then the year; fires every second.
    const created = await client.schedule('* * * * * * *').withTag(tag).workflow('Noop');
    const byTag = 'query($appId: String!, $environment: String!, $tag: String) { workflows(filter: { appId: $appId, environment: $environment, tag: $tag }) { nodes { id name tag scheduleId } } }';
    const fired = await waitFor(async () => (await query(byTag, { tag })).workflows.nodes[0], { timeoutMs: 10_000, description: 'a workflow dispatched by the schedule' });
    expect(fired).toMatchObject({ name: 'Noop', tag, scheduleId: created!.id });
    await engine.waitForState(fired.id);
    const removed = await service.gql('mutation($input: DeleteScheduleInput!) { deleteSchedule(input: $input) { id state } }', { input: { appId: APP, environment: ENV, id: created!.id } });
    expect(removed.body.errors).toBeUndefined();
  });
});
