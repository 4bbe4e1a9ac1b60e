/**
 * Emmett-style given / when / then for pure deciders:
 *
 *   spec.given([dispatched]).when({ type: 'PauseWorkflow' }).then([{ type: 'WorkflowPaused', data: {} }]);
 *
 * `given` folds the events into state through the decider's own `evolve`; `when` runs `decide`.
 * `thenThrows` fails when nothing is thrown.
 */
import { expect } from '@jest/globals';
import { Decider, DomainEvent } from '../../src/shared/decider.js';

type ErrorClass = abstract new (...args: any[]) => Error;

export interface Then<E, S> {
  /** The decision is exactly these events. */
  then(expected: E[]): void;
  /** The decision contains (at least) events matching these partial shapes, in order. */
  thenMatches(expected: Array<Partial<E> | Record<string, unknown>>): void;
  /** The decision is empty: nothing changes. */
  thenNothingHappens(): void;
  /** `decide` throws an instance of `errorClass` (and a message matching `message`, when given). */
  thenThrows(errorClass: ErrorClass, message?: string | RegExp): void;
  /** The state after the given events and the decided ones, for checks beyond the events. */
  thenState(check: (state: S, events: E[]) => void): void;
}

export interface When<C, E, S> {
  when(command: C): Then<E, S>;
  /** The state the given events fold into. */
  state(): S;
}

export interface DeciderSpecification<C, E extends DomainEvent, S> {
  given(events: E[]): When<C, E, S>;
}

export const DeciderSpecification = {
  for<C, E extends DomainEvent, S>(decider: Decider<C, E, S>): DeciderSpecification<C, E, S> {
    return {
      given(events) {
        const fold = () => events.reduce((s, e) => decider.evolve(s, e), decider.initialState());
        return {
          state: fold,
          when(command) {
            const decide = () => decider.decide(command, fold());
            return {
              then(expected) {
                expect(decide()).toEqual(expected);
              },
              thenMatches(expected) {
                const actual = decide();
                expect(actual).toHaveLength(expected.length);
                expect(actual).toMatchObject(expected);
              },
              thenNothingHappens() {
                expect(decide()).toEqual([]);
              },
              thenThrows(errorClass, message) {
                let thrown: unknown;
                let decided: E[] | undefined;
                try {
                  decided = decide();
                } catch (error) {
                  thrown = error;
                }
                if (thrown === undefined) {
                  throw new Error(`expected decide to throw ${errorClass.name}, but it decided ${JSON.stringify(decided)}`);
                }
                expect(thrown).toBeInstanceOf(errorClass);
                if (message !== undefined) expect((thrown as Error).message).toMatch(message);
              },
              thenState(check) {
                const before = fold();
                const decided = decider.decide(command, before);
                check(
                  decided.reduce((s, e) => decider.evolve(s, e), before),
                  decided,
                );
              },
            };
          },
        };
      },
    };
  },
};
