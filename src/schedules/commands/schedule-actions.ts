import { Inject, Injectable, Logger } from '@nestjs/common';
import { DeciderRunner } from '../../event-store/decider-runner.js';
import { ReadFence } from '../../event-store/read-fence.js';
import { contextFor } from '../../shared/command-context.js';
import { CLOCK, type Clock } from '../../shared/clock.js';
import { NotFoundError } from '../../shared/errors.js';
import { canonicalId, isUuid, uuidv7 } from '../../shared/ids.js';
import { assertScope } from '../../tokens/principal.js';
import type { Principal } from '../../tokens/tokens.projection.js';
import { ScheduleEvent, scheduleDecider } from '../domain/schedule.decider.js';
import { ScheduleDispatcher } from '../schedule-dispatcher.js';
import { ScheduleType, toScheduleType } from '../schedule.types.js';
import { SchedulesReadModel, SchedulesTable } from '../schedules.read-model.js';
import { ScheduleRefInput } from './schedule-fields.js';

export type ScheduleAction = 'PauseSchedule' | 'ResumeSchedule' | 'DeleteSchedule';

/** Pause, resume, delete and trigger: one command on the schedule's stream each, answered from the read model. */
@Injectable()
export class ScheduleActions {
  private readonly logger = new Logger('Schedules');

  constructor(
    private readonly runner: DeciderRunner,
    private readonly model: SchedulesReadModel,
    private readonly table: SchedulesTable,
    private readonly dispatcher: ScheduleDispatcher,
    private readonly fence: ReadFence,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async apply(principal: Principal, given: ScheduleRefInput, action: ScheduleAction): Promise<ScheduleType> {
    const input = { ...given, id: canonicalId(given.id) };
    const ref = this.ref(principal, input);
    const { position, seenPosition } = await this.runner.run(`schedule-${input.id}`, scheduleDecider, { type: action, ...ref }, contextFor(principal, input.appId, input.environment));
    // Nothing recorded (pausing a paused schedule): the state it decided on may be another
    // instance's write this instance's read models have not reached yet, and the answer is read
    // from them. Read up to it, as a recorded change waits for its own append.
    if (position === undefined && seenPosition !== undefined) await this.fence.atLeast(seenPosition);
    return this.view(input);
  }

  /** Fires the schedule now, whatever its cron and overlap policy; returns the dispatched id. */
  async trigger(principal: Principal, given: ScheduleRefInput): Promise<{ id: string; schedule: ScheduleType }> {
    const input = { ...given, id: canonicalId(given.id) };
    const ref = this.ref(principal, input);
    const context = contextFor(principal, input.appId, input.environment);
    const { events, state } = await this.runner.run(
      `schedule-${input.id}`,
      scheduleDecider,
      { type: 'TriggerSchedule', triggerId: uuidv7(ref.now), ...ref },
      context,
    );
    const triggered = events.find((e): e is Extract<ScheduleEvent, { type: 'ScheduleTriggered' }> => e.type === 'ScheduleTriggered')!;
    if (state.status === 'none') throw new NotFoundError('schedule', input.id);
    try {
      await this.dispatcher.dispatch(state.spec, triggered.data.dispatchId, { ...context, actor: `schedule:${input.id}` });
    } catch (error) {
      // The trigger is recorded: the scheduler's recovery dispatches it (same id) a little later.
      this.logger.warn(`schedule ${input.id}: dispatch of trigger ${triggered.data.dispatchId} failed, will retry: ${(error as Error).message}`);
    }
    return { id: triggered.data.dispatchId, schedule: this.view(input) };
  }

  private ref(principal: Principal, input: ScheduleRefInput) {
    assertScope(principal, input.appId, input.environment);
    if (!isUuid(input.id)) throw new NotFoundError('schedule', input.id);
    return { scheduleId: input.id, appId: input.appId, environment: input.environment, now: this.clock.now() };
  }

  private view(input: ScheduleRefInput): ScheduleType {
    // From rm_schedules: a deleted schedule is no longer in memory.
    const view = this.table.get(input.appId, input.environment, input.id);
    if (!view) throw new NotFoundError('schedule', input.id);
    return toScheduleType(view, this.model);
  }
}
