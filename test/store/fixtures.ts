import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE } from '../../src/core/protocol.ts';
import type { ClientRecord, DeviceAuthorizationRecord } from '../../src/store/types.ts';

/** A public client with every field at its default, but `overrides`: a record to store as it is. */
export function publicClient(overrides: Partial<ClientRecord> & Pick<ClientRecord, 'id'>): ClientRecord {
  return {
    name: 'App',
    secretHash: null,
    redirectUris: [],
    scopes: ['openid'],
    grantTypes: [GRANT_AUTHORIZATION_CODE],
    webOrigins: [],
    requireDpop: false,
    requirePar: false,
    deviceNetworks: [],
    createdAt: Date.UTC(2026, 0, 1),
    authMethod: 'none',
    previousSecretHash: null,
    previousSecretExpiresAt: null,
    jwksUri: null,
    jwks: null,
    pkce: 'required',
    firstParty: false,
    postLogoutRedirectUris: [],
    backchannelLogoutUri: null,
    ...overrides,
  };
}

/** A public device client, as the SQLite-specific store tests register it. */
export function deviceClient(id: string, createdAt = Date.UTC(2026, 0, 1)): ClientRecord {
  return publicClient({ id, name: 'TV App', redirectUris: ['https://tv.example/callback'], grantTypes: [GRANT_DEVICE_CODE], createdAt });
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
    dpopJkt: null,
    ...overrides,
  };
}
