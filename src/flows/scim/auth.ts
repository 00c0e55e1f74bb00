/**
 * Who calls `/scim/v2` (RFC 7644 §2: "the service provider ... SHOULD use OAuth 2.0 bearer
 * tokens"): a SCIM token made for a provisioning system (`tessera scim token add`), found by
 * its hash and compared in constant time, or a client_credentials access token for the admin
 * API's audience whose scope holds `scim` (and whose client still has it). Wrong tokens are
 * counted against the caller's address under the sign-in limit of wrong passwords from one
 * address (TESSERA_SIGN_IN_FAILURES_PER_ADDRESS in TESSERA_SIGN_IN_WINDOW): past it, 429.
 */
import { digestsEqual, hashSecret } from '../../core/crypto.ts';
import { countedAddress } from '../../core/networks.ts';
import { adminAudience } from '../../core/scopes.ts';
import { Attempt, isRefusal } from '../attempts.ts';
import { checkSenderConstraint, liveClientToken, looksLikeJwt } from '../lifecycle/access-token.ts';
import type { FlowDeps } from '../types.ts';
import { ScimError } from './errors.ts';

/** The scope a client_credentials token needs to call `/scim/v2`. */
export const SCIM_SCOPE = 'scim';

/** Who a request to `/scim/v2` came from: a SCIM token (by its name) or a client (by its id). */
export type ScimCaller = { readonly kind: 'token'; readonly id: string; readonly name: string } | { readonly kind: 'client'; readonly id: string };

/** The rate-limit key of wrong SCIM tokens from an address. */
export const SCIM_FAILURE_KEY = 'scim:address:';

async function identify(deps: Pick<FlowDeps, 'store' | 'config' | 'tokens' | 'clock'>, token: string): Promise<ScimCaller | null> {
  if (looksLikeJwt(token)) {
    const claims = await deps.tokens.readAccessToken(token);
    if (claims === null || claims.aud !== adminAudience(deps.config.issuer)) return null;
    const client = await liveClientToken(deps, claims);
    if (client === null || !claims.scope.includes(SCIM_SCOPE) || !client.scopes.includes(SCIM_SCOPE)) return null;
    // RFC 9449: a token bound to a key is not a bearer token; SCIM clients send Bearer only.
    try {
      checkSenderConstraint(claims, { scheme: 'Bearer', token, proof: null });
    } catch {
      return null;
    }
    return { kind: 'client', id: client.id };
  }
  if (token.length > 512) return null;
  const hash = hashSecret(token);
  const found = await deps.store.scimTokens.findByHash(hash);
  if (found === null || !digestsEqual(found.tokenHash, hash)) return null;
  await deps.store.scimTokens.markUsed(found.id, deps.clock.now());
  return { kind: 'token', id: found.id, name: found.name };
}

/** The caller of a request with bearer `token` from `ip`; 401 for a wrong token, 429 past the limit. */
export async function scimCaller(
  deps: Pick<FlowDeps, 'store' | 'config' | 'tokens' | 'clock' | 'events'>,
  token: string | null,
  ip: string,
): Promise<ScimCaller> {
  if (token === null) throw new ScimError(401, null, 'a bearer token is required: Authorization: Bearer <a SCIM token from tessera scim token add>');
  const settings = deps.config.signIn;
  const now = deps.clock.now();
  const limits = [{ key: `${SCIM_FAILURE_KEY}${countedAddress(ip)}`, limit: settings.perAddress }];
  const reserved = await Attempt.reserve(deps.store.rateLimits, limits, settings.windowSeconds * 1000, now);
  if (isRefusal(reserved)) {
    await deps.events.refused({ type: 'scim.refused', ip, detail: { reason: 'limit' } }, reserved.limit.key, reserved.endsAt);
    throw new ScimError(429, null, `too many wrong tokens from this address; try again in ${reserved.retryAfterSeconds} seconds`, reserved.retryAfterSeconds);
  }
  const caller = await identify(deps, token);
  // A wrong token stays counted, and is in the audit trail as a wrong password is
  // (`signin.failed`); a right one gives its place back.
  if (caller === null) {
    await deps.events.emit({ type: 'scim.refused', ip, detail: { reason: 'wrong_token' } });
    throw new ScimError(401, null, "the bearer token is unknown, withdrawn or expired, or not a client's with the scope scim");
  }
  await reserved.succeeded();
  return caller;
}
