import type { AuditEvent, EventType } from '../../src/core/events.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE } from '../../src/core/protocol.ts';
import type { NewGrant } from '../../src/store/grants.ts';
import type { AuthorizationCodeRecord, ClientRecord, DeviceAuthorizationRecord, SsfStreamRecord, Store, UserRecord } from '../../src/store/types.ts';

/**
 * A client with every field at its default, a public client's (no secret, no authentication,
 * PKCE required), but `overrides`: a record to store as it is.
 */
export function clientRecord(overrides: Partial<ClientRecord> & Pick<ClientRecord, 'id'>): ClientRecord {
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

/** Every standard claim of Ada Lovelace's (OIDC Core §5.1) but her name and e-mail address, as a user record stores them. */
export const ADA_CLAIMS = {
  emailVerified: true,
  givenName: 'Ada',
  familyName: 'Lovelace',
  locale: 'en-GB',
  zoneinfo: 'Europe/London',
  picture: 'https://example.com/ada.png',
  middleName: 'Augusta',
  nickname: 'Ada',
  profile: 'https://example.com/ada',
  website: 'https://ada.example',
  gender: 'female',
  birthdate: '1815-12-10',
  phoneNumber: '+44 20 7946 0958',
  phoneNumberVerified: true,
  address: { street_address: '12 St James’s Square\nFlat 1', locality: 'London', postal_code: 'SW1Y 4LB', country: 'United Kingdom' },
} as const satisfies Partial<UserRecord>;

/** A public device client, as the SQLite-specific store tests register it. */
export function deviceClient(id: string, createdAt = Date.UTC(2026, 0, 1)): ClientRecord {
  return clientRecord({ id, name: 'TV App', redirectUris: ['https://tv.example/callback'], grantTypes: [GRANT_DEVICE_CODE], createdAt });
}

/** A person's live approval of a client through the code grant, given (and signed in) at `at`: openid unless `scope` says otherwise. */
export function approvedGrant(grant: Pick<NewGrant, 'id' | 'userId' | 'clientId'> & Partial<Pick<NewGrant, 'scope'>>, at: number): NewGrant {
  return { scope: ['openid'], kind: GRANT_AUTHORIZATION_CODE, authTime: at, createdAt: at, revokedAt: null, device: null, ...grant };
}

/** An unused authorization code `hash` of `grant` (openid, PKCE), made at 1 January 2026 and live for ten minutes. */
export function pendingCode(
  hash: string,
  grant: { readonly id: string; readonly clientId: string; readonly userId: string },
  overrides: Partial<AuthorizationCodeRecord> = {},
): AuthorizationCodeRecord {
  const createdAt = Date.UTC(2026, 0, 1);
  return {
    hash,
    clientId: grant.clientId,
    userId: grant.userId,
    grantId: grant.id,
    redirectUri: 'https://tv.example/callback',
    scope: ['openid'],
    nonce: null,
    codeChallenge: 'challenge',
    sid: null,
    authTime: createdAt,
    createdAt,
    expiresAt: createdAt + 10 * 60_000,
    consumedAt: null,
    dpopJkt: null,
    idTokenClaims: [],
    ...overrides,
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
    dpopJkt: null,
    ...overrides,
  };
}

/** A Shared Signals receiver's client: client_credentials with the scope ssf:manage, as a receiver registers one. */
export function ssfReceiverClient(id: string): ClientRecord {
  return clientRecord({ id, name: 'Receiver', scopes: ['ssf:manage'], grantTypes: ['client_credentials'], createdAt: 0 });
}

/**
 * An enabled stream of `clientId` (its audience), subjects in iss_sub format, all of them,
 * made at 0, with no events, endpoint or authorization unless `overrides` give them.
 */
export function ssfStream(overrides: Partial<SsfStreamRecord> & Pick<SsfStreamRecord, 'id' | 'clientId' | 'deliveryMethod'>): SsfStreamRecord {
  return {
    audience: [overrides.clientId],
    eventsRequested: [],
    eventsDelivered: [],
    endpointUrl: null,
    authorizationHeader: null,
    format: 'iss_sub',
    defaultSubjects: 'ALL',
    description: null,
    status: 'enabled',
    reason: null,
    createdAt: 0,
    updatedAt: 0,
    ...overrides,
  };
}

/** A live authorization-code grant `id` of `clientId` to `userId` for openid, made at 1 January 2026, as the approval page stores one. */
export function codeGrant(id: string, clientId: string, userId: string): Parameters<Store['grants']['create']>[0] {
  const createdAt = Date.UTC(2026, 0, 1);
  return { id, userId, clientId, scope: ['openid'], kind: GRANT_AUTHORIZATION_CODE, authTime: createdAt, createdAt, revokedAt: null, device: null };
}

/** An audit event about no one, from no client or address, with no detail, but `overrides`. */
export function auditEvent(overrides: Partial<AuditEvent> & Pick<AuditEvent, 'id' | 'type' | 'at'>): AuditEvent {
  return { userId: null, username: null, clientId: null, grantId: null, ip: null, userAgent: null, detail: {}, ...overrides };
}

/** An audit event `type` about ada (`user-1`), from no client or address, with `detail`. */
export function adaEvent(id: string, type: EventType, at: number, detail: AuditEvent['detail'] = {}): AuditEvent {
  return auditEvent({ id, type, at, userId: 'user-1', username: 'ada', detail });
}
