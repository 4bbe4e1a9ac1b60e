import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { EventRegistry } from '../event-store/event-registry.js';
import { WORKFLOW_EVENT_TYPES } from './domain/workflow.decider.js';
import { DispatchWorkflowHandler, DispatchWorkflowResolver, WorkflowDispatcher } from './commands/dispatch-workflow/dispatch-workflow.js';
import { PauseWorkflowsHandler, PauseWorkflowsResolver } from './commands/pause-workflows/pause-workflows.js';
import { ResumeWorkflowsHandler, ResumeWorkflowsResolver } from './commands/resume-workflows/resume-workflows.js';
import { RetryWorkflowsHandler, RetryWorkflowsResolver } from './commands/retry-workflows/retry-workflows.js';
import { SelectorActions } from './commands/selector-actions.js';
import { PendingChildren } from './pending-children.js';
import { SendEventToWorkflowsHandler, SendEventToWorkflowsResolver } from './commands/send-event-to-workflows/send-event-to-workflows.js';
import { TerminateWorkflowsHandler, TerminateWorkflowsResolver } from './commands/terminate-workflows/terminate-workflows.js';
import { WorkflowQueriesResolver } from './queries/workflow-queries.resolver.js';
import { WorkflowEndings } from './queries/workflow-endings.js';
import { WorkflowsReadModel } from './workflows.read-model.js';

@Module({
  imports: [CqrsModule],
  providers: [
    WorkflowsReadModel,
    WorkflowDispatcher,
    SelectorActions,
    PendingChildren,
    DispatchWorkflowHandler,
    DispatchWorkflowResolver,
    PauseWorkflowsHandler,
    PauseWorkflowsResolver,
    ResumeWorkflowsHandler,
    ResumeWorkflowsResolver,
    TerminateWorkflowsHandler,
    TerminateWorkflowsResolver,
    SendEventToWorkflowsHandler,
    SendEventToWorkflowsResolver,
    RetryWorkflowsHandler,
    RetryWorkflowsResolver,
    WorkflowQueriesResolver,
    WorkflowEndings,
  ],
  exports: [WorkflowsReadModel, WorkflowDispatcher, SelectorActions, PendingChildren],
})
export class WorkflowsModule {
  constructor(registry: EventRegistry) {
    registry.register(WORKFLOW_EVENT_TYPES);
  }
}
