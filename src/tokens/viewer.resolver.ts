import { Field, ID, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { CurrentPrincipal } from './principal.js';
import { Requires, capabilitiesOf } from './roles.js';
import type { Principal } from './tokens.projection.js';
import { TokensReadModel } from './tokens.projection.js';

@ObjectType('Viewer', { description: 'The token a request is made with: what it may see and do.' })
export class ViewerType {
  @Field(() => ID, { description: 'The token id (the actor recorded in the events this token causes).' })
  tokenId: string;
  @Field({ description: 'The role: admin, operator (control actions), read-only (queries only) or worker (worker protocol only).' })
  role: string;
  @Field(() => [String], { description: 'What the role grants: any of read, control, worker.' })
  capabilities: string[];
  @Field(() => [String], { description: 'Apps the token may act on ("*" for all).' })
  apps: string[];
  @Field(() => [String], { nullable: true, description: 'Environments the token may act on (null for all).' })
  environments: string[] | null;
  @Field(() => String, { nullable: true, description: 'The label given when the token was created.' })
  label: string | null;
}

@Resolver()
export class ViewerResolver {
  constructor(private readonly tokens: TokensReadModel) {}

  @Requires('any')
  @Query(() => ViewerType, { description: 'The token of this request: its role, capabilities and scope (any role may ask).' })
  viewer(@CurrentPrincipal() principal: Principal): ViewerType {
    return {
      tokenId: principal.tokenId,
      role: principal.role,
      capabilities: capabilitiesOf(principal.role),
      apps: principal.apps,
      environments: principal.environments,
      label: this.tokens.label(principal.tokenId),
    };
  }
}
