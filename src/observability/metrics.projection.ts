import type { IEventHandler } from '@nestjs/cqrs';
import { Projection, StoredEvent } from '../event-store/event-registry.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { MetricsService } from './metrics.service.js';

type Outcome = [metric: 'decisions' | 'tasks' | 'workflows' | 'scheduleOccurrences', outcome: string];

const OUTCOMES: Record<string, Outcome> = {
  DecisionStarted: ['decisions', 'started'],
  DecisionCompleted: ['decisions', 'completed'],
  DecisionFailed: ['decisions', 'failed'],
  DecisionTimedOut: ['decisions', 'timed_out'],
  DecisionDiscarded: ['decisions', 'discarded'],
  TaskStarted: ['tasks', 'started'],
  TaskCompleted: ['tasks', 'completed'],
  TaskAttemptFailed: ['tasks', 'attempt_failed'],
  TaskFailed: ['tasks', 'failed'],
  WorkflowDispatched: ['workflows', 'dispatched'],
  WorkflowCompleted: ['workflows', 'completed'],
  WorkflowFailed: ['workflows', 'failed'],
  WorkflowTerminated: ['workflows', 'terminated'],
  ScheduleFired: ['scheduleOccurrences', 'fired'],
  ScheduleOccurrenceSkipped: ['scheduleOccurrences', 'skipped'],
  ScheduleOccurrenceBuffered: ['scheduleOccurrences', 'buffered'],
};

/**
 * Counts outcomes from the log itself, so they mean the same whichever instance (or worker)
 * caused them. Only events that arrive after this instance's read models went live are counted:
 * a restart's replay of old history does not inflate the counters. Every instance counts every
 * event: aggregate with max(), not sum(), across instances.
 */
@Projection(Object.keys(OUTCOMES))
export class MetricsProjection implements IEventHandler<StoredEvent> {
  constructor(
    private readonly metrics: MetricsService,
    private readonly projections: ProjectionRunner,
  ) {}

  handle(stored: StoredEvent): void {
    if (!this.projections.isLive) return;
    const outcome = OUTCOMES[stored.type];
    if (!outcome) return;
    this.metrics[outcome[0]].inc({ outcome: outcome[1] });
    if (stored.type === 'ScheduleFired') {
      const { occurrence, firedAt } = stored.data as { occurrence: string; firedAt: string };
      const lag = (Date.parse(firedAt) - Date.parse(occurrence)) / 1000;
      if (Number.isFinite(lag)) this.metrics.scheduleLag.observe(Math.max(0, lag));
    }
  }
}
