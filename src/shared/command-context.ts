import { CommandContext } from '../event-store/decider-runner.js';
import { currentCorrelationId } from './request-context.js';
import { uuidv7 } from './ids.js';
import type { Principal } from '../tokens/tokens.projection.js';

/** Metadata for the events a request causes: the token, the app, the request's correlation id (`x-request-id`). */
export const contextFor = (principal: Principal, appId: string, environment: string): CommandContext => ({
  actor: principal.tokenId,
  appId,
  environment,
  correlationId: currentCorrelationId() ?? uuidv7(),
});
