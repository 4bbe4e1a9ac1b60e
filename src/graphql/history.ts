import { Field, Int, ObjectType } from '@nestjs/graphql';
import type { EventStore } from '../event-store/event-store.port.js';
import type { HistoryArgs } from './common.types.js';

@ObjectType({ description: 'One event of a stream (a workflow\'s or a schedule\'s history), as stored.' })
export class HistoryEvent {
  @Field(() => Int, { description: 'Index of the event in its stream, from 0.' })
  revision: number;
  @Field({ description: 'Event type, e.g. WorkflowDispatched, TaskCompleted, ScheduleFired.' })
  type: string;
  @Field({ description: 'When the store recorded it.' })
  recordedAt: Date;
  @Field({ description: 'Event data as JSON.' })
  data: string;
  @Field({ description: 'Event metadata as JSON (correlation id, actor, time).' })
  metadata: string;
}

/** The requested part of a stream, as `HistoryEvent`s. */
export async function readHistory(store: EventStore, streamId: string, args: HistoryArgs): Promise<HistoryEvent[]> {
  const events = await store.readStream(streamId, { fromRevision: BigInt(args.fromRevision ?? 0), maxCount: args.first ?? 1000 });
  return events.map((e) => ({
    revision: Number(e.revision),
    type: e.type,
    recordedAt: e.recordedAt,
    data: JSON.stringify(e.data),
    metadata: JSON.stringify(e.metadata),
  }));
}

/**
 * How many events a stream holds: its last event's revision plus one (0 when it has none), read
 * backwards as one event, so a client can tell how much of a history its pages have shown.
 */
export async function historyLength(store: EventStore, streamId: string): Promise<number> {
  const [last] = await store.readStream(streamId, { direction: 'backwards', maxCount: 1 });
  return last ? Number(last.revision) + 1 : 0;
}
