import { GRANT_DEVICE_CODE } from '../../src/core/protocol.ts';
import type { ClientRecord, DeviceAuthorizationRecord } from '../../src/store/types.ts';

/** A public device client, as the SQLite-specific store tests register it. */
export function deviceClient(id: string, createdAt = Date.UTC(2026, 0, 1)): ClientRecord {
  return {
    id,
    name: 'TV App',
    secretHash: null,
    redirectUris: ['https://tv.example/callback'],
    scopes: ['openid'],
    grantTypes: [GRANT_DEVICE_CODE],
    webOrigins: [],
    createdAt,
    authMethod: 'none', previousSecretHash: null, previousSecretExpiresAt: null, jwksUri: null, jwks: null, pkce: 'required',
    firstParty: false, postLogoutRedirectUris: [], backchannelLogoutUri: null,
  };
}

/** A pending device authorization of `clientId`, made at T0 and live for ten minutes. */
export function pendingDevice(
  clientId: string,
  overrides: Partial<DeviceAuthorizationRecord> & Pick<DeviceAuthorizationRecord, 'deviceCodeHash' | 'userCode'>,
): DeviceAuthorizationRecord {
  const createdAt = Date.UTC(2026, 0, 1);
  return {
    clientId,
    scope: ['openid'],
    status: 'pending',
    interval: 5,
    lastPolledAt: null,
    createdAt,
    expiresAt: createdAt + 10 * 60_000,
    requestIp: '203.0.113.7',
    requestUserAgent: null,
    userId: null,
    authTime: null,
    grantId: null,
    decidedAt: null,
    ...overrides,
  };
}
