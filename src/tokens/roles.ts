import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { GqlExecutionContext } from '@nestjs/graphql';
import { ForbiddenError } from '../shared/errors.js';
import type { Principal } from './tokens.projection.js';

import { TOKEN_ROLES, type TokenRole } from './token-roles.js';

export { DEFAULT_ROLE, TOKEN_ROLES, type TokenRole } from './token-roles.js';

/** What one GraphQL root field needs. `any` is for the caller's own identity (`viewer`). */
export type Capability = 'read' | 'control' | 'worker' | 'any';

const GRANTS: Record<TokenRole, ReadonlySet<Capability>> = {
  admin: new Set(['read', 'control', 'worker', 'any']),
  operator: new Set(['read', 'control', 'any']),
  'read-only': new Set(['read', 'any']),
  worker: new Set(['worker', 'any']),
};

export const isTokenRole = (value: unknown): value is TokenRole => (TOKEN_ROLES as readonly unknown[]).includes(value);

export const roleAllows = (role: TokenRole, capability: Capability): boolean => GRANTS[role].has(capability);

/** The capabilities a role grants, for clients that adapt to their token (the dashboard). */
export const capabilitiesOf = (role: TokenRole): Capability[] => [...GRANTS[role]].filter((c) => c !== 'any');

const REQUIRES = 'baton.requires';

/** Declares what a Query or Mutation needs; a root field without it is admin-only. */
export const Requires = (capability: Capability): MethodDecorator => SetMetadata(REQUIRES, capability);

/**
 * Enforces roles on every GraphQL root field: the capability declared with `@Requires`, or admin
 * when none is declared (so a field added without thinking about roles is closed, not open).
 * Requests without a principal are left to `CurrentPrincipal` (UNAUTHENTICATED).
 */
@Injectable()
export class RolesGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType<string>() !== 'graphql') return true;
    const gql = GqlExecutionContext.create(context);
    const principal = gql.getContext<{ req?: { principal?: Principal } }>().req?.principal;
    if (!principal) return true;
    const needed = this.reflector.get<Capability | undefined>(REQUIRES, context.getHandler());
    const allowed = needed === undefined ? principal.role === 'admin' : roleAllows(principal.role, needed);
    if (!allowed) {
      const field = gql.getInfo<{ fieldName: string }>().fieldName;
      throw new ForbiddenError(`a ${principal.role} token may not call ${field}`);
    }
    return true;
  }
}
