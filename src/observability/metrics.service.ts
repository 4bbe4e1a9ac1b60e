import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DeciderRunner } from '../event-store/decider-runner.js';
import { EVENT_STORE, type EventStore } from '../event-store/event-store.port.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { BytesInFlight } from './bytes-in-flight.js';
import { LifecycleService } from '../health/lifecycle.service.js';
import { EffectsReactor } from '../workers/effects.reactor.js';
import { EngineState } from '../workers/engine-state.js';
import { SchedulesReadModel } from '../schedules/schedules.read-model.js';

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000];
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 3600];

/**
 * Baton's Prometheus metrics (prom-client), on a registry of their own and served at
 * `/metrics`. Other modules inject this service to record what they do; gauges that describe
 * the engine (queue depth, oldest waiting work, parked polls, projection lag) are sampled when
 * scraped. docs/OPERATIONS.md lists every series.
 */
@Injectable()
export class MetricsService implements OnModuleInit {
  readonly registry = new Registry();

  readonly httpRequests = new Histogram({
    name: 'baton_http_request_duration_seconds',
    help: 'HTTP requests by method, route and status code, with their duration (the _count is the request rate).',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly graphqlOperations = new Histogram({
    name: 'baton_graphql_operation_duration_seconds',
    help: 'GraphQL operations by operation (its root fields), type and outcome (ok or the first error code), with their duration.',
    labelNames: ['operation', 'type', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly storeAppends = new Counter({
    name: 'baton_store_appends_total',
    help: 'Appends written to the event store (one per caller; failed ones are conflicts).',
    labelNames: ['store', 'result'] as const,
    registers: [this.registry],
  });

  readonly storeEvents = new Counter({
    name: 'baton_store_events_appended_total',
    help: 'Events written to the event store.',
    labelNames: ['store'] as const,
    registers: [this.registry],
  });

  readonly storeCommitBatch = new Histogram({
    name: 'baton_store_commit_batch_size',
    help: 'Appends committed together in one transaction (group commit on the embedded store; always 1 on EventStoreDB).',
    labelNames: ['store'] as const,
    buckets: BATCH_BUCKETS,
    registers: [this.registry],
  });

  readonly storeCommitSeconds = new Histogram({
    name: 'baton_store_commit_duration_seconds',
    help: 'Duration of one durable commit.',
    labelNames: ['store'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  readonly decisions = new Counter({
    name: 'baton_decisions_total',
    help: 'Workflow decisions by outcome (started = claimed by a worker, completed, failed), as recorded in the log.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly tasks = new Counter({
    name: 'baton_task_attempts_total',
    help: 'Task attempts by outcome (started, completed, attempt_failed = will be retried or failed, failed = no attempts left), as recorded in the log.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly workflows = new Counter({
    name: 'baton_workflows_total',
    help: 'Workflows dispatched and finished, by outcome (dispatched, completed, failed, terminated), as recorded in the log.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly scheduleOccurrences = new Counter({
    name: 'baton_schedule_occurrences_total',
    help: 'Schedule occurrences by outcome (fired, skipped, buffered), as recorded in the log.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly scheduleLag = new Histogram({
    name: 'baton_schedule_fire_lag_seconds',
    help: 'How late a schedule fired after its occurrence time.',
    buckets: LAG_BUCKETS,
    registers: [this.registry],
  });

  readonly queueDepth = new Gauge({
    name: 'baton_queue_depth',
    help: 'Work a worker could claim now, by app, environment, kind (decision or task) and workflow or task name.',
    labelNames: ['app', 'environment', 'kind', 'name'] as const,
    registers: [this.registry],
  });

  readonly queueOldest = new Gauge({
    name: 'baton_queue_oldest_seconds',
    help: 'Age of the longest-waiting claimable work, by app, environment, kind and name.',
    labelNames: ['app', 'environment', 'kind', 'name'] as const,
    registers: [this.registry],
  });

  readonly parkedPolls = new Gauge({
    name: 'baton_long_polls_parked',
    help: 'Worker long polls waiting for work on this instance.',
    registers: [this.registry],
  });

  readonly pollRounds = new Counter({
    name: 'baton_poll_rounds_total',
    help: 'Claim rounds of worker long polls on this instance: `first` the round a poll starts with, `again` each round after it parked (woken for work, or looking again after a lost claim); `report` a report filling the slots its outcomes left with waiting work, as a poll would.',
    labelNames: ['round'] as const,
    registers: [this.registry],
  });

  readonly pollWakeups = new Counter({
    name: 'baton_poll_wakeups_total',
    help: 'Parked worker long polls woken on this instance because work for their names became claimable.',
    registers: [this.registry],
  });

  private pollCountsSeen = { firstRounds: 0, rounds: 0, reportRounds: 0, wakeups: 0 };

  readonly projectionLagEvents = new Gauge({
    name: 'baton_projection_lag_events',
    help: "Events in the store's log not yet applied to this instance's read models.",
    registers: [this.registry],
  });

  readonly projectionLagSeconds = new Gauge({
    name: 'baton_projection_lag_seconds',
    help: 'Age of the oldest event not yet applied to the read models (0 when caught up).',
    registers: [this.registry],
  });

  readonly projectionCheckpoint = new Gauge({
    name: 'baton_projection_checkpoint',
    help: 'Position of the last event applied to the read models.',
    registers: [this.registry],
  });

  readonly engineHeld = new Gauge({
    name: 'baton_engine_held',
    help: "Workflows and standalone tasks the engine holds in memory on this instance (kind): the ones not ended. Follows the work in flight, never the store's history.",
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly schedulesHeld = new Gauge({
    name: 'baton_schedules_held',
    help: 'What the scheduler holds in memory on this instance (kind): `schedule` the schedules that can fire (active, paused), `awaiting_dispatch` fired occurrences whose dispatch is not in the log yet. Deleted schedules are not held.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly streamLoads = new Counter({
    name: 'baton_stream_loads_total',
    help: "Streams whose state the write path had to build (not in its cache), by where it started: the stream's start (or a workflow's last run) or a read model's snapshot.",
    labelNames: ['from'] as const,
    registers: [this.registry],
  });

  readonly streamEventsRead = new Counter({
    name: 'baton_stream_events_read_total',
    help: 'Events the write path read back from the store to build or refresh the state of a stream (cold loads, conflicts, looks before a no-op answer).',
    registers: [this.registry],
  });

  private streamStatsSeen = { loads: 0, snapshotLoads: 0, eventsRead: 0 };

  readonly effectsHeld = new Gauge({
    name: 'baton_effects_held',
    help: "Effects the effects reactor holds on this instance (children and tasks to start, selections to act on, ends to tell a parent): `queued`, `running`, or `backing_off` after a failed attempt.",
    labelNames: ['state'] as const,
    registers: [this.registry],
  });

  readonly effectsRetries = new Counter({
    name: 'baton_effects_retries_total',
    help: 'Failed attempts at an effect that the effects reactor will retry (the store did not answer, or a fault).',
    registers: [this.registry],
  });

  readonly effectsCheckpoint = new Gauge({
    name: 'baton_effects_checkpoint',
    help: "Position before the effects reactor's oldest effect not carried out (a restart reads the log again after it).",
    registers: [this.registry],
  });

  readonly effectsAppsOverBound = new Gauge({
    name: 'baton_effects_apps_over_bound',
    help: 'Apps with more effects waiting than one app may hold (4,096, or 8 MiB of their data): their later effects are read again from the log as they catch up.',
    registers: [this.registry],
  });

  private effectsRetriesSeen = 0;

  readonly bytesInFlight = new Gauge({
    name: 'baton_http_bytes_in_flight',
    help: "Bytes this instance's GraphQL requests hold: their bodies as declared and their answers' stored values (bounded by MAX_BYTES_IN_FLIGHT).",
    registers: [this.registry],
  });

  readonly bytesInFlightRefusals = new Counter({
    name: 'baton_http_bytes_in_flight_refusals_total',
    help: 'GraphQL requests answered 503 RATE_LIMITED because the instance held MAX_BYTES_IN_FLIGHT.',
    registers: [this.registry],
  });

  private bytesInFlightRefusalsSeen = 0;

  readonly ready = new Gauge({
    name: 'baton_ready',
    help: '1 while the read models are live and the instance is not draining, else 0.',
    registers: [this.registry],
  });

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly projections: ProjectionRunner,
    private readonly engine: EngineState,
    private readonly lifecycle: LifecycleService,
    private readonly runner: DeciderRunner,
    private readonly schedules: SchedulesReadModel,
    private readonly effects: EffectsReactor,
    private readonly bytes: BytesInFlight,
  ) {
    collectDefaultMetrics({ register: this.registry, prefix: 'baton_' });
  }

  onModuleInit(): void {
    this.store.onCommit?.((commit) => {
      const store = this.store.kind;
      this.storeAppends.inc({ store, result: 'ok' }, commit.appends - commit.failed);
      if (commit.failed > 0) this.storeAppends.inc({ store, result: 'rejected' }, commit.failed);
      this.storeEvents.inc({ store }, commit.events);
      this.storeCommitBatch.observe({ store }, commit.appends);
      this.storeCommitSeconds.observe({ store }, commit.seconds);
    });
  }

  /**
   * Projection lag: the store's head against this instance's checkpoint, and the age of the
   * oldest event not yet applied. Run by the sampling job (METRICS_SAMPLE_MS), so a scrape
   * never waits on the store.
   */
  async sampleProjectionLag(now = Date.now): Promise<void> {
    const checkpoint = this.projections.checkpoint;
    const head = (await this.store.headPosition()) ?? -1n;
    if (head <= checkpoint) {
      this.projectionLagEvents.set(0);
      this.projectionLagSeconds.set(0);
      return;
    }
    const [next] = await this.store.readAll({ after: checkpoint < 0n ? undefined : checkpoint, maxCount: 1 });
    this.projectionLagEvents.set(Number(head - checkpoint));
    this.projectionLagSeconds.set(next ? Math.max(0, (now() - next.recordedAt.getTime()) / 1000) : 0);
  }

  /** Everything in Prometheus' text format, with the engine gauges sampled now. */
  async scrape(): Promise<string> {
    this.sampleEngine();
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private sampleEngine(now = Date.now()): void {
    const { queues, parkedPolls } = this.engine.queueSnapshot();
    this.queueDepth.reset();
    this.queueOldest.reset();
    for (const q of queues) {
      const labels = { app: q.appId, environment: q.environment, kind: q.kind, name: q.name };
      this.queueDepth.set(labels, q.depth);
      this.queueOldest.set(labels, Math.max(0, (now - q.oldestSince) / 1000));
    }
    this.parkedPolls.set(parkedPolls);
    const polls = this.engine.pollCounts;
    this.pollRounds.inc({ round: 'first' }, polls.firstRounds - this.pollCountsSeen.firstRounds);
    this.pollRounds.inc({ round: 'again' }, polls.rounds - this.pollCountsSeen.rounds);
    this.pollRounds.inc({ round: 'report' }, polls.reportRounds - this.pollCountsSeen.reportRounds);
    this.pollWakeups.inc(polls.wakeups - this.pollCountsSeen.wakeups);
    this.pollCountsSeen = { firstRounds: polls.firstRounds, rounds: polls.rounds, reportRounds: polls.reportRounds, wakeups: polls.wakeups };
    this.engineHeld.set({ kind: 'workflow' }, this.engine.workflows.size);
    this.engineHeld.set({ kind: 'task' }, this.engine.tasks.size);
    const schedules = this.schedules.held;
    this.schedulesHeld.set({ kind: 'schedule' }, schedules.schedules);
    this.schedulesHeld.set({ kind: 'awaiting_dispatch' }, schedules.awaiting);

    const streams = this.runner.queues.statistics;
    const seen = this.streamStatsSeen;
    this.streamLoads.inc({ from: 'stream' }, streams.loads - streams.snapshotLoads - (seen.loads - seen.snapshotLoads));
    this.streamLoads.inc({ from: 'snapshot' }, streams.snapshotLoads - seen.snapshotLoads);
    this.streamEventsRead.inc(streams.eventsRead - seen.eventsRead);
    this.streamStatsSeen = { loads: streams.loads, snapshotLoads: streams.snapshotLoads, eventsRead: streams.eventsRead };

    const effects = this.effects.heldByState;
    this.effectsHeld.set({ state: 'queued' }, effects.queued);
    this.effectsHeld.set({ state: 'running' }, effects.running);
    this.effectsHeld.set({ state: 'backing_off' }, effects.backingOff);
    this.effectsRetries.inc(this.effects.retries - this.effectsRetriesSeen);
    this.effectsRetriesSeen = this.effects.retries;
    this.effectsCheckpoint.set(Number(this.effects.checkpoint));
    this.effectsAppsOverBound.set(this.effects.appsOverBound);

    this.bytesInFlight.set(this.bytes.held);
    this.bytesInFlightRefusals.inc(this.bytes.refused - this.bytesInFlightRefusalsSeen);
    this.bytesInFlightRefusalsSeen = this.bytes.refused;

    this.projectionCheckpoint.set(Number(this.projections.checkpoint));
    // As /health/ready: not while a dead projection subscription is being restarted either.
    this.ready.set(this.projections.ready && !this.lifecycle.draining ? 1 : 0);
  }
}
