import { Global, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { EventRegistry } from '../event-store/event-registry.js';
import { TOKEN_EVENT_TYPES } from './domain/token.decider.js';
import { TokensReadModel } from './tokens.projection.js';

@Global()
@Module({
  imports: [CqrsModule],
  providers: [TokensReadModel],
  exports: [TokensReadModel],
})
export class TokensModule {
  constructor(registry: EventRegistry) {
    registry.register(TOKEN_EVENT_TYPES);
  }
}
