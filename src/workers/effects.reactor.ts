import { Logger } from '@nestjs/common';
import type { IEventHandler } from '@nestjs/cqrs';
import { CommandContext, DeciderRunner } from '../event-store/decider-runner.js';
import { Projection, StoredEvent } from '../event-store/event-registry.js';
import { ProjectionRunner } from '../event-store/projection-runner.js';
import { derivedUuid, uuidv7 } from '../shared/ids.js';
import { TaskDispatcher } from '../tasks/commands/dispatch-task/dispatch-task.js';
import { WorkflowDispatcher } from '../workflows/commands/dispatch-workflow/dispatch-workflow.js';
import { SelectorActions } from '../workflows/commands/selector-actions.js';
import { WorkflowCommand, WorkflowEventData, workflowDecider } from '../workflows/domain/workflow.decider.js';

type Effect = () => Promise<unknown>;

/**
 * What a workflow's recorded decisions cause outside its own stream: starting children and
 * standalone tasks, acting on selected workflows, and telling a parent that its child ended.
 * Live events are acted on at once (by every instance: each effect is idempotent through
 * deterministic ids or the target's decider). While the log is replayed at start, an effect is
 * kept until the log shows its outcome; whatever is still pending when the replay ends (the
 * process died in between) is carried out then.
 */
@Projection([
  'WorkflowDispatched',
  'TaskDispatched',
  'ChildWorkflowStarted',
  'TaskDispatchRequested',
  'ControlRequested',
  'ControlApplied',
  'WorkflowCompleted',
  'WorkflowFailed',
  'WorkflowTerminated',
  'ChildWorkflowCompleted',
  'ChildWorkflowFailed',
])
export class EffectsReactor implements IEventHandler<StoredEvent> {
  private readonly logger = new Logger('Effects');
  private readonly pending = new Map<string, Effect>();
  private readonly parents = new Map<string, { appId: string; environment: string; workflowId: string; seq: number }>();

  constructor(
    private readonly runner: DeciderRunner,
    private readonly workflows: WorkflowDispatcher,
    private readonly tasks: TaskDispatcher,
    private readonly selectors: SelectorActions,
    private readonly projections: ProjectionRunner,
  ) {
    projections.onLive(() => {
      const effects = [...this.pending.values()];
      this.pending.clear();
      if (effects.length > 0) this.logger.log(`carrying out ${effects.length} effects left pending by a previous run`);
      for (const effect of effects) this.run(effect);
    });
  }

  handle(stored: StoredEvent): void {
    const { streamId, metadata } = stored.recorded;
    const id = streamId.slice(streamId.indexOf('-') + 1);
    const context: CommandContext = {
      actor: 'system',
      appId: String(metadata.appId ?? ''),
      environment: String(metadata.environment ?? ''),
      correlationId: String(metadata.correlationId ?? uuidv7()),
      causationId: stored.recorded.id,
    };
    switch (stored.type) {
      case 'WorkflowDispatched': {
        const data = stored.data as WorkflowEventData['WorkflowDispatched'];
        this.pending.delete(`child:${id}`);
        if (data.parent) this.parents.set(id, { appId: data.appId, environment: data.environment, ...data.parent });
        return;
      }
      case 'TaskDispatched':
        this.pending.delete(`task:${id}`);
        return;
      case 'ChildWorkflowStarted': {
        const data = stored.data as WorkflowEventData['ChildWorkflowStarted'];
        return this.schedule(`child:${data.childId}`, () =>
          this.workflows.dispatch(context, {
            workflowId: data.childId,
            appId: context.appId,
            environment: context.environment,
            name: data.name,
            tag: data.tag,
            input: data.args,
            parent: { workflowId: id, seq: data.seq },
          }),
        );
      }
      case 'TaskDispatchRequested': {
        const data = stored.data as WorkflowEventData['TaskDispatchRequested'];
        return this.schedule(`task:${data.taskId}`, () =>
          this.tasks.dispatch(context, {
            taskId: data.taskId,
            appId: context.appId,
            environment: context.environment,
            name: data.name,
            args: data.args,
            parent: { workflowId: id, seq: data.seq },
          }),
        );
      }
      case 'ControlRequested': {
        const data = stored.data as WorkflowEventData['ControlRequested'];
        return this.schedule(`control:${id}#${data.seq}`, async () => {
          const command: WorkflowCommand =
            data.action === 'pause'
              ? { type: 'PauseWorkflow' }
              : data.action === 'resume'
                ? { type: 'ResumeWorkflow' }
                : data.action === 'terminate'
                  ? { type: 'TerminateWorkflow', reason: `requested by workflow ${id}` }
                  : { type: 'DeliverEvent', name: data.event?.name ?? '', data: data.event?.data ?? [] };
          const result = await this.selectors
            .applyTo(context, data.selector, command, { eventId: (target) => derivedUuid(id, String(data.seq), target) })
            .catch((error) => ({ matched: 0, changed: 0, error }));
          await this.runner.run(
            `workflow-${id}`,
            workflowDecider,
            { type: 'RecordControlApplied', seq: data.seq, matched: result.matched, changed: result.changed },
            context,
            { eventId: () => derivedUuid(id, String(data.seq), 'applied') },
          );
        });
      }
      case 'ControlApplied':
        this.pending.delete(`control:${id}#${(stored.data as WorkflowEventData['ControlApplied']).seq}`);
        return;
      case 'WorkflowCompleted':
      case 'WorkflowFailed':
      case 'WorkflowTerminated': {
        const parent = this.parents.get(id);
        if (!parent) return;
        this.parents.delete(id);
        const outcome =
          stored.type === 'WorkflowCompleted'
            ? { ok: true as const, result: (stored.data as WorkflowEventData['WorkflowCompleted']).result }
            : {
                ok: false as const,
                error:
                  stored.type === 'WorkflowFailed'
                    ? (stored.data as WorkflowEventData['WorkflowFailed']).error
                    : { message: `child workflow ${id} was terminated`, name: 'ChildWorkflowTerminated', nonRetryable: true },
              };
        return this.schedule(`resolve:${parent.workflowId}#${parent.seq}`, () =>
          this.runner.run(
            `workflow-${parent.workflowId}`,
            workflowDecider,
            { type: 'ResolveChild', seq: parent.seq, childId: id, outcome },
            { ...context, appId: parent.appId, environment: parent.environment },
          ),
        );
      }
      case 'ChildWorkflowCompleted':
      case 'ChildWorkflowFailed':
        this.pending.delete(`resolve:${id}#${(stored.data as { seq: number }).seq}`);
        return;
    }
  }

  private schedule(key: string, effect: Effect): void {
    if (this.projections.isLive) this.run(effect);
    else this.pending.set(key, effect);
  }

  private run(effect: Effect): void {
    effect().catch((error) => this.logger.error(`effect failed: ${(error as Error).message}`));
  }
}
