import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { CqrsModule } from '@nestjs/cqrs';
import { EventRegistry } from '../event-store/event-registry.js';
import { TOKEN_EVENT_TYPES } from './domain/token.decider.js';
import { RolesGuard } from './roles.js';
import { TokensReadModel } from './tokens.projection.js';
import { ViewerResolver } from './viewer.resolver.js';

@Global()
@Module({
  imports: [CqrsModule],
  providers: [TokensReadModel, ViewerResolver, { provide: APP_GUARD, useClass: RolesGuard }],
  exports: [TokensReadModel],
})
export class TokensModule {
  constructor(registry: EventRegistry) {
    registry.register(TOKEN_EVENT_TYPES);
  }
}
