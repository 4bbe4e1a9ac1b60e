import { createRequire } from 'node:module';

/**
 * What the EventStoreDB client finds wrong with a connection string (`kurrent…` forms read as the
 * matching `esdb…` ones, as `EsdbEventStore` does), or null. Checked at start-up, so that a bad
 * `EVENT_STORE_URL` stops the service with the variable named (exit 2) instead of the parser's
 * stack trace out of Nest's module loading (exit 1).
 */
export function esdbConnectionStringProblem(url: string): string | null {
  // The client's own parser (CommonJS, not in its exports' index): the rules the client applies.
  const { parseConnectionString } = createRequire(import.meta.url)('@eventstore/db-client/dist/Client/parseConnectionString.js') as {
    parseConnectionString: (connectionString: string) => unknown;
  };
  try {
    parseConnectionString(url.replace(/^kurrent(?:db)?(\+discover)?:\/\//, 'esdb$1://'));
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}
