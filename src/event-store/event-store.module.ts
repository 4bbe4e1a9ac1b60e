import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { createEventStore } from './create-event-store.js';
import { DeciderRunner } from './decider-runner.js';
import { EventRegistry } from './event-registry.js';
import { EVENT_STORE, type EventStore } from './event-store.port.js';
import { ProjectionRunner } from './projection-runner.js';

@Global()
@Module({
  imports: [CqrsModule, DiscoveryModule],
  providers: [
    {
      provide: EVENT_STORE,
      inject: [BATON_CONFIG],
      useFactory: (config: BatonConfig) => createEventStore(config.eventStoreUrl),
    },
    EventRegistry,
    ProjectionRunner,
    DeciderRunner,
  ],
  exports: [EVENT_STORE, EventRegistry, ProjectionRunner, DeciderRunner],
})
export class EventStoreModule implements OnApplicationShutdown {
  constructor(@Inject(EVENT_STORE) private readonly store: EventStore) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}
