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
 * Characters of worker ids and served names one token's sightings may hold on an instance. A poll
 * may name 2,000 names of 256 characters: without a budget, a worker token polling under a fresh
 * worker id each time kept half a megabyte per poll for a day (400 polls took 230 MB).
 */
export const WORKER_NAMES_BUDGET_PER_TOKEN = 8 * 1024 * 1024;

/** Counted per sighting on top of its names, so that many small ones are bounded too. */
const SIGHTING_OVERHEAD = 256;

interface Held {
  sighting: WorkerSighting;
  tokenId: string;
  size: number;
}

/** One token's sightings, least recently polled first, and the characters they hold. */
interface TokenSightings {
  keys: Set<string>;
  size: number;
}

/**
 * The workers this instance has seen, from the worker protocol: a poll says which names a worker
 * serves; polls, reports and heartbeats say it is alive. In memory and per instance (behind a
 * load balancer each instance lists the workers that talk to it). A worker is connected while
 * one of its polls is parked here or it was seen within WORKER_GONE_MS.
 *
 * Bounded per token: at most MAX_WORKERS_PER_TOKEN worker ids and WORKER_NAMES_BUDGET_PER_TOKEN
 * characters of names; past either, the token's least recently polling worker is forgotten (it
 * comes back at its next poll). One token cannot grow the instance's memory, nor push another
 * token's workers out of the list.
 */
@Injectable()
export class WorkerRegistry {
  private readonly workers = new Map<string, Held>();
  private readonly byToken = new Map<string, TokenSightings>();

  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(BATON_CONFIG) private readonly config: BatonConfig,
  ) {}

  /** A poll by a token started; call the returned function when it ends. */
  polling(
    input: { workerId: string; appId: string; environment: string; workflows: string[]; tasks: Array<{ name: string }> },
    tokenId: string,
  ): () => void {
    const now = this.clock.now();
    const key = this.key(input);
    const held = this.workers.get(key);
    const sighting = held?.sighting ?? { workerId: input.workerId, appId: input.appId, environment: input.environment, workflows: [], tasks: [], firstSeenAt: now, lastSeenAt: now, pollsInFlight: 0 };
    sighting.workflows = [...input.workflows];
    sighting.tasks = input.tasks.map((t) => t.name);
    sighting.lastSeenAt = now;
    sighting.pollsInFlight++;
    if (held) this.release(key, held);
    this.hold(key, { sighting, tokenId, size: sizeOf(key, sighting) });
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
    const held = this.workers.get(this.key(input));
    if (held) held.sighting.lastSeenAt = this.clock.now();
  }

  connected(s: WorkerSighting, now = this.clock.now()): boolean {
    return s.pollsInFlight > 0 || now - s.lastSeenAt < this.config.workerGoneMs;
  }

  /** The workers of a scope seen in the last day, most recently seen first. */
  list(appId: string, environment: string): WorkerSighting[] {
    const now = this.clock.now();
    const found: WorkerSighting[] = [];
    for (const [key, held] of this.workers) {
      const s = held.sighting;
      if (s.pollsInFlight === 0 && now - s.lastSeenAt > FORGET_AFTER_MS) this.release(key, held);
      else if (s.appId === appId && s.environment === environment) found.push(s);
    }
    return found.sort((a, b) => b.lastSeenAt - a.lastSeenAt);
  }

  /** Records a sighting as its token's most recent, then forgets the token's oldest ones past its bounds. */
  private hold(key: string, held: Held): void {
    this.workers.set(key, held);
    let mine = this.byToken.get(held.tokenId);
    if (!mine) this.byToken.set(held.tokenId, (mine = { keys: new Set(), size: 0 }));
    mine.keys.add(key);
    mine.size += held.size;
    for (const oldest of mine.keys) {
      if (mine.keys.size <= this.config.maxWorkersPerToken && mine.size <= WORKER_NAMES_BUDGET_PER_TOKEN) break;
      if (oldest === key) break;
      this.release(oldest, this.workers.get(oldest)!);
    }
  }

  private release(key: string, held: Held): void {
    this.workers.delete(key);
    const mine = this.byToken.get(held.tokenId);
    if (!mine?.keys.delete(key)) return;
    mine.size -= held.size;
    if (mine.keys.size === 0) this.byToken.delete(held.tokenId);
  }

  private key(input: { workerId: string; appId: string; environment: string }): string {
    return `${input.appId}\u0000${input.environment}\u0000${input.workerId}`;
  }
}

function sizeOf(key: string, s: WorkerSighting): number {
  let size = SIGHTING_OVERHEAD + key.length;
  for (const name of s.workflows) size += name.length;
  for (const name of s.tasks) size += name.length;
  return size;
}
