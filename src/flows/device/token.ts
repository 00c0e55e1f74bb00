/**
 * RFC 8628 §3.4 (Device Access Token Request) and §3.5 (Device Access Token Response).
 *
 * Polling is this server's hottest path: every waiting device asks every few seconds. A
 * poll is one store call, `devices.poll`: one indexed UPDATE that records the poll and
 * decides its outcome. Only the one poll that wins an approval reads the user and signs.
 */
import { OAuthError } from '../../core/errors.ts';
import { GRANT_DEVICE_CODE } from '../../core/protocol.ts';
import { resourceIndicatorProblem, tokenTarget } from '../resources.ts';
import type { TokenGrant } from '../types.ts';
import { deviceCodeKey } from './device-code.ts';

export const deviceCodeGrant: TokenGrant = {
  type: GRANT_DEVICE_CODE,

  async handle(deps, client, params, proof) {
    // §3.4: device_code REQUIRED. "The device verification code, "device_code" from the
    // device authorization response".
    const deviceCode = params['device_code'];
    if (deviceCode === undefined) throw new OAuthError('invalid_request', 'device_code is required');
    // RFC 8707 §2: a malformed resource is refused before the poll, which could spend the approval.
    const resource = params['resource'];
    const problem = resource === undefined ? null : resourceIndicatorProblem(resource);
    if (problem) throw new OAuthError('invalid_target', `resource ${problem}`);

    const hash = deviceCodeKey(deviceCode);
    // A device code bound to a DPoP key (RFC 9449, by the proof sent with the device
    // authorization request) is polled only with a proof by that key: any other poll
    // changes nothing, so it neither takes the tokens nor slows the device down.
    const now = deps.clock.now();
    const polled = await deps.store.devices.poll(hash, client.id, now, proof?.jkt ?? null);
    if (!polled) {
      const found = await deps.store.devices.find(hash);
      if (found !== null && found.clientId === client.id && found.dpopJkt !== null) {
        throw new OAuthError(
          'invalid_dpop_proof',
          proof ? 'the DPoP proof is not signed by the key this device code is bound to' : 'this device code is bound to a DPoP key: send a DPoP proof',
        );
      }
      // RFC 6749 §5.2 invalid_grant: the grant "is invalid, expired, revoked, [...] or was
      // issued to another client". A device code polled by another client is unknown to it.
      throw new OAuthError('invalid_grant', 'device_code is invalid');
    }

    switch (polled.outcome) {
      case 'expired':
        // §3.5 expired_token: 'The "device_code" has expired, and the device authorization
        // session has concluded.'
        // Recorded at the first poll after expiry only (the poll then keeps its time as
        // last_polled_at): a device that polls on, as §3.5 says it should not, or an
        // attacker replaying an expired code as fast as it can, writes no more events.
        if (polled.record.status === 'pending' && polled.record.lastPolledAt === now) {
          await deps.events.emit({ type: 'device.expired', clientId: client.id, ip: polled.record.requestIp, userAgent: polled.record.requestUserAgent });
        }
        throw new OAuthError('expired_token', 'the device code has expired; start again');
      case 'consumed':
        // §3.5: tokens are issued once; the device code was then spent.
        throw new OAuthError('invalid_grant', 'the device code has already been used');
      case 'denied':
        // §3.5 access_denied: "The authorization request was denied."
        throw new OAuthError('access_denied', 'the user denied the request');
      case 'slow_down':
        // §3.5 slow_down: "the authorization request is still pending and polling should
        // continue, but the interval MUST be increased by 5 seconds for this and all
        // subsequent requests." The store has grown the interval.
        throw new OAuthError('slow_down', `polling too fast; wait at least ${polled.record.interval} seconds between requests`);
      case 'pending':
        // §3.5 authorization_pending: "the end user hasn't yet completed the
        // user-interaction steps [...] The client SHOULD repeat the access token request".
        throw new OAuthError('authorization_pending', 'the user has not yet approved or denied the request');
      case 'issue':
        break;
    }

    // This poll consumed the approval: no other caller gets here for this device code.
    const { record } = polled;
    if (record.userId === null || record.grantId === null || record.authTime === null) {
      throw new Error(`approved device authorization ${record.grantId ?? '(no grant)'} lacks its decision`);
    }
    const [grant, user] = await Promise.all([deps.store.grants.get(record.grantId), deps.store.users.get(record.userId)]);
    if (!grant || grant.revokedAt !== null) throw new OAuthError('invalid_grant', 'the authorization has been revoked');
    // The account is checked again now: a user disabled after approving gets no tokens.
    if (!user || user.disabled) throw new OAuthError('invalid_grant', 'the user account is not active');
    // RFC 8707 §2.2: the token is for the API the resource parameter names, or the one the
    // grant's scopes name. A refusal here spends the approval, like any other. A scope the
    // operator has taken from the client since the person approved is left out.
    const target = await tokenTarget(deps.store, { ...grant, client }, params['resource']);
    // §3.5: "the token endpoint responds with a success response defined in Section 5.1 of
    // [RFC6749]". There is no nonce: the device flow has no authorization request to carry one.
    const response = await deps.tokens.issue({
      client,
      user,
      ...target,
      grantId: record.grantId,
      authTime: record.authTime,
      nonce: null,
      dpopJkt: proof?.jkt ?? null,
    });
    await deps.events.emit({ type: 'device.consumed', userId: user.id, username: user.username, clientId: client.id, grantId: record.grantId });
    return response;
  },
};
