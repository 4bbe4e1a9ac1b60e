import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { GqlExecutionContext } from '@nestjs/graphql';
import { ForbiddenError, UnauthenticatedError } from '../shared/errors.js';
import type { Principal } from './tokens.projection.js';

/** The authenticated caller of a GraphQL operation. */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const req = GqlExecutionContext.create(ctx).getContext<{ req: { principal?: Principal } }>().req;
  if (!req?.principal) throw new UnauthenticatedError('no API token on this request');
  return req.principal;
});

/** A token scoped to other apps (or environments) learns nothing about this one. */
export function assertScope(principal: Principal, appId: string, environment: string): void {
  if (!principal.apps.includes(appId) && !principal.apps.includes('*')) {
    throw new ForbiddenError(`this token is not allowed to act on app ${JSON.stringify(appId)}`);
  }
  if (principal.environments !== null && !principal.environments.includes(environment)) {
    throw new ForbiddenError(`this token is not allowed to act on environment ${JSON.stringify(environment)}`);
  }
}
