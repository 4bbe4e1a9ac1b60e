import { Inject, Injectable } from '@nestjs/common';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { CLOCK, type Clock } from '../shared/clock.js';

export interface WorkerSighting {
  workerId: string;
  appId: string;
  environment: string;
  workflows: string[];
  tasks: string[];
  firstSeenAt: number;
  lastSeenAt: number;
  /** Polls of this worker parked on this instance right now. */
  pollsInFlight: number;
}

const FORGET_AFTER_MS = 24 * 3_600_000;

/**
 * The workers this instance has seen, from the worker protocol: a poll says which names a worker
 * serves; polls, reports and heartbeats say it is alive. In memory and per instance (behind a
 * load balancer each instance lists the workers that talk to it). A worker is connected while
 * one of its polls is parked here or it was seen within WORKER_GONE_MS.
 */
@Injectable()
export class WorkerRegistry {
  private readonly workers = new Map<string, WorkerSighting>();

  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
  ) {}

  /** A poll started; call the returned function when it ends. */
  polling(input: { workerId: string; appId: string; environment: string; workflows: string[]; tasks: Array<{ name: string }> }): () => void {
    const now = this.clock.now();
    const key = this.key(input);
    const sighting = this.workers.get(key) ?? { workerId: input.workerId, appId: input.appId, environment: input.environment, workflows: [], tasks: [], firstSeenAt: now, lastSeenAt: now, pollsInFlight: 0 };
    sighting.workflows = [...input.workflows];
    sighting.tasks = input.tasks.map((t) => t.name);
    sighting.lastSeenAt = now;
    sighting.pollsInFlight++;
    this.workers.set(key, sighting);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      sighting.pollsInFlight--;
      sighting.lastSeenAt = this.clock.now();
    };
  }

  /** A report or heartbeat from a worker. */
  seen(input: { workerId: string; appId: string; environment: string }): void {
    const sighting = this.workers.get(this.key(input));
    if (sighting) sighting.lastSeenAt = this.clock.now();
  }

  connected(s: WorkerSighting, now = this.clock.now()): boolean {
    return s.pollsInFlight > 0 || now - s.lastSeenAt < this.config.workerGoneMs;
  }

  /** The workers of a scope seen in the last day, most recently seen first. */
  list(appId: string, environment: string): WorkerSighting[] {
    const now = this.clock.now();
    const found: WorkerSighting[] = [];
    for (const [key, s] of this.workers) {
      if (s.pollsInFlight === 0 && now - s.lastSeenAt > FORGET_AFTER_MS) this.workers.delete(key);
      else if (s.appId === appId && s.environment === environment) found.push(s);
    }
    return found.sort((a, b) => b.lastSeenAt - a.lastSeenAt);
  }

  private key(input: { workerId: string; appId: string; environment: string }): string {
    return `${input.appId}\u0000${input.environment}\u0000${input.workerId}`;
  }
}
