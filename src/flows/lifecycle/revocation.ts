/**
 * RFC 7009 (OAuth 2.0 Token Revocation) §2.1-2.2, for refresh tokens and access tokens.
 */
import { timedSecretKey } from '../../core/timed-secret.ts';
import type { ClientRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import type { FlowDeps } from '../types.ts';
import { looksLikeJwt } from './access-token.ts';

/**
 * Revokes `token` if it was issued to `client`; does nothing otherwise. RFC 7009 §2.2: "invalid
 * tokens do not cause an error response since the client cannot handle such an error in a
 * reasonable way", so the caller answers 200 whatever happened here. The token type hint is
 * not needed: the two kinds of token cannot be mistaken for each other.
 */
export async function revokeToken(deps: FlowDeps, client: ClientRecord, token: string): Promise<void> {
  if (looksLikeJwt(token)) {
    const claims = await deps.tokens.readAccessToken(token);
    // RFC 7009 §2.1: the server "verifies whether the token was issued to the client making
    // the revocation request". Another client's token is left alone, silently.
    if (claims && claims.client_id === client.id) {
      await transactionWithEvents(deps, async (tx, record) => {
        await tx.accessTokens.revoke(claims.jti, claims.exp * 1000);
        await record({
          type: 'token.revoked',
          userId: claims.gid === null ? null : claims.sub,
          clientId: client.id,
          grantId: claims.gid,
          detail: { token_type: 'access_token', jti: claims.jti },
        });
      });
    }
    return;
  }
  const refresh = await deps.store.refreshTokens.find(timedSecretKey(token));
  // RFC 7009 §2.1: for a refresh token the server "SHOULD also invalidate all access tokens
  // based on the same authorization grant": revoking the grant ends them all.
  if (refresh && refresh.clientId === client.id) {
    await transactionWithEvents(deps, async (tx, record) => {
      const about = { userId: refresh.userId, clientId: client.id, grantId: refresh.grantId };
      const revoked = await tx.grants.revoke(refresh.grantId, deps.clock.now());
      await record({ type: 'token.revoked', ...about, detail: { token_type: 'refresh_token' } });
      if (revoked) await record({ type: 'grant.revoked', ...about, detail: { by: 'client' } });
    });
  }
}
