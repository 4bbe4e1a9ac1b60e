import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { BATON_CONFIG, type BatonConfig } from '../config/config.js';
import { createEventStore } from './create-event-store.js';
import { DeciderRunner } from './decider-runner.js';
import { EventRegistry } from './event-registry.js';
import { EVENT_STORE, type EventStore } from './event-store.port.js';
import { ProjectionRunner } from './projection-runner.js';
import { ReadFence } from './read-fence.js';
import { READ_MODEL_DB, ReadModelDb } from './read-model-db.js';

@Global()
@Module({
  imports: [CqrsModule, DiscoveryModule],
  providers: [
    {
      provide: EVENT_STORE,
      inject: [BATON_CONFIG],
      useFactory: (config: BatonConfig) => createEventStore(config.eventStoreUrl),
    },
    {
      provide: READ_MODEL_DB,
      inject: [BATON_CONFIG],
      useFactory: (config: BatonConfig) => new ReadModelDb(config.readModelPath),
    },
    EventRegistry,
    ProjectionRunner,
    ReadFence,
    DeciderRunner,
  ],
  exports: [EVENT_STORE, READ_MODEL_DB, EventRegistry, ProjectionRunner, ReadFence, DeciderRunner],
})
export class EventStoreModule implements OnApplicationShutdown {
  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(READ_MODEL_DB) private readonly readModels: ReadModelDb,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
    this.readModels.close();
  }
}
