/**
 * scheduleTask / scheduleWorkflow and schedule management through the real service (GraphQL over
 * HTTP, embedded store). Seconds-level expressions keep the suite short.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTokenViaCli, Service, startService } from '../support/service.js';
import { waitFor } from '../support/wait-for.js';
import { HistoryRow, Schedules, UUID_V7, data, error, unique } from './schedule-helpers.js';

const EVERY_SECOND = '*/1 * * * * * *';
const YEARLY = '@yearly';

describe('schedules through the API', () => {
  let service: Service;
  let api: Schedules;

  beforeAll(async () => {
    service = await startService();
    api = new Schedules(service);
  });
  afterAll(() => service?.stop());

  it('the documented scheduleTask body works unchanged and returns a UUID v7', async () => {
    const body = {
      query: 'mutation($input: ScheduleTaskInput!) { scheduleTask(input: $input) { id } }',
      variables: { input: { appId: 'demo', environment: 'schedules', cron: '*/5 * * * *', name: unique('SendDigest'), input: '["weekly"]' } },
    };
    const response = await service.gql(body.query, body.variables);
    expect(response.body).toEqual({ data: { scheduleTask: { id: expect.stringMatching(UUID_V7) } } });
  });

  it('scheduleTask with a seconds-level cron dispatches standalone tasks carrying the schedule id', async () => {
    const name = unique('Tick');
    const created = data(await api.scheduleTaskRaw({ cron: EVERY_SECOND, name, input: '[1, {"a": true}]' })).scheduleTask;
    expect(created.id).toMatch(UUID_V7);
    expect(Date.parse(created.nextFireAt) - Date.now()).toBeLessThanOrEqual(1000);

    const tasks = await waitFor(async () => {
      const list = await api.tasks(name);
      return list.length >= 3 ? list : null;
    }, { timeoutMs: 10_000, intervalMs: 100, description: 'three scheduled tasks' });
    for (const task of tasks) expect(task).toMatchObject({ name, scheduleId: created.id, input: '[1,{"a":true}]' });

    await api.act('delete', created.id);
    const fired = (await api.history(created.id)).filter((e) => e.type === 'ScheduleFired');
    const tasksAfter = await api.tasks(name);
    expect(new Set(tasksAfter.map((t) => t.id))).toEqual(new Set(fired.map((e) => e.data.dispatchId)));
    const occurrences = fired.map((e) => Date.parse(e.data.occurrence));
    for (let i = 1; i < occurrences.length; i++) expect(occurrences[i] - occurrences[i - 1]).toBe(1000);
  });

  it('scheduleWorkflow with a tag gives the tag to every instance', async () => {
    const name = unique('Nightly');
    const id = await api.scheduleWorkflow({ cron: EVERY_SECOND, name, tag: 'team:data', input: '[{"format":"pdf"}]' });
    const workflows = await waitFor(async () => {
      const list = await api.workflows({ name, tag: 'team:data' });
      return list.length >= 2 ? list : null;
    }, { timeoutMs: 10_000, intervalMs: 100, description: 'two scheduled workflows' });
    await api.act('delete', id);
    for (const w of workflows) expect(w).toMatchObject({ name, tag: 'team:data', scheduleId: id, input: '[{"format":"pdf"}]', state: 'RUNNING' });
    expect(await api.schedule(id)).toMatchObject({ kind: 'WORKFLOW', tag: 'team:data', overlapPolicy: 'ALLOW', state: 'DELETED' });
  });

  describe('validation', () => {
    const valid = { name: 'Report', cron: '*/5 * * * *', input: '[]' };

    it.each([
      ['8 fields', { cron: '0 0 0 1 1 * 2030 *' }, 'cron', /expected 5 fields .* got 8/],
      ['a year before 1970', { cron: '0 2 * * * 1969' }, 'cron', /year field "1969"/],
      ['4 fields', { cron: '* * * *' }, 'cron', /got 4/],
      ['an unknown macro', { cron: '@reboot' }, 'cron', /unknown macro/],
      ['a bad value', { cron: '61 * * * *' }, 'cron', /minute: 61/],
      ['an expression that never fires', { cron: '0 0 30 2 *' }, 'cron', /never fires/],
      ['an empty cron', { cron: '' }, 'cron', /empty/],
      ['an unknown time zone', { timezone: 'Mars/Olympus_Mons' }, 'timezone', /unknown time zone/],
      ['input that is not a JSON array', { input: '{"a":1}' }, 'input', /JSON array/],
      ['input that is not JSON', { input: '[1,' }, 'input', /not valid JSON/],
      ['an empty name', { name: '' }, 'name', /empty/],
      ['a negative catch-up window', { catchUpWindowMs: -1 }, 'catchUpWindowMs', /less than 0/],
      ['a catch-up window over 7 days', { catchUpWindowMs: 7 * 24 * 3_600_000 + 1 }, 'catchUpWindowMs', /greater than/],
    ])('scheduleTask refuses %s (BAD_USER_INPUT on the field)', async (_what, fields, field, reason) => {
      expect(error(await api.scheduleTaskRaw({ ...valid, ...fields }), 'BAD_USER_INPUT', field)).toMatch(reason);
    });

    it('scheduleWorkflow refuses the same, and an unknown overlap policy', async () => {
      expect(error(await api.scheduleWorkflowRaw({ ...valid, cron: '* * * * * * * *' }), 'BAD_USER_INPUT', 'cron')).toMatch(/got 8/);
      expect(error(await api.scheduleWorkflowRaw({ ...valid, timezone: 'Nowhere' }), 'BAD_USER_INPUT', 'timezone')).toMatch(/unknown time zone/);
      error(await api.scheduleWorkflowRaw({ ...valid, overlapPolicy: 'SOMETIMES' }), 'BAD_USER_INPUT', 'overlapPolicy');
      error(await api.scheduleWorkflowRaw({ ...valid, tag: 'x'.repeat(257) }), 'BAD_USER_INPUT', 'tag');
      error(await api.scheduleWorkflowRaw({ ...valid, appId: '' }), 'BAD_USER_INPUT', 'appId');
    });

    it.each([
      ['61 * * * *', 'minute'],
      ['0 2 * * MOO *', 'day-of-week'],
      ['0 2 * * * 2100', 'year'],
      ['61 0 2 * * * *', 'second'],
    ])('names the cron field at fault in %j (extensions.cronField)', async (cron, cronField) => {
      const response = await api.scheduleTaskRaw({ ...valid, cron });
      expect(error(response, 'BAD_USER_INPUT', 'cron')).toContain(`${cronField} field`);
      expect(response.body.errors![0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'cron', cronField });
    });

    it.each([
      ['Asia/Kolkata', '+05:30'],
      ['Europe/Kyiv', '+02:00'],
      ['America/Argentina/Buenos_Aires', '-03:00'],
      ['US/Eastern', '-05:00'],
    ])('keeps the time zone %s as given, not the older name the runtime may resolve it to', async (timezone, offset) => {
      const id = await api.scheduleTask({ ...valid, cron: '0 12 1 1 *', timezone });
      const s = data(
        await service.gql('query($id: ID!) { schedule(appId: "demo", environment: "schedules", id: $id) { timezone nextFirings(count: 1) { local } } }', { id }),
      ).schedule;
      expect(s).toEqual({ timezone, nextFirings: [{ local: expect.stringMatching(new RegExp(`-01-01T12:00:00\\${offset}$`)) }] });
    });

    it('a time zone in the wrong case is read back in its proper case', async () => {
      for (const [given, kept] of [['europe/paris', 'Europe/Paris'], ['EUROPE/PARIS', 'Europe/Paris'], ['america/new_york', 'America/New_York']]) {
        const id = await api.scheduleTask({ ...valid, timezone: given });
        expect((await api.schedule(id))!.timezone).toBe(kept);
      }
      // A link in one case throughout: the name the runtime resolves it to, in the zone's proper case.
      const id = await api.scheduleTask({ ...valid, timezone: 'ASIA/KOLKATA' });
      expect((await api.schedule(id))!.timezone).toMatch(/^Asia\/(Kolkata|Calcutta)$/);
    });

    it('a token for another app is FORBIDDEN', async () => {
      error(await api.scheduleTaskRaw({ ...valid, appId: 'someone-else' }), 'FORBIDDEN');
    });

    it('accepts macros, 7 fields, a time zone and the additive options', async () => {
      const id = await api.scheduleWorkflow({
        ...valid,
        cron: '@Daily',
        timezone: 'america/new_york',
        overlapPolicy: 'BUFFER_ONE',
        catchUpWindowMs: 300_000,
      });
      expect(await api.schedule(id)).toMatchObject({ cron: '@daily', timezone: 'America/New_York', overlapPolicy: 'BUFFER_ONE', catchUpWindowMs: 300_000, state: 'ACTIVE' });
      const next = new Date((await api.schedule(id))!.nextFireAt);
      expect(new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', hour: 'numeric', minute: 'numeric', hourCycle: 'h23' }).format(next)).toBe('00:00');
      const task = await api.scheduleTask({ ...valid, cron: '30 0 9 * * MON-FRI *' });
      expect(await api.schedule(task)).toMatchObject({ cron: '30 0 9 * * MON-FRI *', timezone: 'UTC', catchUpWindowMs: 60_000, overlapPolicy: 'ALLOW', kind: 'TASK' });
    });
  });

  describe('the three cron forms, in words and upcoming', () => {
    const view = (id: string) =>
      service.gql('query($id: ID!) { schedule(appId: "demo", environment: "schedules", id: $id) { cron cronDescription timezone nextFireAt nextFirings(count: 3) { at local } } }', { id });

    it("six fields are the original service's: `0 2 * * * *` fires daily at 02:00, shown in words", async () => {
      const id = await api.scheduleWorkflow({ name: unique('Nightly'), cron: '0 2 * * * *', input: '[]' });
      const s = data(await view(id)).schedule;
      expect(s).toMatchObject({ cron: '0 2 * * * *', cronDescription: 'At 02:00', timezone: 'UTC' });
      const [a, b, c] = s.nextFirings.map((f: { at: string }) => Date.parse(f.at));
      expect(new Date(a).toISOString()).toMatch(/T02:00:00\.000Z$/);
      expect([b - a, c - b]).toEqual([86_400_000, 86_400_000]);
      expect(s.nextFirings[0]).toEqual({ at: s.nextFireAt, local: new Date(a).toISOString().replace('.000Z', 'Z') });
    });

    it('a year step from any year (`*/2`, as the refusal of a bad year suggests) counts from 1970, the first year', async () => {
      const refusal = error(await api.scheduleTaskRaw({ name: 'Report', cron: '0 2 * * * 1969', input: '[]' }), 'BAD_USER_INPUT', 'cron');
      expect(refusal).toContain('*/2');
      const id = await api.scheduleTask({ name: unique('EvenYears'), cron: '0 0 1 1 * */2', input: '[]' });
      const s = data(await view(id)).schedule;
      expect(s.nextFirings.map((f: { at: string }) => f.at.slice(0, 10))).toEqual(['2028-01-01', '2030-01-01', '2032-01-01']);
      expect(s.cronDescription).toMatch(/every 2 years/);
    });

    it('a day-of-week range 0-7 (Sunday to Sunday, every day) is said as every day of the week', async () => {
      const id = await api.scheduleTask({ name: unique('EveryDay'), cron: '0 2 * * 0-7', input: '[]' });
      const s = data(await view(id)).schedule;
      expect(s.cronDescription).not.toContain('Sunday through Sunday');
      expect(s.cronDescription).toBe('At 02:00, Sunday through Saturday');
      const [a, b] = s.nextFirings.map((f: { at: string }) => Date.parse(f.at));
      expect(b - a).toBe(86_400_000);
    });

    it('`FRI#L` (the last Friday, as croner also writes it) is described, not "An error occurred"', async () => {
      const id = await api.scheduleTask({ name: unique('LastFriday'), cron: '0 18 * * FRI#L', input: '[]' });
      const s = data(await view(id)).schedule;
      expect(s.cronDescription).toBe('At 18:00, on the last Friday of the month');
    });

    it('next firings are given in the zone, across daylight saving and the end of a year field', async () => {
      // Only in 2099: the last Sunday of March at 02:30 does not exist in Paris (02:00 → 03:00).
      const dst = await api.scheduleTask({ name: unique('Dst'), cron: '30 2 * 3 SUN 2099', timezone: 'Europe/Paris', input: '[]' });
      const s = data(await view(dst)).schedule;
      expect(s.cronDescription).toBe('At 02:30, only on Sunday, only in March, only in 2099');
      expect(s.nextFirings.map((f: { local: string }) => f.local)).toEqual(['2099-03-01T02:30:00+01:00', '2099-03-08T02:30:00+01:00', '2099-03-15T02:30:00+01:00']);
      const all = data(await service.gql('query($id: ID!) { schedule(appId: "demo", environment: "schedules", id: $id) { nextFirings(count: 10) { at local } } }', { id: dst })).schedule.nextFirings;
      // Five Sundays in March 2099; the last (the 29th) falls in the gap and fires at 03:00 CEST; then the year ends.
      expect(all.map((f: { local: string }) => f.local)).toEqual([
        '2099-03-01T02:30:00+01:00',
        '2099-03-08T02:30:00+01:00',
        '2099-03-15T02:30:00+01:00',
        '2099-03-22T02:30:00+01:00',
        '2099-03-29T03:00:00+02:00',
      ]);
      const refused = await service.gql('query($id: ID!) { schedule(appId: "demo", environment: "schedules", id: $id) { nextFirings(count: 0) { at } } }', { id: dst });
      expect(refused.body.errors?.[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'count' });
    });
  });

  describe('management', () => {
    it('pause, resume, trigger and delete are recorded, and the list reflects them', async () => {
      const name = unique('Managed');
      const id = await api.scheduleTask({ name, cron: YEARLY, input: '["x"]' });
      expect(await api.schedule(id)).toMatchObject({ state: 'ACTIVE', firedCount: 0, nextFireAt: expect.any(String) });

      const triggered = await api.trigger(id);
      expect(triggered.id).toMatch(UUID_V7);
      expect(triggered.schedule).toMatchObject({ triggeredCount: 1, lastDispatchId: triggered.id });
      expect((await api.tasks(name)).map((t) => [t.id, t.scheduleId])).toEqual([[triggered.id, id]]);

      expect(await api.act('pause', id)).toMatchObject({ state: 'PAUSED', nextFireAt: null });
      expect(await api.act('pause', id)).toMatchObject({ state: 'PAUSED' });
      expect((await api.list({ name, state: 'PAUSED' })).nodes.map((s) => s.id)).toEqual([id]);
      expect((await api.list({ name, state: 'ACTIVE' })).nodes).toEqual([]);

      const whilePaused = await api.trigger(id);
      expect(whilePaused.schedule).toMatchObject({ state: 'PAUSED', triggeredCount: 2 });

      expect(await api.act('resume', id)).toMatchObject({ state: 'ACTIVE', nextFireAt: expect.any(String) });
      expect(await api.act('delete', id)).toMatchObject({ state: 'DELETED', nextFireAt: null });
      expect(await api.act('delete', id)).toMatchObject({ state: 'DELETED' });
      error(await api.actRaw('pause', id), 'CONFLICT');
      error(await api.actRaw('resume', id), 'CONFLICT');
      error(await api.triggerRaw(id), 'CONFLICT');

      expect((await api.history(id)).map((e: HistoryRow) => e.type)).toEqual([
        'ScheduleCreated',
        'ScheduleTriggered',
        'SchedulePaused',
        'ScheduleTriggered',
        'ScheduleResumed',
        'ScheduleDeleted',
      ]);
      expect((await api.list({ name })).nodes).toMatchObject([{ id, state: 'DELETED', triggeredCount: 2 }]);
    });

    it("an unknown id, a malformed one, or another app's schedule is NOT_FOUND", async () => {
      const unknown = '01900000-0000-7000-8000-000000000000';
      for (const action of ['pause', 'resume', 'delete'] as const) {
        error(await api.actRaw(action, unknown), 'NOT_FOUND');
        error(await api.actRaw(action, 'not-a-uuid'), 'NOT_FOUND');
      }
      error(await api.triggerRaw(unknown), 'NOT_FOUND');
      error(await api.historyRaw(unknown), 'NOT_FOUND');
      expect(await api.schedule(unknown)).toBeNull();

      const otherToken = await createTokenViaCli(service.storeUrl, ['other-app']);
      const other = new Schedules(service, 'schedules', 'other-app', otherToken);
      const theirs = await waitFor(async () => (await other.scheduleTaskRaw({ name: 'Theirs', cron: YEARLY })).body.data?.scheduleTask?.id, {
        timeoutMs: 10_000,
        intervalMs: 50,
        description: 'the new token to be accepted',
      });
      for (const action of ['pause', 'resume', 'delete'] as const) error(await api.actRaw(action, theirs), 'NOT_FOUND');
      error(await api.triggerRaw(theirs), 'NOT_FOUND');
      expect(await api.schedule(theirs)).toBeNull();
      error(await api.actRaw('pause', theirs, 'other-app'), 'FORBIDDEN');
    });

    it('pages through the list', async () => {
      const name = unique('Paged');
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push(await api.scheduleTask({ name, cron: YEARLY }));
      const first = await api.list({ name }, { first: 2 });
      expect(first).toMatchObject({ totalCount: 3, pageInfo: { hasNextPage: true } });
      const second = await api.list({ name }, { first: 2, after: first.pageInfo.endCursor! });
      expect([...first.nodes, ...second.nodes].map((s) => s.id)).toEqual(ids);
    });
  });

  describe('overlap policies with real workflows (no worker: an instance runs until terminated)', () => {
    it('SKIP skips occurrences while the last instance runs, and fires again once it is terminated', async () => {
      const name = unique('Skipper');
      const id = await api.scheduleWorkflow({ name, cron: EVERY_SECOND, overlapPolicy: 'SKIP' });
      const [firstRun] = await waitFor(async () => ((await api.workflows({ name })).length === 1 ? api.workflows({ name }) : null), {
        timeoutMs: 10_000,
        intervalMs: 50,
        description: 'the first instance',
      });
      await waitFor(async () => (await api.history(id)).some((e) => e.type === 'ScheduleOccurrenceSkipped' && e.data.reason === 'overlap'), {
        timeoutMs: 10_000,
        intervalMs: 50,
        description: 'an occurrence skipped for overlap',
      });
      expect(await api.workflows({ name })).toHaveLength(1);
      await api.terminate(firstRun.id);
      await waitFor(async () => (await api.workflows({ name })).length === 2, { timeoutMs: 10_000, intervalMs: 50, description: 'the next instance' });
      await api.act('delete', id);
    });

    it('BUFFER_ONE keeps one occurrence and fires it as soon as the last instance ends', async () => {
      const name = unique('Buffered');
      const id = await api.scheduleWorkflow({ name, cron: EVERY_SECOND, overlapPolicy: 'BUFFER_ONE' });
      const kept = await waitFor(async () => (await api.schedule(id))?.bufferedOccurrence, { timeoutMs: 10_000, intervalMs: 50, description: 'a kept occurrence' });
      const [firstRun] = await api.workflows({ name });
      const terminatedAt = Date.now();
      await api.terminate(firstRun.id);
      const history = await waitFor(
        async () => {
          const events = await api.history(id);
          return events.some((e) => e.type === 'ScheduleFired' && e.data.occurrence === kept) ? events : null;
        },
        { timeoutMs: 10_000, intervalMs: 20, description: 'the kept occurrence to fire' },
      );
      await api.act('delete', id);
      const keptFiring = history.find((e) => e.type === 'ScheduleFired' && e.data.occurrence === kept)!;
      // It fired when the instance ended, not at its own time.
      expect(Date.parse(keptFiring.data.firedAt)).toBeGreaterThanOrEqual(terminatedAt);
      expect(history.filter((e) => e.type === 'ScheduleOccurrenceBuffered').length).toBeGreaterThanOrEqual(1);
    });
  });
});
