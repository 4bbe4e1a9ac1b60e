export * from './decision-commands.js';
export * from './retry-policy.js';
export * from './work-items.js';
export * from './work-refs.js';
export { failureCause, replayableHistory } from './workflow-retry.js';
