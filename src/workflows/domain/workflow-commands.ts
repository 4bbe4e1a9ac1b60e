/** The decision commands and selectors are part of the worker protocol (`src/protocol`). */
export { DECISION_COMMAND_TYPES } from '../../protocol/decision-commands.js';
export type { DecisionCommand, Selector } from '../../protocol/decision-commands.js';
