import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { DeciderRunner } from '../event-store/decider-runner.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { CLOCK, type Clock } from '../shared/clock.js';
import { FINAL_STATUSES } from '../workflows/domain/workflow.decider.js';
import { WorkflowsReadModel } from '../workflows/workflows.read-model.js';
import { ScheduleDispatcher } from './schedule-dispatcher.js';
import { scheduleDecider } from './domain/schedule.decider.js';
import { Scheduler } from './scheduler.js';
import { SchedulesReadModel, SchedulesTable } from './schedules.read-model.js';

/**
 * Fires this instance's schedules: the plain `Scheduler` wired to the store, the injected clock,
 * the schedules and workflows read models and the dispatchers. It starts once the read models
 * have caught up with the log, so missed occurrences and undispatched firings are judged on the
 * whole history.
 */
@Injectable()
export class SchedulerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Scheduler');
  readonly scheduler: Scheduler;

  constructor(
    model: SchedulesReadModel,
    table: SchedulesTable,
    workflows: WorkflowsReadModel,
    dispatcher: ScheduleDispatcher,
    runner: DeciderRunner,
    private readonly projections: ProjectionRunner,
    @Inject(CLOCK) clock: Clock,
  ) {
    // A schedule's stream grows by an event per firing and has no reset point: a cold load (after a
    // restart, or once the stream cache dropped it) starts from the state the schedules read model
    // holds and reads only what followed, not every firing since the schedule was created. A deleted
    // schedule is no longer in memory: its row in `rm_schedules` is the snapshot.
    runner.queues.useSnapshots(scheduleDecider, (streamId) => {
      const id = streamId.slice('schedule-'.length);
      const view = model.getById(id) ?? table.getById(id);
      return view && { state: view.state, revision: view.revision };
    });
    this.scheduler = new Scheduler({
      clock,
      // Through the per-stream queues: a firing costs the same after a week of them as after one.
      decide: (streamId, decider, command, context) => runner.run(streamId, decider, command, context, { readYourWrites: false }),
      model,
      dispatch: (spec, dispatchId, context) => dispatcher.dispatch(spec, dispatchId, context),
      isRunning: (spec, workflowId) => {
        const view = workflows.get(spec.appId, spec.environment, workflowId);
        return view === undefined || !FINAL_STATUSES.has(view.status);
      },
      caughtUp: (position) => projections.waitFor(position),
      logger: { log: (m) => this.logger.log(m), warn: (m) => this.logger.warn(m) },
    });
  }

  onApplicationBootstrap(): void {
    this.projections.onLive(() => this.scheduler.start());
  }

  onApplicationShutdown(): void {
    this.scheduler.stop();
  }
}
