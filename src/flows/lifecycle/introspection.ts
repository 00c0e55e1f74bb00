/**
 * RFC 7662 (OAuth 2.0 Token Introspection) §2.1-2.2.
 */
import { timedSecretKey } from '../../core/timed-secret.ts';
import type { ClientRecord, ResourceRecord } from '../../store/types.ts';
import type { Actor } from '../../tokens/issue.ts';
import type { FlowDeps } from '../types.ts';
import { liveAccessToken, looksLikeJwt } from './access-token.ts';

/** RFC 7662 §2.2, with its field names. */
export type IntrospectionResponse =
  | { readonly active: false }
  | {
      readonly active: true;
      readonly scope: string;
      readonly client_id: string;
      readonly sub: string;
      readonly exp: number;
      readonly iat: number;
      /**
       * `Bearer` (RFC 6749 §5.1) or `DPoP` (RFC 9449 §6.2) for an access token;
       * `refresh_token` for a refresh token.
       */
      readonly token_type: 'Bearer' | 'DPoP' | 'refresh_token';
      readonly iss: string;
      /** The API an access token is for (RFC 9068 §3), or this server for its own. */
      readonly aud?: string;
      readonly jti?: string;
      /** RFC 9449 §6.2: the DPoP key a bound token is confirmed by, "cnf": {"jkt": …}. */
      readonly cnf?: { readonly jkt: string };
      /** RFC 8693 §4.1 (and §4 "in introspection responses"): who acts for `sub`, for a token exchange's token. */
      readonly act?: Actor;
    };

const INACTIVE: IntrospectionResponse = { active: false };

/** Who asks: a client (about the tokens issued to it) or a resource server (about tokens for it). */
export type Introspector = { readonly client: ClientRecord } | { readonly resource: ResourceRecord };

/**
 * What the caller may know about `token`. RFC 7662 §2.2: a token that is "not active, does
 * not exist on this server, or the protected resource is not allowed to introspect" gets
 * `{"active": false}` and nothing else. A client may introspect only tokens issued to it; a
 * resource server only access tokens whose audience it is (RFC 7662 §4: "the authorization
 * server MAY ... limit which protected resources are allowed to introspect which tokens").
 */
export async function introspectToken(deps: FlowDeps, caller: Introspector, token: string): Promise<IntrospectionResponse> {
  const issuer = deps.config.issuer;
  if (looksLikeJwt(token)) {
    const live = await liveAccessToken(deps, token);
    if (!live) return INACTIVE;
    if ('client' in caller ? live.claims.client_id !== caller.client.id : live.claims.aud !== caller.resource.identifier) return INACTIVE;
    const { claims } = live;
    return {
      active: true,
      scope: claims.scope.join(' '),
      client_id: claims.client_id,
      sub: claims.sub,
      exp: claims.exp,
      iat: claims.iat,
      token_type: claims.jkt === null ? 'Bearer' : 'DPoP',
      iss: issuer,
      aud: claims.aud,
      jti: claims.jti,
      ...(claims.jkt === null ? {} : { cnf: { jkt: claims.jkt } }),
      ...(claims.act === null ? {} : { act: claims.act }),
    };
  }

  // A refresh token is only ever presented to this server: no resource server has one to ask about.
  if (!('client' in caller)) return INACTIVE;
  const { client } = caller;
  const now = deps.clock.now();
  // The token with its grant and user, as a refresh reads them (one statement on PostgreSQL).
  const read = await deps.store.refreshTokens.findForRefresh(timedSecretKey(token));
  if (!read) return INACTIVE;
  const { token: refresh, grant, user } = read;
  // A rotated refresh token is spent: its successor is the live one.
  if (refresh.clientId !== client.id || refresh.rotatedAt !== null || refresh.expiresAt <= now) return INACTIVE;
  if (!grant || grant.revokedAt !== null || !user || user.disabled) return INACTIVE;
  return {
    active: true,
    scope: refresh.scope.join(' '),
    client_id: refresh.clientId,
    sub: refresh.userId,
    exp: Math.floor(refresh.expiresAt / 1000),
    iat: Math.floor(refresh.createdAt / 1000),
    token_type: 'refresh_token',
    iss: issuer,
    ...(refresh.dpopJkt === null ? {} : { cnf: { jkt: refresh.dpopJkt } }),
  };
}
