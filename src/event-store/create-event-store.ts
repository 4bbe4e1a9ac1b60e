import { type EventStore } from './event-store.port.js';
import { SqliteEventStore } from './sqlite/sqlite-event-store.js';

/** Picks the adapter from `EVENT_STORE_URL`: `sqlite:<file>` or an EventStoreDB/KurrentDB connection string. */
export async function createEventStore(url: string): Promise<EventStore> {
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    return new SqliteEventStore(file || './data/baton.db');
  }
  const { EsdbEventStore } = await import('./esdb/esdb-event-store.js');
  return new EsdbEventStore(url);
}
