import { describe, expect, it } from '@jest/globals';
import type { EventMetadata, RecordedEvent } from './event-store.port.js';
import { EventRegistry } from './event-registry.js';

/** As the embedded store's bulk catch-up hands events over: metadata parsed when first read. */
class LazyMetadataEvent implements RecordedEvent {
  readonly revision = 0n;
  readonly position = 7n;
  readonly recordedAt = new Date(0);
  constructor(readonly id: string, readonly type: string, readonly streamId: string, readonly data: unknown, private readonly text: string) {}
  get metadata(): EventMetadata {
    return JSON.parse(this.text) as EventMetadata;
  }
}

describe('EventRegistry.upcast', () => {
  it('hands upcasters a plain event, so one that spreads it keeps metadata held in an accessor', () => {
    const registry = new EventRegistry();
    registry.register(['ThingRenamed']);
    registry.registerUpcaster('ThingNamed', (e) => ({ ...e, type: 'ThingRenamed', data: { name: (e.data as { n: string }).n } }));
    const upcast = registry.upcast(new LazyMetadataEvent('e1', 'ThingNamed', 'thing-1', { n: 'a' }, '{"actor":"token:t1"}'));
    expect(upcast).toEqual({ id: 'e1', type: 'ThingRenamed', streamId: 'thing-1', revision: 0n, position: 7n, data: { name: 'a' }, metadata: { actor: 'token:t1' }, recordedAt: new Date(0) });
  });

  it('returns an event without upcasters as it is', () => {
    const event = new LazyMetadataEvent('e2', 'Other', 'thing-2', {}, '{}');
    expect(new EventRegistry().upcast(event)).toBe(event);
  });
});
