/**
 * RFC 8628 §3.1 (Device Authorization Request) and §3.2 (Device Authorization Response).
 */
import { DEVICE_VERIFICATION_PATH } from '../../core/endpoints.ts';
import { OAuthError } from '../../core/errors.ts';
import { inNetworks } from '../../core/networks.ts';
import { GRANT_DEVICE_CODE } from '../../core/protocol.ts';
import { parseScope } from '../../core/scopes.ts';
import type { ClientRecord } from '../../store/types.ts';
import { checkRequestedAccess, ResourceCatalog } from '../resources.ts';
import type { FlowDeps, Params } from '../types.ts';
import { deviceCodeKey, newDeviceCode } from './device-code.ts';
import { formatUserCode, generateUserCode } from './user-code.ts';

/** RFC 8628 §3.2, wire names. */
export interface DeviceAuthorizationResponse {
  readonly device_code: string;
  readonly user_code: string;
  readonly verification_uri: string;
  readonly verification_uri_complete: string;
  readonly expires_in: number;
  readonly interval: number;
}

/** Where the device asked from, shown to the approver (RFC 8628 §5.4), and the key it proved (RFC 9449). */
export interface DeviceRequestOrigin {
  readonly ip: string;
  readonly userAgent: string | null;
  /** The thumbprint of the key of the request's DPoP proof: only polls proved by it get tokens. */
  readonly dpopJkt?: string | null;
}

/** A fresh code collides with a live one about once in 2.56 × 10^10 / live codes. */
const USER_CODE_ATTEMPTS = 10;
const MAX_USER_AGENT_LENGTH = 512;

export function verificationUri(issuer: string): string {
  return `${issuer}${DEVICE_VERIFICATION_PATH}`;
}

/** RFC 8628 §3.3.1: the verification URI with the user code in it, for a link or a QR code. */
export function verificationUriComplete(issuer: string, userCode: string): string {
  return `${verificationUri(issuer)}?${new URLSearchParams({ user_code: formatUserCode(userCode) }).toString()}`;
}

/**
 * The scope a client asked for, if it may have it (RFC 6749 §3.3), for the APIs it named
 * (RFC 8707 §2). The grant keeps only the scope: API scope names are unique, so they name
 * their APIs when the tokens are issued.
 */
async function requestedScope(deps: FlowDeps, client: ClientRecord, raw: string | undefined, resources: readonly string[]): Promise<string[]> {
  // RFC 6749 §3.3: without a default scope, an omitted scope fails as invalid_scope.
  if (raw === undefined) throw new OAuthError('invalid_scope', 'scope is required');
  const scope = parseScope(raw);
  if (scope === null || scope.length === 0) throw new OAuthError('invalid_scope', 'scope is malformed');
  checkRequestedAccess(await ResourceCatalog.load(deps.store, scope, resources), client, scope, resources);
  return scope;
}

/**
 * Starts a device authorization for an authenticated client: a device code for the device
 * to poll with, and a user code for the person to enter.
 */
export async function startDeviceAuthorization(
  deps: FlowDeps,
  client: ClientRecord,
  params: Params,
  origin: DeviceRequestOrigin,
  resources: readonly string[] = [],
): Promise<DeviceAuthorizationResponse> {
  if (!client.grantTypes.includes(GRANT_DEVICE_CODE)) {
    throw new OAuthError('unauthorized_client', 'this client is not allowed the device authorization grant');
  }
  // draft-ietf-oauth-cross-device-security, "Practical Mitigations": a device flow limited
  // to the networks its devices are known to be on. A request from elsewhere (an attacker
  // starting a flow to send its code to a victim) gets no code at all.
  if (client.deviceNetworks.length > 0 && !inNetworks(origin.ip, client.deviceNetworks)) {
    throw new OAuthError('unauthorized_client', 'this client may start device authorizations only from its registered networks');
  }
  const scope = await requestedScope(deps, client, params['scope'], resources);
  const { codeLifetime, interval } = deps.config.device;
  const now = deps.clock.now();
  // RFC 8628 §3.2 and §5.2: the device code is a bearer secret; 256 bits, stored hashed
  // (under a key that begins with the time it was made: ./device-code.ts).
  const deviceCode = newDeviceCode(now);
  for (let attempt = 0; attempt < USER_CODE_ATTEMPTS; attempt++) {
    const userCode = generateUserCode();
    const started = deps.events.make({
      type: 'device.started',
      clientId: client.id,
      ip: origin.ip,
      userAgent: origin.userAgent,
      detail: { scope: scope.join(' ') },
    });
    // The event is stored with the record, in its commit: the request waits for one.
    const stored = await deps.store.devices.create(
      {
        deviceCodeHash: deviceCodeKey(deviceCode),
        userCode,
        clientId: client.id,
        scope,
        status: 'pending',
        interval,
        lastPolledAt: null,
        createdAt: now,
        expiresAt: now + codeLifetime * 1000,
        requestIp: origin.ip,
        requestUserAgent: origin.userAgent?.slice(0, MAX_USER_AGENT_LENGTH) || null,
        userId: null,
        authTime: null,
        grantId: null,
        decidedAt: null,
        dpopJkt: origin.dpopJkt ?? null,
      },
      started,
    );
    if (!stored) continue;
    deps.events.publish(started);
    return {
      device_code: deviceCode,
      user_code: formatUserCode(userCode),
      verification_uri: verificationUri(deps.config.issuer),
      verification_uri_complete: verificationUriComplete(deps.config.issuer, userCode),
      expires_in: codeLifetime,
      interval,
    };
  }
  throw new OAuthError('temporarily_unavailable', 'no user code is free right now; try again');
}
