/**
 * RFC 6749 §4.1.3 (Access Token Request) with RFC 7636 §4.5-4.6 (PKCE verification).
 */
import { keptSignIn } from '../../core/auth-methods.ts';
import { CODE_VERIFIER_PATTERN, hashSecret, s256 } from '../../core/crypto.ts';
import { OAuthError } from '../../core/errors.ts';

import { GRANT_AUTHORIZATION_CODE } from '../../core/protocol.ts';
import { transactionWithEvents } from '../events.ts';
import { clientMayHave, tokenTarget, type TokenTarget } from '../resources.ts';
import type { FlowDeps, TokenGrant } from '../types.ts';
import type { AuthorizationCodeRecord, ClientRecord, UserRecord } from '../../store/types.ts';
import type { Issuance } from '../../tokens/issue.ts';

/** What the tokens for a redeemed code carry: the code's own facts, its user and its target. */
function issuanceOf(code: AuthorizationCodeRecord, client: ClientRecord, user: UserRecord, target: TokenTarget, dpopJkt: string | null): Issuance {
  return {
    client,
    user,
    ...target,
    grantId: code.grantId,
    authTime: code.authTime,
    nonce: code.nonce,
    sid: code.sid,
    refreshScope: code.scope,
    dpopJkt,
    idTokenClaims: code.idTokenClaims,
    claimsLocales: code.claimsLocales ?? [],
    userinfoClaims: code.userinfoClaims ?? [],
    // As a refresh does: nothing the operator has taken from the client since the approval.
    claimsScope: (code.claimsScope ?? []).filter((value) => clientMayHave(client, value)),
    signIn: keptSignIn(code),
  };
}

/** Why a code was not redeemed, as the client is told it (and a replay ends the code's grant). */
async function refuse(
  deps: FlowDeps,
  hash: string,
  clientId: string,
  redirectUri: string,
  verifier: string | undefined,
  dpopJkt: string | null,
  now: number,
): Promise<never> {
  const found = await deps.store.codes.find(hash);
  // RFC 6749 §5.2 invalid_grant: the code "was issued to another client". A code seen
  // by anyone but its own client tells that caller nothing, and changes nothing: only
  // the client it was issued to, authenticated as at this endpoint, can end its grant.
  if (!found || found.clientId !== clientId) throw new OAuthError('invalid_grant', 'authorization code is invalid');
  if (found.consumedAt !== null) {
    // RFC 6749 §4.1.2: if a code is used more than once, the server SHOULD revoke all
    // tokens previously issued based on that code.
    await transactionWithEvents(deps, async (tx, record) => {
      const about = { userId: found.userId, clientId: found.clientId, grantId: found.grantId };
      const revoked = await tx.grants.revoke(found.grantId, now);
      await record({ type: 'code.replayed', ...about });
      if (revoked) await record({ type: 'grant.revoked', ...about, detail: { by: 'code_replay' } });
    });
    throw new OAuthError('invalid_grant', 'authorization code has already been used');
  }
  // RFC 6749 §5.2: invalid_grant when the grant is "revoked": by its person, an operator, the
  // person's account disabled, or the replay of another code of the grant.
  const grant = await deps.store.grants.get(found.grantId);
  if (grant !== null && grant.revokedAt !== null) throw new OAuthError('invalid_grant', 'the authorization was revoked');
  if (found.expiresAt <= now) throw new OAuthError('invalid_grant', 'authorization code has expired');
  if (found.redirectUri !== redirectUri) throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
  // RFC 9449 §10: "the authorization server MUST ensure that the DPoP proof used at the
  // token endpoint is bound to the key referenced by dpop_jkt". The code stays unused.
  if (found.dpopJkt !== null && found.dpopJkt !== dpopJkt) {
    throw new OAuthError(
      'invalid_dpop_proof',
      dpopJkt !== null ? 'the DPoP proof is not signed by the key the code is bound to (dpop_jkt)' : 'this code is bound to a DPoP key: send a DPoP proof',
    );
  }
  // Everything the client sent matches: what refused the code is the session it was issued in,
  // which has ended (sql/codes.ts LIVE_SESSION).
  const challengeMatches = verifier === undefined ? found.codeChallenge === '' : found.codeChallenge === s256(verifier);
  if (challengeMatches && found.sid !== null)
    throw new OAuthError('invalid_grant', 'the sign-in session the code was issued in has ended (the person signed out)');
  if (found.codeChallenge === '') throw new OAuthError('invalid_grant', 'code_verifier was sent, but the authorization request had no code_challenge');
  if (verifier === undefined) throw new OAuthError('invalid_grant', 'code_verifier is required: the authorization request had a code_challenge');
  throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
}

export const authorizationCodeGrant: TokenGrant = {
  type: GRANT_AUTHORIZATION_CODE,

  async handle(deps, client, params, proof) {
    const code = params['code'];
    const redirectUri = params['redirect_uri'];
    const verifier = params['code_verifier'];
    if (code === undefined) throw new OAuthError('invalid_request', 'code is required');
    // RFC 6749 §4.1.3: redirect_uri is REQUIRED if it was included in the authorization
    // request, and here it always is.
    if (redirectUri === undefined) throw new OAuthError('invalid_request', 'redirect_uri is required');
    // RFC 7636 §4.5: the client MUST send the code_verifier; only a client registered with
    // PKCE optional may leave it out, for a code asked for without a challenge.
    if (verifier === undefined && client.pkce === 'required') throw new OAuthError('invalid_request', 'code_verifier is required');
    // RFC 7636 §4.1: code-verifier = 43*128unreserved. A malformed one can never match.
    if (verifier !== undefined && !CODE_VERIFIER_PATTERN.test(verifier)) {
      throw new OAuthError('invalid_grant', 'code_verifier must be 43 to 128 unreserved characters');
    }

    const now = deps.clock.now();
    const hash = hashSecret(code);
    // The code with its grant and user, in one read: everything the tokens are decided from
    // is known before the code is redeemed, so that the redemption and every write that
    // follows it (the grant's use, the refresh token, the session's client, the event) are
    // one statement, committed before the answer.
    const found = await deps.store.codes.findForExchange(hash);
    const unredeemed = found?.code;
    // RFC 8707 §2.2: which API the token is for, decided from the code's scope before the code
    // is redeemed, so that a wrong resource leaves the code usable with the right one. The
    // grant was created with its code: the code's createdAt is the grant's.
    const target =
      unredeemed && unredeemed.clientId === client.id && unredeemed.consumedAt === null && unredeemed.expiresAt > now
        ? await tokenTarget(deps.store, { scope: unredeemed.scope, createdAt: unredeemed.createdAt, client }, params['resource'])
        : null;
    // RFC 7636 §4.6: the server verifies by comparing BASE64URL(SHA256(code_verifier)) with the
    // stored code_challenge; this and the code's client, redirect_uri, lifetime and single use
    // are checked in the one statement that redeems it. A code issued without a challenge has
    // an empty one, which no verifier's hash matches: RFC 9700 §4.8.2, "if there was no
    // code_challenge in the authorization request, a request to the token endpoint containing
    // a code_verifier is rejected", and the reverse.
    const codeChallenge = verifier === undefined ? '' : s256(verifier);
    const binding = { clientId: client.id, redirectUri, codeChallenge, dpopJkt: proof?.jkt ?? null };
    const person = found?.user;
    if (target && unredeemed && person && !person.disabled && found.grant && found.grant.revokedAt === null) {
      const issuance = issuanceOf(unredeemed, client, person, target, proof?.jkt ?? null);
      const plan = deps.tokens.plan(issuance, found.grant);
      const event = deps.events.make({ type: 'code.redeemed', userId: person.id, username: person.username, clientId: client.id, grantId: unredeemed.grantId });
      const redeemed = await deps.store.codes.redeem(hash, binding, now, {
        activeUntil: plan.activeUntil,
        ...(plan.refresh === undefined ? {} : { refreshToken: plan.refresh.record }),
        // Back-Channel Logout 1.0 §2.7: the clients to notify when the session ends are those
        // that received an ID token in it. Kept no longer than a session can last.
        ...(unredeemed.sid !== null && issuance.scope.includes('openid')
          ? { sessionClient: { sid: unredeemed.sid, expiresAt: now + deps.config.lifetimes.session * 1000 } }
          : {}),
        event,
      });
      if (redeemed) {
        // The grant is not checked again here: the one caller that redeemed the code is owed
        // its tokens even when a concurrent replay of the same code revokes the grant a moment
        // later (otherwise a replay racing the client would leave nobody with tokens); tokens
        // issued under a revoked grant are dead wherever revocation is checked.
        const tokens = await deps.tokens.sign(issuance, plan);
        deps.events.publish(event);
        return tokens;
      }
      return refuse(deps, hash, client.id, redirectUri, verifier, proof?.jkt ?? null, now);
    }
    // RFC 6749 §5.2 invalid_grant: no such code.
    if (!found) throw new OAuthError('invalid_grant', 'authorization code is invalid');
    // The rest (a code of another client, spent, expired, of a revoked grant; its user gone or
    // disabled, its grant gone): redeemed as the checks above would have, burning a code that
    // is only refused for its user or a grant gone, and the caller told why. A revoked grant
    // redeems none of its codes (consumeCode), and `refuse` says so.
    const redeemed = await deps.store.codes.consume(hash, binding, now);
    if (!redeemed) return refuse(deps, hash, client.id, redirectUri, verifier, proof?.jkt ?? null, now);
    const user = await deps.store.users.get(redeemed.userId);
    if (!user || user.disabled) throw new OAuthError('invalid_grant', 'the user account is not active');
    const issuance = issuanceOf(
      redeemed,
      client,
      user,
      target ?? (await tokenTarget(deps.store, { scope: redeemed.scope, createdAt: redeemed.createdAt, client }, params['resource'])),
      proof?.jkt ?? null,
    );
    const tokens = await deps.tokens.issue(issuance);
    // Back-Channel Logout 1.0 §2.7: the clients to notify when the session ends are those
    // that received an ID token in it. Kept no longer than a session can last.
    if (redeemed.sid !== null && tokens.id_token !== undefined) {
      await deps.store.sessions.addClient(redeemed.sid, client.id, now + deps.config.lifetimes.session * 1000);
    }
    await deps.events.emit({ type: 'code.redeemed', userId: user.id, username: user.username, clientId: client.id, grantId: redeemed.grantId });
    return tokens;
  },
};
