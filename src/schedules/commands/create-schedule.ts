import { Inject, Injectable } from '@nestjs/common';
import { BATON_CONFIG, type BatonConfig } from '../../config/config.js';
import { type CommandContext, DeciderRunner } from '../../event-store/decider-runner.js';
import { contextFor } from '../../shared/command-context.js';
import { CLOCK, type Clock } from '../../shared/clock.js';
import type { Json } from '../../event-store/event-store.port.js';
import { uuidv7 } from '../../shared/ids.js';
import { parseJsonArray } from '../../shared/json.js';
import { inputLimits } from '../../shared/limits.js';
import { TooManySchedulesError } from '../../shared/errors.js';
import { assertScope } from '../../tokens/principal.js';
import type { Principal } from '../../tokens/tokens.projection.js';
import { normalizeTimezone, validateCron } from '../domain/cron.js';
import { OverlapPolicy, ScheduleKind, nextFireAt, scheduleDecider } from '../domain/schedule.decider.js';
import { ScheduleResult } from '../schedule.types.js';
import { SchedulesReadModel } from '../schedules.read-model.js';
import { ReadFence } from '../../event-store/read-fence.js';

export interface NewSchedule {
  appId: string;
  environment: string;
  kind: ScheduleKind;
  name: string;
  /**
   * The raw `input` string (a JSON array), checked against the input limits; or the arguments a
   * workflow's decision recorded (`ctx.schedule`), already checked with the decision and taken as
   * they are (as a child workflow's or a task's are).
   */
  input: string | Json[];
  tag: string | null;
  cron: string;
  timezone: string | null;
  overlapPolicy: OverlapPolicy;
  catchUpWindowMs: number | null;
  /** A deterministic id (a schedule a workflow asked for); a new UUID v7 otherwise. */
  scheduleId?: string;
}

/** What scheduleTask and scheduleWorkflow share: checks, then one ScheduleCreated on a new stream. */
@Injectable()
export class ScheduleCreator {
  constructor(
    private readonly runner: DeciderRunner,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
    private readonly schedules: SchedulesReadModel,
    private readonly fence: ReadFence,
  ) {}

  /** Per app, the API creations under way on this instance (MAX_SCHEDULES_PER_APP counts them). */
  private readonly pending = new Map<string, number>();

  /**
   * A schedule through the API. Refused once the app has MAX_SCHEDULES_PER_APP schedules that can
   * fire, as this instance has read them up to the store's head (what any instance acknowledged
   * before this request), plus the creations still under way on this instance: a bound on what
   * every instance holds and fires, not an exact quota (requests racing on several instances can
   * each take the last place). A schedule
   * a workflow's decision asked for (`createFor`) is never refused: the decision is recorded.
   */
  async create(principal: Principal, s: NewSchedule): Promise<ScheduleResult> {
    assertScope(principal, s.appId, s.environment);
    const limit = this.config.maxSchedulesPerApp;
    if (limit <= 0) return this.createFor(contextFor(principal, s.appId, s.environment), s);
    // The schedules other instances created (acknowledged before this request) count too.
    await this.fence.upToHead();
    // Creations still in flight on this instance hold a place: they are not in the read model
    // yet, and without this a burst of requests all read the same count and all passed.
    const pending = this.pending.get(s.appId) ?? 0;
    if (this.schedules.countOf(s.appId) + pending >= limit) throw new TooManySchedulesError(s.appId, limit);
    this.pending.set(s.appId, pending + 1);
    try {
      // The run waits for the read models to reach its append: once it resolves, countOf holds it.
      return await this.createFor(contextFor(principal, s.appId, s.environment), s);
    } finally {
      const left = (this.pending.get(s.appId) ?? 1) - 1;
      if (left > 0) this.pending.set(s.appId, left);
      else this.pending.delete(s.appId);
    }
  }

  /** Creates the schedule on behalf of `context` (already authorised); creating one that exists does nothing. */
  async createFor(context: CommandContext, s: NewSchedule): Promise<ScheduleResult> {
    const input = typeof s.input === 'string' ? parseJsonArray('input', s.input, inputLimits(this.config)) : s.input;
    const now = this.clock.now();
    const timezone = normalizeTimezone(s.timezone);
    validateCron(s.cron, timezone, now);
    const scheduleId = s.scheduleId ?? uuidv7(now);
    const { state } = await this.runner.run(
      `schedule-${scheduleId}`,
      scheduleDecider,
      {
        type: 'CreateSchedule',
        scheduleId,
        appId: s.appId,
        environment: s.environment,
        kind: s.kind,
        name: s.name,
        input,
        tag: s.tag,
        cron: s.cron,
        timezone,
        overlapPolicy: s.overlapPolicy,
        catchUpWindowMs: s.catchUpWindowMs ?? this.config.scheduleCatchUpMs,
        now,
      },
      context,
    );
    const next = nextFireAt(state);
    return { id: scheduleId, nextFireAt: next === null ? null : new Date(next) };
  }
}
