import { FAULTS, faultsEnabled } from '../shared/faults.js';
import { type EventStore, StoreUnavailableError } from './event-store.port.js';
import { SqliteEventStore } from './sqlite/sqlite-event-store.js';

/** Picks the adapter from `EVENT_STORE_URL`: `sqlite:<file>` or an EventStoreDB/KurrentDB connection string. */
export async function createEventStore(url: string): Promise<EventStore> {
  let store: EventStore;
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    store = new SqliteEventStore(file || './data/baton.db');
  } else {
    const { EsdbEventStore } = await import('./esdb/esdb-event-store.js');
    store = new EsdbEventStore(url);
  }
  return faultsEnabled() ? withInjectedFaults(store) : store;
}

/** TEST-ONLY (`BATON_FAULTS`, see src/shared/faults.ts): appends that fail as a transient store fault would. */
function withInjectedFaults(store: EventStore): EventStore {
  const append: EventStore['append'] = async (streamId, events, expected) => {
    for (const event of events) {
      const left = FAULTS.appendUnavailable.get(event.type) ?? 0;
      if (left > 0) {
        FAULTS.appendUnavailable.set(event.type, left - 1);
        throw new StoreUnavailableError(`injected fault (BATON_FAULTS): append of ${event.type} to ${streamId} failed`);
      }
    }
    return store.append(streamId, events, expected);
  };
  return new Proxy(store, {
    get(target, key) {
      if (key === 'append') return append;
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
