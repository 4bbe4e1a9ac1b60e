import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { IEventHandler } from '@nestjs/cqrs';
import { EVENT_STORE, type EventStore, Subscription } from './event-store.port.js';
import { EventRegistry, PROJECTION_TYPES, type StoredEvent } from './event-registry.js';

/**
 * Feeds every read model of this instance: one subscription to the global log, each event
 * rehydrated through the registry and handed to the `@Projection` handlers of its type,
 * synchronously and in log order. `start()` runs after the app's init and resolves at
 * catch-up, so a restarted instance answers from complete read models. Mutations wait for
 * their own position here before answering (read your writes).
 */
@Injectable()
export class ProjectionRunner implements OnApplicationShutdown {
  private readonly logger = new Logger('Projections');
  private subscription: Subscription | undefined;
  private position = -1n;
  private waiters: Array<{ position: bigint; resolve: () => void }> = [];
  private liveListeners: Array<() => void> = [];
  private live = false;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    private readonly registry: EventRegistry,
    private readonly discovery: DiscoveryService,
  ) {}

  /** Every `@Projection` handler, by the event types it declared. */
  private routes(): Map<string, IEventHandler<StoredEvent>[]> {
    const routes = new Map<string, IEventHandler<StoredEvent>[]>();
    for (const { instance, metatype } of this.discovery.getProviders()) {
      const types: string[] | undefined = metatype ? Reflect.getMetadata(PROJECTION_TYPES, metatype) : undefined;
      if (!types || !instance) continue;
      for (const type of types) routes.set(type, [...(routes.get(type) ?? []), instance as IEventHandler<StoredEvent>]);
    }
    return routes;
  }

  async start(): Promise<void> {
    if (this.subscription) return;
    const started = Date.now();
    const routes = this.routes();
    let count = 0;
    await new Promise<void>((resolve, reject) => {
      this.subscription = this.store.subscribe(
        (recorded) => {
          count++;
          const event = this.registry.rehydrate(recorded);
          for (const handler of (event && routes.get(event.type)) || []) {
            try {
              handler.handle(event!);
            } catch (error) {
              this.logger.error(`${handler.constructor.name} failed on ${recorded.type} at position ${recorded.position}: ${(error as Error).stack}`);
            }
          }
          this.advance(recorded.position);
        },
        {
          onCaughtUp: () => {
            this.logger.log(`read models rebuilt from ${count} events in ${Date.now() - started} ms`);
            this.live = true;
            for (const listener of this.liveListeners) listener();
            resolve();
          },
          onError: (error) => {
            this.logger.error(`projection subscription stopped: ${error.message}`);
            reject(error);
          },
        },
      );
    });
  }

  async onApplicationShutdown(): Promise<void> {
    await this.subscription?.close();
    for (const waiter of this.waiters) waiter.resolve();
    this.waiters = [];
  }

  get isLive(): boolean {
    return this.live;
  }

  /** Runs `listener` once the read models have caught up (at once if they already have). */
  onLive(listener: () => void): void {
    if (this.live) listener();
    else this.liveListeners.push(listener);
  }

  get checkpoint(): bigint {
    return this.position;
  }

  /** Resolves once every event up to `position` has been projected. */
  waitFor(position: bigint): Promise<void> {
    if (position <= this.position) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ position, resolve }));
  }

  private advance(position: bigint): void {
    this.position = position;
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((w) => w.position <= position);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.position > position);
    for (const waiter of ready) waiter.resolve();
  }
}
