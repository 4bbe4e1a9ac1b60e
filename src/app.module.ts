import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled';
import { ApolloDriver, ApolloDriverConfig } from '@nestjs/apollo';
import { DynamicModule, Global, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { GraphQLModule } from '@nestjs/graphql';
import { ScheduleModule } from '@nestjs/schedule';
import { BATON_CONFIG, type BatonConfig } from './config/config.js';
import { CLOCK, systemClock } from './shared/clock.js';
import { EventStoreModule } from './event-store/event-store.module.js';
import { ExplorerModule } from './explorer/explorer.module.js';
import { sandboxLandingPage } from './explorer/sandbox-landing.js';
import { formatError } from './graphql/format-error.js';
import { documentLimits, documentLimitsContext, noSubscriptionsRule, queryLimitsRule } from './graphql/query-limits.js';
import { responseBudgetPlugin } from './graphql/response-budget.js';
import { rootFieldRateLimitPlugin } from './tokens/root-field-rate.plugin.js';
import { HealthModule } from './health/health.module.js';
import { loggingModule } from './observability/logging.js';
import { MetricsModule } from './observability/metrics.module.js';
import { RetentionModule } from './retention/retention.module.js';
import { AuditModule } from './audit/audit.module.js';
import { DashboardModule } from './dashboard/dashboard.controller.js';
import { FailuresModule } from './failures/failures.module.js';
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
    const document = documentLimits({ maxDepth: config.maxQueryDepth, maxCost: config.maxQueryCost });
    return {
      module: AppModule,
      imports: [
        ConfigModule.with(config),
        loggingModule(config),
        HealthModule,
        // The service's own periodic jobs (metric sampling, retention) live in its SchedulerRegistry.
        ScheduleModule.forRoot(),
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
          // The document's size and nesting are checked on its text before Apollo parses it (the
          // context function runs first; what it throws is answered 400): graphql-js's parser and
          // validation rules recurse, and a deep enough document would overflow the stack.
          context: documentLimitsContext(document),
          parseOptions: { maxLexicalTokens: document.maxTokens },
          validationRules: [
            noSubscriptionsRule,
            queryLimitsRule({ maxDepth: config.maxQueryDepth, maxCost: config.maxQueryCost, maxComplexity: config.maxQueryComplexity }),
          ],
          graphiql: false,
          plugins: [
            sandboxLandingPage(),
            responseBudgetPlugin(config.maxResponseBytes),
            rootFieldRateLimitPlugin(config.rateLimitPerMinute),
            // Apollo installs these by default. Baton sets no cache hints and is no federation
            // subgraph, yet the cache-control plugin hooks every field of every answer, which makes
            // Apollo wrap each resolver call (measured: docs/BENCHMARKS.md).
            ApolloServerPluginCacheControlDisabled(),
            ApolloServerPluginInlineTraceDisabled(),
          ],
        }),
        WorkflowsModule,
        TasksModule,
        WorkersModule,
        SchedulesModule,
        FailuresModule,
        AuditModule,
        ExplorerModule,
        MetricsModule,
        RetentionModule,
        DashboardModule,
        ...(extra ?? []),
      ],
    };
  }
}
