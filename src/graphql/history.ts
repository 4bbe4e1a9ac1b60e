import { Field, Int, ObjectType } from '@nestjs/graphql';
import type { GraphQLResolveInfo } from 'graphql';
import type { EventStore } from '../event-store/event-store.port.js';
import { currentAnswerBudget, readWithinAnswer, selectedFieldNames } from './answer-budget.js';
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

/** Events read at a time: a page of `first` events is read, and charged to the answer, this many at a time. */
const HISTORY_READ_CHUNK = 100;

/**
 * The requested part of a stream, as `HistoryEvent`s, read a chunk at a time within the
 * request's answer budget (answer-budget.ts): a page of 10,000 events of 256 KiB was read whole
 * before anything was measured. `data` and `metadata` are kept only when `info` selects them.
 */
export async function readHistory(store: EventStore, streamId: string, args: HistoryArgs, info?: GraphQLResolveInfo): Promise<HistoryEvent[]> {
  const selected = selectedFieldNames(info);
  const keepData = !selected || selected.has('data');
  const keepMetadata = !selected || selected.has('metadata');
  return readWithinAnswer(
    info,
    async () => {
      const budget = currentAnswerBudget();
      const out: HistoryEvent[] = [];
      let from = BigInt(args.fromRevision ?? 0);
      for (let left = args.first ?? 1000; left > 0; ) {
        const maxCount = Math.min(left, HISTORY_READ_CHUNK);
        const events = await store.readStream(streamId, { fromRevision: from, maxCount });
        const chunk = events.map((e) => ({
          revision: Number(e.revision),
          type: e.type,
          recordedAt: e.recordedAt,
          data: keepData ? JSON.stringify(e.data) : '',
          metadata: keepMetadata ? JSON.stringify(e.metadata) : '',
        }));
        budget?.charge(chunk, info);
        out.push(...chunk);
        if (events.length < maxCount) break;
        left -= events.length;
        from = events[events.length - 1].revision + 1n;
      }
      return out;
    },
    true,
  );
}

/**
 * How many events a stream holds: its last event's revision plus one (0 when it has none), read
 * backwards as one event, so a client can tell how much of a history its pages have shown.
 */
export async function historyLength(store: EventStore, streamId: string): Promise<number> {
  // Asked for every node of a page: the embedded store answers from its index, without reading
  // (and parsing) the last event, whose data may be MAX_PAYLOAD_BYTES.
  if (store.streamLength) return store.streamLength(streamId);
  const [last] = await store.readStream(streamId, { direction: 'backwards', maxCount: 1 });
  return last ? Number(last.revision) + 1 : 0;
}
