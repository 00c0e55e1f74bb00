/**
 * RFC 6749 §6 (Refreshing an Access Token), with refresh token rotation and reuse detection
 * (RFC 9700 §4.14.2) and the ID token rules of OIDC Core §12.2.
 */
import { keptSignIn } from '../../core/auth-methods.ts';
import { timedSecretKey } from '../../core/timed-secret.ts';
import { OAuthError } from '../../core/errors.ts';
import { GRANT_REFRESH_TOKEN } from '../../core/protocol.ts';
import { parseScope } from '../../core/scopes.ts';
import type { ClientRecord, RefreshTokenRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import { clientMayHave, tokenTarget } from '../resources.ts';
import type { FlowDeps, TokenGrant } from '../types.ts';

/**
 * RFC 6749 §6: "The requested scope MUST NOT include any scope not originally granted by the
 * resource owner, and if omitted is treated as equal to the scope originally granted."
 * Nor one the client is no longer registered for (`clientMayHave`): RFC 6749 §5.2
 * invalid_scope, "The requested scope is invalid, unknown, malformed, or exceeds the scope
 * granted by the resource owner".
 */
function requestedScope(raw: string | undefined, granted: readonly string[], client: ClientRecord): readonly string[] | undefined {
  if (raw === undefined) return undefined;
  const scope = parseScope(raw);
  if (scope === null || scope.length === 0) throw new OAuthError('invalid_scope', 'scope is malformed');
  const widened = scope.filter((value) => !granted.includes(value));
  if (widened.length > 0) throw new OAuthError('invalid_scope', `scope was not granted: ${widened.join(' ')}`);
  const unregistered = scope.filter((value) => !clientMayHave(client, value));
  if (unregistered.length > 0) throw new OAuthError('invalid_scope', `scope is no longer allowed for this client: ${unregistered.join(' ')}`);
  return scope;
}

/**
 * Why a refresh token the client holds cannot be exchanged. RFC 9700 §4.14.2: when a rotated
 * refresh token is used again, the server "cannot determine which party submitted the
 * invalid refresh token", so it "will revoke the active refresh token" of the grant; here the
 * whole grant is revoked, and with it every token issued under it.
 */
async function refusal(deps: FlowDeps, token: RefreshTokenRecord, now: number): Promise<OAuthError> {
  if (token.rotatedAt !== null) {
    await transactionWithEvents(deps, async (tx, record) => {
      const about = { userId: token.userId, clientId: token.clientId, grantId: token.grantId };
      const revoked = await tx.grants.revoke(token.grantId, now);
      await record({ type: 'refresh.reuse_detected', ...about });
      if (revoked) await record({ type: 'grant.revoked', ...about, detail: { by: 'reuse_detection' } });
    });
    return new OAuthError('invalid_grant', 'refresh token has already been used; the authorization is revoked');
  }
  if (token.expiresAt <= now) return new OAuthError('invalid_grant', 'refresh token has expired');
  return new OAuthError('invalid_grant', 'the authorization has been revoked');
}

export const refreshTokenGrant: TokenGrant = {
  type: GRANT_REFRESH_TOKEN,

  async handle(deps, client, params, proof) {
    const presented = params['refresh_token'];
    if (presented === undefined) throw new OAuthError('invalid_request', 'refresh_token is required');
    const now = deps.clock.now();
    const hash = timedSecretKey(presented);

    // The token with its grant and user, in one read (one statement on PostgreSQL): all the
    // refresh decides from is known before the rotation.
    const read = await deps.store.refreshTokens.findForRefresh(hash);
    // RFC 6749 §6: the server MUST "ensure that the refresh token was issued to the
    // authenticated client". Another client's token is treated as unknown.
    if (!read || read.token.clientId !== client.id) throw new OAuthError('invalid_grant', 'refresh token is invalid');
    const { token: found, grant, user } = read;
    if (found.rotatedAt !== null || found.expiresAt <= now) throw await refusal(deps, found, now);
    // RFC 9449 §5: a public client's refresh token is bound to its DPoP key, and "the
    // authorization server MUST ... check that the refresh token ... is bound to the same
    // public key" as the proof. The binding never changes, so it is checked before the
    // rotation, which a refused request leaves undone.
    if (found.dpopJkt !== null && found.dpopJkt !== proof?.jkt) {
      throw new OAuthError(
        'invalid_dpop_proof',
        proof ? 'the DPoP proof is not signed by the key this refresh token is bound to' : 'this refresh token is bound to a DPoP key: send a DPoP proof',
      );
    }
    // Checked before rotation, so a refused scope or resource leaves the refresh token usable.
    // RFC 8707 §2.2: a refresh may narrow to one of the APIs granted and some of its scopes;
    // a removed API is refused here, so its grants' access ends with it.
    if (!grant) throw new OAuthError('invalid_grant', 'the authorization has been revoked');
    // A remembered grant renewed since may be younger than an API registered after this
    // token's approval: an API scope counts only while the grant still holds it, which it
    // stops doing when its API is removed (flows/manage/resources.ts removeResource), until
    // the person approves that name again, or when its API drops it (updateResource).
    // A scope the operator has taken from the client since is left out (`client`);
    // the refresh token keeps it (RFC 6749 §6: its scope is the one granted), so it counts
    // again if the client is given it back while the grant still holds it.
    const target = await tokenTarget(
      deps.store,
      { scope: found.scope, createdAt: grant.renewedAt ?? grant.createdAt, held: grant.scope, client },
      params['resource'],
      requestedScope(params['scope'], found.scope, client),
    );

    // The account is checked before the rotation, so that a refusal spends nothing. Disabling
    // a person revokes their grants in the same transaction (flows/users.ts), which the
    // rotation refuses too; this is the account's own check, as every grant makes it.
    if (!user || user.disabled) throw new OAuthError('invalid_grant', 'the user account is not active');
    // OIDC Core §12.2: a refreshed ID token keeps `sub`, `auth_time` and `sid`, says what the
    // original said of the sign-in (`amr`, `acr`), carries the claims the original request
    // asked for (§5.5, as released now: those of the scope it is refreshed for and those
    // approved by name, the profile as it is), and no nonce. The access token keeps the
    // claims asked for by name in UserInfo. A token's own facts never change: they are read
    // from the record found.
    const issuance = {
      client,
      user,
      ...target,
      grantId: found.grantId,
      authTime: found.authTime,
      sid: found.sid,
      refreshScope: found.scope,
      dpopJkt: proof?.jkt ?? null,
      idTokenClaims: found.idTokenClaims,
      claimsLocales: found.claimsLocales ?? [],
      userinfoClaims: found.userinfoClaims ?? [],
      claimsScope: (found.claimsScope ?? []).filter((value) => clientMayHave(client, value)),
      signIn: keptSignIn(found),
    };
    const plan = deps.tokens.plan(issuance, grant);
    const event = deps.events.make({ type: 'refresh.rotated', userId: user.id, username: user.username, clientId: client.id, grantId: found.grantId });
    // Exactly one caller rotates the token (everyone else finds it rotated, which is reuse),
    // and with the rotation, in the same write, the next refresh token, the grant's use and
    // the event: a refresh commits once, as a code exchange does. The tokens are signed once
    // it has committed.
    const rotated = await deps.store.refreshTokens.rotateWith(hash, client.id, now, {
      activeUntil: plan.activeUntil,
      ...(plan.refresh === undefined ? {} : { refreshToken: plan.refresh.record }),
      event,
    });
    if (!rotated) throw await refusal(deps, (await deps.store.refreshTokens.find(hash)) ?? found, now);
    const response = await deps.tokens.sign(issuance, plan);
    deps.events.publish(event);
    return response;
  },
};
