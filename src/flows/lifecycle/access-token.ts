import { OAuthError } from '../../core/errors.ts';
import { GRANT_CLIENT_CREDENTIALS, GRANT_JWT_BEARER, GRANT_TOKEN_EXCHANGE } from '../../core/protocol.ts';
import type { DpopProof } from '../dpop/proof.ts';
import type { ClientRecord, ResourceRecord, UserRecord } from '../../store/types.ts';
import type { AccessTokenClaims } from '../../tokens/issue.ts';
import type { FlowDeps } from '../types.ts';

/**
 * An access token that can still be used, with the user it speaks for; `user` is null for
 * a client's own token (client_credentials), which speaks for its client alone.
 */
export type LiveAccessToken =
  | {
      readonly claims: AccessTokenClaims;
      readonly user: UserRecord;
      /** The API it is for (its `aud`); null when it is for this server's own API (userinfo). */
      readonly resource: ResourceRecord | null;
    }
  | { readonly claims: AccessTokenClaims; readonly user: null; readonly client: ClientRecord; readonly resource: ResourceRecord };

/** How the access token was presented: its scheme and, for DPoP, the checked proof. */
export interface Presentation {
  readonly scheme: 'Bearer' | 'DPoP';
  readonly token: string;
  readonly proof: DpopProof | null;
}

/** Checks that a token is presented as its binding requires (RFC 9449 §7): a resource's check, whichever resource. */
export function checkSenderConstraint(claims: Pick<AccessTokenClaims, 'jkt'>, presented: Presentation): void {
  const { jkt } = claims;
  // RFC 9449 §7.2: a resource "MUST NOT grant access to the resource unless all checks are
  // successful"; a DPoP-bound token sent as a bearer token is refused, or anyone who stole
  // it could use it without the key.
  if (jkt !== null && presented.scheme !== 'DPoP')
    throw new OAuthError('invalid_token', 'this access token is bound to a DPoP key: send it with the DPoP scheme and a proof');
  if (jkt === null && presented.scheme === 'DPoP')
    throw new OAuthError('invalid_token', 'this access token is not bound to a DPoP key: send it with the Bearer scheme');
  // RFC 9449 §7.1: the resource checks "that the public key to which the access token is
  // bound matches the public key of the DPoP proof".
  if (jkt !== null && presented.proof?.jkt !== jkt)
    throw new OAuthError('invalid_dpop_proof', 'the DPoP proof is not signed by the key the access token is bound to');
}

/** Access tokens are JWTs (three dot-separated parts); refresh tokens are opaque. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

/**
 * Whether the client registered under a token's `client_id` still holds the token: it is the
 * client the token was issued to, and it has not been told to forget its tokens since
 * (`tokensRevokedAt`). A client registered again under a removed one's id (client_id may be
 * chosen) is another client: the removed one's tokens, and its revocations, are not its.
 * `iat` is in whole seconds: a token issued in the second its client was registered is its.
 */
function clientHolds(client: ClientRecord, claims: Pick<AccessTokenClaims, 'iat'>): boolean {
  if (Math.floor(client.createdAt / 1000) > claims.iat) return false;
  return client.tokensRevokedAt == null || claims.iat * 1000 > client.tokensRevokedAt;
}

/**
 * Whether a client's own token (no grant) still stands: not revoked by its `jti`, its client
 * still registered for the client_credentials grant and still holding it (`clientHolds`).
 */
export async function liveClientToken(deps: Pick<FlowDeps, 'store'>, claims: AccessTokenClaims): Promise<ClientRecord | null> {
  if (claims.gid !== null) return null;
  const [revoked, client] = await Promise.all([deps.store.accessTokens.isRevoked(claims.jti), deps.store.clients.get(claims.client_id)]);
  if (revoked || !client || client.id !== claims.sub || !client.grantTypes.includes(GRANT_CLIENT_CREDENTIALS)) return null;
  return clientHolds(client, claims) ? client : null;
}

/**
 * Whether the client that exchanged a person's token for this one (RFC 8693; its `client_id`,
 * the current actor) may still: still registered for the token exchange grant and for this
 * API, and still holding it (`clientHolds`). An operator who takes the grant or the API away
 * ends the tokens it had.
 */
async function exchangeStands(deps: Pick<FlowDeps, 'store'>, claims: AccessTokenClaims): Promise<boolean> {
  const client = await deps.store.clients.get(claims.client_id);
  if (!client?.grantTypes.includes(GRANT_TOKEN_EXCHANGE) || !(client.exchangeAudiences ?? []).includes(claims.aud)) return false;
  return clientHolds(client, claims);
}

/**
 * A person's token redeemed for an ID-JAG (flows/jwt-bearer/token.ts): not revoked by its
 * `jti`, its issuer still trusted, its client still registered for the jwt-bearer grant and
 * still holding it (`clientHolds`), its person active, its API registered before it was issued.
 */
async function liveAssertedToken(deps: FlowDeps, claims: AccessTokenClaims, issuer: string): Promise<LiveAccessToken | null> {
  const [revoked, trusted, client, user, resource] = await Promise.all([
    deps.store.accessTokens.isRevoked(claims.jti),
    deps.store.trustedIssuers.get(issuer),
    deps.store.clients.get(claims.client_id),
    deps.store.users.get(claims.sub),
    deps.store.resources.get(claims.aud),
  ]);
  if (revoked || trusted === null || trusted.createdAt > claims.iat * 1000 + 999) return null;
  if (!client?.grantTypes.includes(GRANT_JWT_BEARER) || !clientHolds(client, claims)) return null;
  if (!user || user.disabled || !resource || Math.floor(resource.createdAt / 1000) > claims.iat) return null;
  return { claims, user, resource };
}

/**
 * The access token if it is still good: signed here and unexpired, not revoked by its `jti`
 * (RFC 7009), its grant not revoked (by the user, by reuse of a code or refresh token), and
 * its user still active, and its audience this server or an API still registered (removing
 * an API ends its tokens at once). A client's own token (client_credentials) stands while
 * `liveClientToken` says so, for a registered API only. Null for anything else: callers tell
 * nobody which check failed.
 */
export async function liveAccessToken(deps: FlowDeps, token: string): Promise<LiveAccessToken | null> {
  if (!looksLikeJwt(token)) return null;
  const claims = await deps.tokens.readAccessToken(token);
  if (!claims) return null;
  const ownApi = claims.aud === deps.config.issuer;
  if (claims.gid === null && claims.assertedBy) return ownApi ? null : liveAssertedToken(deps, claims, claims.assertedBy);
  if (claims.gid === null) {
    if (ownApi) return null;
    const [client, resource] = await Promise.all([liveClientToken(deps, claims), deps.store.resources.get(claims.aud)]);
    // An API registered again after the token was issued is another API. `iat` is in whole
    // seconds: a token issued in the second the API was registered is compared by that second,
    // or a token asked for right after registering the API would be refused.
    if (!client || !resource || Math.floor(resource.createdAt / 1000) > claims.iat) return null;
    return { claims, user: null, client, resource };
  }
  const [revoked, grant, user, resource] = await Promise.all([
    deps.store.accessTokens.isRevoked(claims.jti),
    deps.store.grants.get(claims.gid),
    deps.store.users.get(claims.sub),
    ownApi ? null : deps.store.resources.get(claims.aud),
  ]);
  if (revoked || !grant || grant.revokedAt !== null || grant.userId !== claims.sub) return null;
  // A token exchange's token (RFC 8693, with `act`) lives on the grant of the token it came
  // from, so that revoking that grant or disabling the person ends it; it was issued to the
  // exchanging client, which must still be allowed it. Any other is its grant's client's.
  if (claims.act === null ? grant.clientId !== claims.client_id : !(await exchangeStands(deps, claims))) return null;
  if (!user || user.disabled) return null;
  // An API registered again after the grant is another API for this grant (see grantedResources);
  // a remembered grant counts from its last approval, which may have added the API.
  if (!ownApi && (!resource || resource.createdAt > (grant.renewedAt ?? grant.createdAt))) return null;
  return { claims, user, resource };
}
