import { randomUUID } from 'node:crypto';
import { hashSecret, randomToken } from '../../core/crypto.ts';
import type { SessionRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import type { FlowDeps } from '../types.ts';
import { noteFirstUse } from '../registration/first-use.ts';
import { signInFacts } from '../second-factor/policy.ts';
import { approvalScope, clientResponse, type AuthorizationRequest, type ClientResponse } from './request.ts';

/**
 * The user approved (now, or before and it is remembered): record the approval as their
 * remembered grant for the client, grown to this request's scope, and, in the same
 * transaction, a code bound to the client, the redirect_uri and the PKCE challenge (RFC 7636
 * §4.4), and return the answer the browser carries to the client. RFC 6749 §4.1.2: the code is short-lived and
 * single-use; only its hash is stored. One grant per user and client: signing in again adds
 * no grant, and revoking it (the account page) forgets the consent.
 */
export async function approveAuthorization(
  deps: FlowDeps,
  request: AuthorizationRequest,
  session: SessionRecord,
  organizationId: string | null = null,
): Promise<ClientResponse> {
  const now = deps.clock.now();
  const code = randomToken(32);
  // One transaction: a code never refers to a grant that was not stored, nor is a grant
  // grown without the code it was approved for, nor either without its events.
  const signIn = signInFacts(session, request.acrValues ?? null);
  await transactionWithEvents(deps, async (tx, record) => {
    await noteFirstUse(tx.clients, request.client, now);
    const grant = await tx.grants.remember(
      {
        id: randomUUID(),
        userId: session.userId,
        clientId: request.client.id,
        // The person approved the scopes of the claims asked for by name too.
        scope: approvalScope(request),
        authTime: session.authTime,
        ...signIn,
        // The organization approved for (flows/organizations/choice.ts), kept with the grant.
        ...(organizationId === null ? {} : { organizationId }),
      },
      now,
    );
    await tx.codes.create({
      hash: hashSecret(code),
      clientId: request.client.id,
      userId: session.userId,
      grantId: grant.id,
      redirectUri: request.redirectUri,
      scope: request.scope,
      nonce: request.nonce,
      codeChallenge: request.codeChallenge,
      authTime: session.authTime,
      sid: session.sid,
      createdAt: now,
      expiresAt: now + deps.config.lifetimes.authorizationCode * 1000,
      consumedAt: null,
      dpopJkt: request.dpopJkt,
      idTokenClaims: request.idTokenClaims ?? [],
      ...(request.userinfoClaims?.length ? { userinfoClaims: request.userinfoClaims } : {}),
      ...(request.claimsScope?.length ? { claimsScope: request.claimsScope } : {}),
      ...(request.claimsLocales?.length ? { claimsLocales: request.claimsLocales } : {}),
      // The code's own, as its authTime is: approving again in another sign-in rewrites the grant's.
      ...signIn,
    });
    const about = { userId: session.userId, clientId: request.client.id, grantId: grant.id };
    await record({
      type: 'consent.given',
      ...about,
      detail: { scope: approvalScope(request).join(' '), ...(organizationId === null ? {} : { organization: organizationId }) },
    });
    await record({ type: 'code.issued', ...about });
  });
  return clientResponse(request, deps.config.issuer, { code });
}

/** The user declined (RFC 6749 §4.1.2.1: access_denied). */
export async function denyAuthorization(deps: FlowDeps, request: AuthorizationRequest, session: SessionRecord): Promise<ClientResponse> {
  await deps.events.emit({ type: 'consent.denied', userId: session.userId, clientId: request.client.id, detail: { scope: approvalScope(request).join(' ') } });
  return clientResponse(request, deps.config.issuer, {
    error: 'access_denied',
    error_description: 'the user denied the request',
  });
}
