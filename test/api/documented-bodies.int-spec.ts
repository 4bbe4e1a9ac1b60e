/**
 * The request bodies of the original service's documentation, sent byte for byte (placeholders
 * filled in), and their effect read back through the queries.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Service, startService } from '../support/service.js';
import { Client, UUID, expectData, post, unique } from './api-helpers.js';

/** JSON string content: the placeholders below hold no quotes or backslashes. */
const documented = {
  dispatchTask: (appId: string, environment: string, name: string) =>
    String.raw`{"query":"mutation($input: DispatchTaskInput!) { dispatchTask(input: $input) { id } }","variables":{"input":{"appId":"${appId}","environment":"${environment}","name":"${name}","input":"[\"ada@example.com\", 2]"}}}`,
  dispatchWorkflow: (appId: string, environment: string, name: string, tag: string) =>
    String.raw`{"query":"mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }","variables":{"input":{"appId":"${appId}","environment":"${environment}","name":"${name}","input":"[\"ada@example.com\"]","tag":"${tag}"}}}`,
  dispatchWorkflowUntagged: (appId: string, environment: string, name: string) =>
    String.raw`{"query":"mutation($input: DispatchWorkflowInput!) { dispatchWorkflow(input: $input) { id } }","variables":{"input":{"appId":"${appId}","environment":"${environment}","name":"${name}","input":"[]"}}}`,
  sendEventToWorkflows: (appId: string, environment: string, selector: string, event: string) =>
    String.raw`{"query":"mutation($input: SendEventToWorkflowsInput!) { sendEventToWorkflows(input: $input) { status } }","variables":{"input":{"appId":"${appId}","environment":"${environment}","selector":${selector},"name":"${event}","data":"[{\"plan\":\"pro\"}]"}}}`,
  scheduleTask: (appId: string, environment: string, cron: string, name: string) =>
    String.raw`{"query":"mutation($input: ScheduleTaskInput!) { scheduleTask(input: $input) { id } }","variables":{"input":{"appId":"${appId}","environment":"${environment}","cron":"${cron}","name":"${name}","input":"[\"weekly\"]"}}}`,
  scheduleWorkflow: (appId: string, environment: string, cron: string, name: string) =>
    String.raw`{"query":"mutation($input: ScheduleWorkflowInput!) { scheduleWorkflow(input: $input) { id } }","variables":{"input":{"appId":"${appId}","environment":"${environment}","cron":"${cron}","name":"${name}","input":"[{\"format\":\"pdf\"}]"}}}`,
  selectorAction: (mutation: string, inputType: string, appId: string, environment: string, selector: string) =>
    `{"query":"mutation($input: ${inputType}!) { ${mutation}(input: $input) { status } }","variables":{"input":{"appId":"${appId}","environment":"${environment}","selector":${selector}}}}`,
};

describe('documented request bodies', () => {
  let service: Service;
  let api: Client;
  const app = 'demo';
  const env = 'production';

  beforeAll(async () => {
    service = await startService();
    api = new Client(service, app, env);
  });
  afterAll(() => service?.stop());

  it('dispatchTask returns exactly { data: { dispatchTask: { id } } } and the task is stored as sent', async () => {
    const name = unique('SendWelcomeEmail');
    const response = await post(service, documented.dispatchTask(app, env, name));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ data: { dispatchTask: { id: expect.stringMatching(UUID) } } });
    const id = response.body.data.dispatchTask.id;

    const task = await api.task(id);
    expect(task).toMatchObject({ id, appId: app, environment: env, name, state: 'PENDING', attempts: 0 });
    expect(JSON.parse(task!.input)).toEqual(['ada@example.com', 2]);
    const list = await api.tasks({ name });
    expect(list.totalCount).toBe(1);
    expect(list.nodes.map((t) => t.id)).toEqual([id]);
  });

  it('dispatchWorkflow with a tag returns exactly { data: { dispatchWorkflow: { id } } } and stores name, tag and input', async () => {
    const name = unique('Onboarding');
    const tag = `email:${unique('ada')}@example.com`;
    const response = await post(service, documented.dispatchWorkflow(app, env, name, tag));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ data: { dispatchWorkflow: { id: expect.stringMatching(UUID) } } });
    const id = response.body.data.dispatchWorkflow.id;

    const workflow = await api.workflow(id);
    expect(workflow).toMatchObject({ id, appId: app, environment: env, name, tag, state: 'RUNNING', parentId: null, scheduleId: null });
    expect(JSON.parse(workflow!.input)).toEqual(['ada@example.com']);
    const history = await api.history(id);
    expect(history[0]).toMatchObject({ revision: 0, type: 'WorkflowDispatched' });
  });

  it('dispatchWorkflow without the optional tag stores no tag', async () => {
    const name = unique('Untagged');
    const response = await post(service, documented.dispatchWorkflowUntagged(app, env, name));
    expect(response.body).toEqual({ data: { dispatchWorkflow: { id: expect.stringMatching(UUID) } } });
    expect(await api.workflow(response.body.data.dispatchWorkflow.id)).toMatchObject({ name, tag: null, state: 'RUNNING' });
  });

  it('sendEventToWorkflows by { name, tag } returns exactly { status } and records the event', async () => {
    const name = unique('Onboarding');
    const tag = `id:${unique('user')}`;
    const id = await api.dispatchWorkflow(name, { tag });
    const other = await api.dispatchWorkflow(name, { tag: `${tag}-other` });

    const response = await post(service, documented.sendEventToWorkflows(app, env, `{"name":"${name}","tag":"${tag}"}`, 'PlanChosen'));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ data: { sendEventToWorkflows: { status: 'OK' } } });

    const received = (await api.history(id)).filter((e) => e.type === 'WorkflowEventReceived');
    expect(received).toHaveLength(1);
    expect(JSON.parse(received[0].data)).toEqual({ name: 'PlanChosen', data: [{ plan: 'pro' }] });
    expect((await api.history(other)).map((e) => e.type)).not.toContain('WorkflowEventReceived');
  });

  it.each([
    ['scheduleTask', 'TASK', documented.scheduleTask],
    ['scheduleWorkflow', 'WORKFLOW', documented.scheduleWorkflow],
  ] as const)('%s (a %s schedule) returns exactly { data: { … : { id } } } and the schedule is stored as sent, with the six-field cron', async (mutation, kind, body) => {
    const name = unique('Report');
    const response = await post(service, body(app, env, '0 2 * * * *', name));
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ data: { [mutation]: { id: expect.stringMatching(UUID) } } });
    const id = response.body.data[mutation].id;
    const read = await post(
      service,
      JSON.stringify({
        query: 'query($appId: String!, $environment: String!, $id: ID!) { schedule(appId: $appId, environment: $environment, id: $id) { id kind name cron input tag timezone state } }',
        variables: { appId: app, environment: env, id },
      }),
    );
    const schedule = expectData(read).schedule;
    expect(schedule).toMatchObject({ id, kind, name, cron: '0 2 * * * *', tag: null, timezone: 'UTC', state: 'ACTIVE' });
    expect(JSON.parse(schedule.input)).toEqual(kind === 'TASK' ? ['weekly'] : [{ format: 'pdf' }]);
  });

  const selectorForms = [
    { form: '{ id }', selector: (id: string, _name: string, _tag: string) => `{"id":"${id}"}` },
    { form: '{ name }', selector: (_id: string, name: string) => `{"name":"${name}"}` },
    { form: '{ name, tag }', selector: (_id: string, name: string, tag: string) => `{"name":"${name}","tag":"${tag}"}` },
  ];

  describe.each(selectorForms)('with a $form selector', ({ selector }) => {
    it('sendEventToWorkflows answers { status: OK } and the workflow records the event', async () => {
      const name = unique('Billing');
      const tag = `id:${unique('acct')}`;
      const id = await api.dispatchWorkflow(name, { tag });
      const response = await post(service, documented.sendEventToWorkflows(app, env, selector(id, name, tag), 'Invoiced'));
      expect(response.body).toEqual({ data: { sendEventToWorkflows: { status: 'OK' } } });
      expect((await api.history(id)).map((e) => e.type)).toEqual(['WorkflowDispatched', 'WorkflowEventReceived']);
    });

    it('pauseWorkflows answers { status: OK } and the workflow is PAUSED', async () => {
      const name = unique('Billing');
      const tag = `id:${unique('acct')}`;
      const id = await api.dispatchWorkflow(name, { tag });
      const response = await post(service, documented.selectorAction('pauseWorkflows', 'PauseWorkflowsInput', app, env, selector(id, name, tag)));
      expect(response.body).toEqual({ data: { pauseWorkflows: { status: 'OK' } } });
      expect(await api.state(id)).toBe('PAUSED');
    });

    it('resumeWorkflows answers { status: OK } and the paused workflow is RUNNING again', async () => {
      const name = unique('Billing');
      const tag = `id:${unique('acct')}`;
      const id = await api.dispatchWorkflow(name, { tag });
      await api.act('pause', { id });
      const response = await post(service, documented.selectorAction('resumeWorkflows', 'ResumeWorkflowsInput', app, env, selector(id, name, tag)));
      expect(response.body).toEqual({ data: { resumeWorkflows: { status: 'OK' } } });
      expect(await api.state(id)).toBe('RUNNING');
      expect((await api.history(id)).map((e) => e.type)).toEqual(['WorkflowDispatched', 'WorkflowPaused', 'WorkflowResumed']);
    });

    it('terminateWorkflows answers { status: OK } and the workflow is TERMINATED', async () => {
      const name = unique('Billing');
      const tag = `id:${unique('acct')}`;
      const id = await api.dispatchWorkflow(name, { tag });
      const response = await post(service, documented.selectorAction('terminateWorkflows', 'TerminateWorkflowsInput', app, env, selector(id, name, tag)));
      expect(response.body).toEqual({ data: { terminateWorkflows: { status: 'OK' } } });
      expect(await api.state(id)).toBe('TERMINATED');
    });
  });

  it('a documented selector action that matches nothing answers { status: NO_MATCH }', async () => {
    const name = unique('Nobody');
    for (const [mutation, type] of [
      ['pauseWorkflows', 'PauseWorkflowsInput'],
      ['resumeWorkflows', 'ResumeWorkflowsInput'],
      ['terminateWorkflows', 'TerminateWorkflowsInput'],
    ]) {
      const response = await post(service, documented.selectorAction(mutation, type, app, env, `{"name":"${name}","tag":"x"}`));
      expect(response.body).toEqual({ data: { [mutation]: { status: 'NO_MATCH' } } });
    }
    const send = await post(service, documented.sendEventToWorkflows(app, env, `{"name":"${name}"}`, 'Ping'));
    expect(send.body).toEqual({ data: { sendEventToWorkflows: { status: 'NO_MATCH' } } });
  });

  it('the bodies work with the Authorization scheme written in any case and extra spaces', async () => {
    const response = await post(service, documented.dispatchWorkflowUntagged(app, env, unique('Case')), null, { authorization: `bearer   ${service.token}` });
    expect(expectData(response).dispatchWorkflow.id).toMatch(UUID);
  });
});
