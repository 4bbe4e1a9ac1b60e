export * from './decision-commands.js';
export * from './work-items.js';
export * from './work-refs.js';
