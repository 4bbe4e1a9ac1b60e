/**
 * Emmett-style deciders: all domain logic is `decide(command, state) → events` and
 * `evolve(state, event) → state`. Time, ids and randomness arrive inside the command.
 */
export interface DomainEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
  /** Its revision in its stream, when `evolve` is folding recorded (or just appended) events. */
  revision?: bigint;
}

export interface Decider<Command, Event extends DomainEvent, State> {
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event): State;
  initialState(): State;
}

/** Folds a stream's events into state; unknown event types are skipped, never fatal. */
export function fold<Event extends DomainEvent, State>(
  decider: Pick<Decider<never, Event, State>, 'evolve' | 'initialState'>,
  events: Iterable<DomainEvent>,
): State {
  let state = decider.initialState();
  for (const event of events) state = decider.evolve(state, event as Event);
  return state;
}
