/**
 * Who calls the admin API: a client of the client_credentials grant with an access token for
 * the admin API's audience (`<issuer>/admin`, RFC 8707) whose scope covers what it asks
 * (RFC 6750 §3.1). No other token is accepted here, and an admin token is accepted nowhere
 * else: its audience is no registered API and not this server's UserInfo.
 */
import { OAuthError } from '../../core/errors.ts';
import { ADMIN_SCOPES, adminAudience, ROLE_SCOPES, type OperatorRole } from '../../core/scopes.ts';
import { checkSenderConstraint, liveClientToken, looksLikeJwt, type Presentation } from '../lifecycle/access-token.ts';
import type { FlowDeps } from '../types.ts';

/** The areas the admin API's scopes cover (core/scopes.ts ADMIN_SCOPES). */
export type AdminArea = 'clients' | 'users' | 'resources' | 'events' | 'keys' | 'providers' | 'webhooks' | 'saml' | 'orgs';

export interface AdminCaller {
  readonly clientId: string;
  readonly scope: readonly string[];
}

/** What a route asks of its caller: an area's scope, or (`any`) any admin scope, to read what every admin client may (the API's own description). */
export type AdminNeed = AdminArea | 'any';

/** The scope an operation needs: `admin:AREA` for a change; that or `admin:AREA:read` to read; `any`: any of them. */
export function adminScopesFor(area: AdminNeed, write: boolean): string[] {
  if (area === 'any') return [...ADMIN_SCOPES];
  return write ? [`admin:${area}`] : [`admin:${area}`, `admin:${area}:read`];
}

/**
 * Whether `held` admin scopes allow an operation on `area`: the one permission check, of the
 * admin API's tokens and, through the scopes a role stands for, of the console's operators.
 */
export function scopesAllow(held: readonly string[], area: AdminNeed, write: boolean): boolean {
  return adminScopesFor(area, write).some((scope) => held.includes(scope));
}

/** What an operator role allows: the same check over the role's scopes (core/scopes.ts ROLE_SCOPES). */
export function roleAllows(role: OperatorRole | null, area: AdminArea, write: boolean): boolean {
  return role !== null && scopesAllow(ROLE_SCOPES[role], area, write);
}

export async function adminCaller(
  deps: Pick<FlowDeps, 'store' | 'config' | 'tokens'>,
  presented: Presentation,
  area: AdminNeed,
  write: boolean,
): Promise<AdminCaller> {
  const claims = looksLikeJwt(presented.token) ? await deps.tokens.readAccessToken(presented.token) : null;
  // RFC 6750 §3.1 invalid_token: "expired, revoked, malformed, or invalid for other reasons";
  // a token for another audience is invalid here (RFC 8707 §2: the resource checks it is one).
  const client = claims !== null && claims.aud === adminAudience(deps.config.issuer) ? await liveClientToken(deps, claims) : null;
  if (claims === null || client === null)
    throw new OAuthError('invalid_token', 'an admin API access token is required: a client_credentials token for the resource <issuer>/admin');
  checkSenderConstraint(claims, presented);
  // A scope the client has since lost is not honoured, though its token still names it.
  const held = claims.scope.filter((scope) => client.scopes.includes(scope));
  // RFC 6750 §3.1 insufficient_scope: "The request requires higher privileges than provided by the access token."
  if (!scopesAllow(held, area, write))
    throw new OAuthError('insufficient_scope', area === 'any' ? 'this needs an admin scope' : `this needs the scope ${adminScopesFor(area, write)[0]}`);
  return { clientId: client.id, scope: held };
}
