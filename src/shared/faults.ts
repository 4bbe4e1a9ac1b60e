/**
 * TEST-ONLY fault injection, switched on by the `BATON_FAULTS` environment variable (never set
 * it in production). A comma-separated list of:
 *
 * - `append-unavailable:<EventType>:<n>`: the first `n` appends carrying an event of that type
 *   fail with `StoreUnavailableError` (a transient store fault) and write nothing.
 * - `projection-drop:<EventType>:<ms>`: the projection subscription dies on the first batch
 *   holding an event of that type, and its restarts keep failing for `ms` milliseconds.
 *
 * The integration tests use it to show that cross-stream effects are retried and that a dead
 * projection subscription restarts while the instance reports itself not ready.
 */
export interface Faults {
  appendUnavailable: Map<string, number>;
  projectionDrop: Map<string, number>;
}

export function parseFaults(raw: string | undefined = process.env.BATON_FAULTS): Faults {
  const faults: Faults = { appendUnavailable: new Map(), projectionDrop: new Map() };
  for (const entry of (raw ?? '').split(',').map((e) => e.trim()).filter(Boolean)) {
    const [kind, type, amount] = entry.split(':');
    const n = Number(amount);
    if (!type || !Number.isFinite(n)) throw new Error(`BATON_FAULTS: cannot read ${JSON.stringify(entry)}`);
    if (kind === 'append-unavailable') faults.appendUnavailable.set(type, n);
    else if (kind === 'projection-drop') faults.projectionDrop.set(type, n);
    else throw new Error(`BATON_FAULTS: unknown fault ${JSON.stringify(kind)}`);
  }
  return faults;
}

export const FAULTS = parseFaults();

export const faultsEnabled = (): boolean => FAULTS.appendUnavailable.size > 0 || FAULTS.projectionDrop.size > 0;
