/**
 * OIDC Core §5.5, the `claims` request parameter: individual claims asked for, for the
 * UserInfo response and for the ID token.
 */
import { OAuthError } from '../core/errors.ts';
import { scopeOfClaim, USER_CLAIMS, type ClaimScope, type UserClaim } from '../tokens/claims.ts';

/** The claims a request asked for by name, those this server keeps. */
export interface ClaimsRequest {
  readonly userinfo: readonly UserClaim[];
  readonly idToken: readonly UserClaim[];
  /**
   * §5.5.1.1: `acr` asked for in the ID token, with the classes its `value` or `values`
   * name (empty: any class, reported as it is); null when it was not asked for.
   */
  readonly idTokenAcr: readonly string[] | null;
}

/** §5.5.1.1: the classes the `acr` member of `id_token` asks for, or null when it has none. */
function requestedAcr(member: unknown): string[] | null {
  if (typeof member !== 'object' || member === null || !('acr' in member)) return null;
  const request = (member as Record<string, unknown>)['acr'];
  if (request === null || typeof request !== 'object') return [];
  const { value, values } = request as Record<string, unknown>;
  if (typeof value === 'string') return [value];
  return Array.isArray(values) ? values.filter((item): item is string => typeof item === 'string') : [];
}

/** §5.5: "a JSON object"; a member is null or an object ("essential", "value", "values"). */
function requested(member: unknown, name: string): UserClaim[] {
  if (member === undefined || member === null) return [];
  if (typeof member !== 'object' || Array.isArray(member)) throw new OAuthError('invalid_request', `claims: ${name} must be a JSON object`);
  const names: UserClaim[] = [];
  for (const [claim, request] of Object.entries(member)) {
    if (request !== null && (typeof request !== 'object' || Array.isArray(request))) {
      throw new OAuthError('invalid_request', `claims: ${name}.${claim} must be null or a JSON object`);
    }
    // §5.5: claims this server does not understand are ignored, and so is "essential"
    // (§5.5.1: "the Authorization Server ... SHOULD NOT generate an error" for one it
    // cannot return); "value" and "values" ask for a claim with a given value, which the
    // person's record has or has not.
    const known = USER_CLAIMS.find((candidate) => candidate === claim);
    if (known !== undefined && !names.includes(known)) names.push(known);
  }
  return names;
}

/**
 * The `claims` parameter, parsed; null when it was not sent. Not valid JSON, or not an
 * object of objects, is `invalid_request`.
 */
export function parseClaimsRequest(raw: string | null): ClaimsRequest | null {
  if (raw === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new OAuthError('invalid_request', 'claims must be a JSON object (OIDC Core §5.5)');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new OAuthError('invalid_request', 'claims must be a JSON object (OIDC Core §5.5)');
  const { userinfo, id_token: idToken } = parsed as Record<string, unknown>;
  return { userinfo: requested(userinfo, 'userinfo'), idToken: requested(idToken, 'id_token'), idTokenAcr: requestedAcr(idToken) };
}

/**
 * The scopes whose consent the claims asked for need (§5.4), among those the client may have:
 * the person approves `profile` to release the name asked for alone. A claim of a scope the
 * client is not registered for is not asked for at all (§5.5: the server may ignore it).
 */
export function scopesForClaims(claims: ClaimsRequest, allowed: readonly string[]): ClaimScope[] {
  const scopes: ClaimScope[] = [];
  for (const claim of [...claims.userinfo, ...claims.idToken]) {
    const scope = scopeOfClaim(claim);
    if (scope !== null && allowed.includes(scope) && !scopes.includes(scope)) scopes.push(scope);
  }
  return scopes;
}
