import { ApolloDriver, ApolloDriverConfig } from '@nestjs/apollo';
import { DynamicModule, Global, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { GraphQLModule } from '@nestjs/graphql';
import { BATON_CONFIG, type BatonConfig } from './config/config.js';
import { CLOCK, systemClock } from './shared/clock.js';
import { EventStoreModule } from './event-store/event-store.module.js';
import { ExplorerModule } from './explorer/explorer.module.js';
import { sandboxLandingPage } from './explorer/sandbox-landing.js';
import { formatError } from './graphql/format-error.js';
import { queryLimitsRule } from './graphql/query-limits.js';
import { AuditModule } from './audit/audit.module.js';
import { DashboardModule } from './dashboard/dashboard.controller.js';
import { FailuresModule } from './failures/failures.module.js';
import { HealthController } from './health/health.controller.js';
import { SchedulesModule } from './schedules/schedules.module.js';
import { TasksModule } from './tasks/tasks.module.js';
import { TokensModule } from './tokens/tokens.module.js';
import { WorkersModule } from './workers/workers.module.js';
import { WorkflowsModule } from './workflows/workflows.module.js';

@Global()
@Module({})
class ConfigModule {
  static with(config: BatonConfig): DynamicModule {
    return {
      module: ConfigModule,
      providers: [
        { provide: BATON_CONFIG, useValue: config },
        { provide: CLOCK, useValue: systemClock },
      ],
      exports: [BATON_CONFIG, CLOCK],
    };
  }
}

@Module({})
export class AppModule {
  static with(config: BatonConfig, extra: DynamicModule['imports'] = []): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.with(config),
        CqrsModule.forRoot(),
        EventStoreModule,
        TokensModule,
        GraphQLModule.forRoot<ApolloDriverConfig>({
          driver: ApolloDriver,
          path: '/graphql',
          autoSchemaFile: true,
          sortSchema: true,
          introspection: true,
          includeStacktraceInErrorResponses: false,
          formatError,
          validationRules: [queryLimitsRule(config.maxQueryDepth, config.maxQueryCost)],
          graphiql: false,
          plugins: [sandboxLandingPage()],
        }),
        WorkflowsModule,
        TasksModule,
        WorkersModule,
        SchedulesModule,
        FailuresModule,
        AuditModule,
        ExplorerModule,
        DashboardModule,
        ...(extra ?? []),
      ],
      controllers: [HealthController],
    };
  }
}
