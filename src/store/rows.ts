/**
 * Rows to records: one function per table, shared by both stores so that both return the
 * same shapes. The few column types SQL has no common form for are read through the
 * dialect's `ColumnReader`. Every value is checked: a row that does not fit its record
 * is a corrupt database or a schema mismatch, and fails loudly here rather than
 * somewhere in a flow.
 */

import type { SigningAlgorithm } from '../config/index.ts';
import { isEventType, type AuditEvent, type DetailValue } from '../core/events.ts';
import { AUTH_METHODS, type AuthMethod } from '../core/auth-methods.ts';
import { isOperatorRole, type OperatorRole } from '../core/scopes.ts';
import { CLIENT_AUTH_METHODS, GRANT_AUTHORIZATION_CODE, GRANT_CLIENT_CREDENTIALS, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, REQUEST_OBJECT_ALGORITHMS, type GrantType } from '../core/protocol.ts';
import {
  type AuthorizationCodeRecord,
  type ClientRecord,
  type DeviceAuthorizationRecord,
  type DevicePollOutcome,
  type DeviceStatus,
  type GrantRecord,
  type PasswordResetRecord,
  type PasskeyRecord,
  type PendingSignInRecord,
  type PushedRequestRecord,
  type TotpRecord,
  type WebauthnChallengeRecord,
  type RefreshTokenRecord,
  type ResourceRecord,
  type ResourceScope,
  type SessionRecord,
  type SigningKeyRecord,
  type UserRecord,
} from './types.ts';

/** A row as a driver returns it: column name to value. */
export type Row = Readonly<Record<string, unknown>>;

/** How a dialect stores lists, JSON objects and booleans. */
export interface ColumnReader {
  /** A list of strings: JSON text in SQLite, `text[]` in PostgreSQL. */
  strings(row: Row, column: string): string[];
  /** A JSON object: JSON text in SQLite, `jsonb` in PostgreSQL. */
  object(row: Row, column: string): Record<string, unknown>;
  /** 0 or 1 in SQLite, `boolean` in PostgreSQL. */
  boolean(row: Row, column: string): boolean;
}

/** A column held a value its record cannot have: a corrupt database or a schema mismatch. */
export class CorruptRowError extends Error {
  constructor(column: string, expected: string, value: unknown) {
    super(`column ${column}: expected ${expected}, found ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`);
    this.name = 'CorruptRowError';
  }
}

// Readers for the column types both dialects return alike.

export function text(row: Row, column: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw new CorruptRowError(column, 'text', value);
  return value;
}

export function textOrNull(row: Row, column: string): string | null {
  return row[column] === null ? null : text(row, column);
}

export function integer(row: Row, column: string): number {
  const value = row[column];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new CorruptRowError(column, 'an integer', value);
  return value;
}

export function integerOrNull(row: Row, column: string): number | null {
  return row[column] === null ? null : integer(row, column);
}

/** Checks that every element of a decoded list is a string. */
export function stringList(column: string, value: unknown): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new CorruptRowError(column, 'a list of strings', value);
  }
  return value;
}

/** Checks that a decoded JSON value is an object (a JWK), not an array or a scalar. */
export function jsonObject(column: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CorruptRowError(column, 'a JSON object', value);
  }
  return { ...value };
}

function oneOf<T extends string>(allowed: readonly T[], column: string, value: string): T {
  const found = allowed.find((candidate) => candidate === value);
  if (found === undefined) throw new CorruptRowError(column, allowed.join(' | '), value);
  return found;
}

const grantTypes: readonly GrantType[] = [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, GRANT_CLIENT_CREDENTIALS];
const grantKinds: readonly GrantRecord['kind'][] = [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE];
const deviceStatuses: readonly DeviceStatus[] = ['pending', 'approved', 'denied', 'consumed'];
const pollOutcomes: readonly DevicePollOutcome[] = ['expired', 'consumed', 'denied', 'slow_down', 'issue', 'pending'];
const algorithms: readonly SigningAlgorithm[] = ['RS256', 'ES256'];
const pkceColumn = ['required', 'optional'] as const;

/** Migration 14: `optional-without-nonce` is stored as `optional` with `nonce_required` false. */
function clientPkce(column: (typeof pkceColumn)[number], nonceRequired: boolean): ClientRecord['pkce'] {
  if (column === 'required') return 'required';
  return nonceRequired ? 'optional' : 'optional-without-nonce';
}

export function clientFromRow(row: Row, read: ColumnReader): ClientRecord {
  return {
    id: text(row, 'id'),
    name: text(row, 'name'),
    secretHash: textOrNull(row, 'secret_hash'),
    redirectUris: read.strings(row, 'redirect_uris'),
    scopes: read.strings(row, 'scopes'),
    grantTypes: read.strings(row, 'grant_types').map((value) => oneOf(grantTypes, 'grant_types', value)),
    webOrigins: read.strings(row, 'web_origins'),
    requireDpop: read.boolean(row, 'require_dpop'),
    requirePar: read.boolean(row, 'require_par'),
    version: integer(row, 'version'),
    tokensRevokedAt: integerOrNull(row, 'tokens_revoked_at'),
    deviceNetworks: read.strings(row, 'device_networks'),
    createdAt: integer(row, 'created_at'),
    authMethod: oneOf(CLIENT_AUTH_METHODS, 'auth_method', text(row, 'auth_method')),
    previousSecretHash: textOrNull(row, 'previous_secret_hash'),
    previousSecretExpiresAt: integerOrNull(row, 'previous_secret_expires_at'),
    jwksUri: textOrNull(row, 'jwks_uri'),
    jwks: row['jwks'] === null ? null : read.object(row, 'jwks'),
    pkce: clientPkce(oneOf(pkceColumn, 'pkce', text(row, 'pkce')), read.boolean(row, 'nonce_required')),
    // Absent when null, as a record made before the setting existed.
    ...(row['request_object_signing_alg'] == null ? {} : { requestObjectSigningAlg: oneOf(REQUEST_OBJECT_ALGORITHMS, 'request_object_signing_alg', text(row, 'request_object_signing_alg')) }),
    // Absent when false, as a record made before the setting existed.
    ...(read.boolean(row, 'require_phishing_resistant') ? { requirePhishingResistant: true } : {}),
    firstParty: read.boolean(row, 'first_party'),
    postLogoutRedirectUris: read.strings(row, 'post_logout_redirect_uris'),
    backchannelLogoutUri: textOrNull(row, 'backchannel_logout_uri'),
  };
}

function operatorRole(row: Row): OperatorRole | null {
  const value = textOrNull(row, 'role');
  if (value !== null && !isOperatorRole(value)) throw new CorruptRowError('role', 'an operator role', value);
  return value;
}

export function userFromRow(row: Row, read: ColumnReader): UserRecord {
  return {
    id: text(row, 'id'),
    username: text(row, 'username'),
    passwordHash: text(row, 'password_hash'),
    name: textOrNull(row, 'name'),
    email: textOrNull(row, 'email'),
    emailVerified: read.boolean(row, 'email_verified'),
    givenName: textOrNull(row, 'given_name'),
    familyName: textOrNull(row, 'family_name'),
    locale: textOrNull(row, 'locale'),
    zoneinfo: textOrNull(row, 'zoneinfo'),
    picture: textOrNull(row, 'picture'),
    disabled: read.boolean(row, 'disabled'),
    role: operatorRole(row),
    createdAt: integer(row, 'created_at'),
    updatedAt: integer(row, 'updated_at'),
  };
}

export function sessionFromRow(row: Row, read: ColumnReader): SessionRecord {
  const amr = authMethodsOrNull(row, 'amr', read);
  return {
    idHash: text(row, 'id_hash'),
    sid: text(row, 'sid'),
    userId: text(row, 'user_id'),
    authTime: integer(row, 'auth_time'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    ...(amr === null ? {} : { amr }),
    ip: textOrNull(row, 'ip'),
    userAgent: textOrNull(row, 'user_agent'),
  };
}

/** An `amr` list column; null in rows from before it was kept. */
function authMethodsOrNull(row: Row, column: string, read: ColumnReader): AuthMethod[] | null {
  return row[column] === null || row[column] === undefined ? null : read.strings(row, column).map((value) => oneOf(AUTH_METHODS, column, value));
}

export function grantFromRow(row: Row, read: ColumnReader): GrantRecord {
  const ip = textOrNull(row, 'device_ip');
  const amr = authMethodsOrNull(row, 'amr', read);
  const acr = row['acr'] === undefined ? null : textOrNull(row, 'acr');
  return {
    id: text(row, 'id'),
    userId: text(row, 'user_id'),
    clientId: text(row, 'client_id'),
    scope: read.strings(row, 'scope'),
    kind: oneOf(grantKinds, 'kind', text(row, 'kind')),
    authTime: integer(row, 'auth_time'),
    createdAt: integer(row, 'created_at'),
    revokedAt: integerOrNull(row, 'revoked_at'),
    device:
      ip === null
        ? null
        : { ip, userAgent: textOrNull(row, 'device_user_agent'), requestedAt: integer(row, 'device_requested_at') },
    remembered: read.boolean(row, 'remembered'),
    renewedAt: integerOrNull(row, 'renewed_at'),
    lastUsedAt: integerOrNull(row, 'last_used_at'),
    activeUntil: integerOrNull(row, 'active_until'),
    ...(amr === null ? {} : { amr }),
    ...(acr === null ? {} : { acr }),
  };
}

export function refreshTokenFromRow(row: Row, read: ColumnReader): RefreshTokenRecord {
  return {
    hash: text(row, 'hash'),
    grantId: text(row, 'grant_id'),
    clientId: text(row, 'client_id'),
    userId: text(row, 'user_id'),
    scope: read.strings(row, 'scope'),
    authTime: integer(row, 'auth_time'),
    sid: textOrNull(row, 'sid'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    rotatedAt: integerOrNull(row, 'rotated_at'),
    dpopJkt: textOrNull(row, 'dpop_jkt'),
  };
}

export function codeFromRow(row: Row, read: ColumnReader): AuthorizationCodeRecord {
  return {
    hash: text(row, 'hash'),
    clientId: text(row, 'client_id'),
    userId: text(row, 'user_id'),
    grantId: text(row, 'grant_id'),
    redirectUri: text(row, 'redirect_uri'),
    scope: read.strings(row, 'scope'),
    nonce: textOrNull(row, 'nonce'),
    codeChallenge: text(row, 'code_challenge'),
    authTime: integer(row, 'auth_time'),
    sid: textOrNull(row, 'sid'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    consumedAt: integerOrNull(row, 'consumed_at'),
    dpopJkt: textOrNull(row, 'dpop_jkt'),
    idTokenClaims: read.strings(row, 'id_token_claims'),
  };
}

export function deviceFromRow(row: Row, read: ColumnReader): DeviceAuthorizationRecord {
  return {
    deviceCodeHash: text(row, 'device_code_hash'),
    userCode: text(row, 'user_code'),
    clientId: text(row, 'client_id'),
    scope: read.strings(row, 'scope'),
    status: oneOf(deviceStatuses, 'status', text(row, 'status')),
    interval: integer(row, 'poll_interval'),
    lastPolledAt: integerOrNull(row, 'last_polled_at'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    requestIp: text(row, 'request_ip'),
    requestUserAgent: textOrNull(row, 'request_user_agent'),
    userId: textOrNull(row, 'user_id'),
    authTime: integerOrNull(row, 'auth_time'),
    grantId: textOrNull(row, 'grant_id'),
    decidedAt: integerOrNull(row, 'decided_at'),
    dpopJkt: textOrNull(row, 'dpop_jkt'),
  };
}

export function pushedRequestFromRow(row: Row, read: ColumnReader): PushedRequestRecord {
  const params = read.object(row, 'params');
  for (const [name, value] of Object.entries(params)) {
    if (typeof value !== 'string') stringList(`params.${name}`, value);
  }
  return {
    hash: text(row, 'hash'),
    clientId: text(row, 'client_id'),
    params: params as Record<string, string | string[]>,
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    claimedAt: integerOrNull(row, 'claimed_at'),
    browser: textOrNull(row, 'browser'),
    decidedAt: integerOrNull(row, 'decided_at'),
  };
}

/** The outcome the device poll's UPDATE stored in `last_outcome` and returned. */
export function pollOutcomeFromRow(row: Row): DevicePollOutcome {
  return oneOf(pollOutcomes, 'last_outcome', text(row, 'last_outcome'));
}

export function signingKeyFromRow(row: Row, read: ColumnReader): SigningKeyRecord {
  return {
    kid: text(row, 'kid'),
    alg: oneOf(algorithms, 'alg', text(row, 'alg')),
    privateJwk: read.object(row, 'private_jwk'),
    publicJwk: read.object(row, 'public_jwk'),
    createdAt: integer(row, 'created_at'),
    activatesAt: integer(row, 'activates_at'),
    retiresAt: integerOrNull(row, 'retires_at'),
    expiresAt: integerOrNull(row, 'expires_at'),
  };
}

export function passwordResetFromRow(row: Row): PasswordResetRecord {
  return {
    tokenHash: text(row, 'token_hash'),
    userId: text(row, 'user_id'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    usedAt: integerOrNull(row, 'used_at'),
  };
}

export function eventFromRow(row: Row, read: ColumnReader): AuditEvent {
  const type = text(row, 'type');
  if (!isEventType(type)) throw new CorruptRowError('type', 'an event type', type);
  const detail = read.object(row, 'detail');
  for (const [key, value] of Object.entries(detail)) {
    if (value !== null && !['string', 'number', 'boolean'].includes(typeof value)) throw new CorruptRowError(`detail.${key}`, 'a string, number, boolean or null', value);
  }
  return {
    id: text(row, 'id'),
    type,
    at: integer(row, 'at'),
    userId: textOrNull(row, 'user_id'),
    username: textOrNull(row, 'username'),
    clientId: textOrNull(row, 'client_id'),
    grantId: textOrNull(row, 'grant_id'),
    ip: textOrNull(row, 'ip'),
    userAgent: textOrNull(row, 'user_agent'),
    detail: detail as Record<string, DetailValue>,
  };
}

export function resourceScopeFromRow(row: Row): ResourceScope & { readonly resource: string } {
  return { name: text(row, 'name'), description: text(row, 'description'), resource: text(row, 'resource') };
}

function signingAlg(row: Row, column: string): SigningAlgorithm {
  const value = text(row, column);
  if (value !== 'RS256' && value !== 'ES256') throw new CorruptRowError(column, 'RS256 or ES256', value);
  return value;
}

/** A resource row with its scopes, read separately (`resource_scopes`). */
export function resourceFromRow(row: Row, scopes: readonly ResourceScope[]): ResourceRecord {
  return {
    identifier: text(row, 'identifier'),
    name: text(row, 'name'),
    scopes,
    accessTokenTtl: integerOrNull(row, 'access_token_ttl'),
    introspectionSecretHash: textOrNull(row, 'introspection_secret_hash'),
    signingAlg: signingAlg(row, 'signing_alg'),
    createdAt: integer(row, 'created_at'),
  };
}

const deviceTypes: readonly PasskeyRecord['deviceType'][] = ['singleDevice', 'multiDevice'];
const challengePurposes: readonly WebauthnChallengeRecord['purpose'][] = ['register', 'authenticate'];

export function passkeyFromRow(row: Row, read: ColumnReader): PasskeyRecord {
  return {
    id: text(row, 'id'),
    userId: text(row, 'user_id'),
    name: text(row, 'name'),
    publicKey: text(row, 'public_key'),
    counter: integer(row, 'counter'),
    transports: read.strings(row, 'transports'),
    deviceType: oneOf(deviceTypes, 'device_type', text(row, 'device_type')),
    backedUp: read.boolean(row, 'backed_up'),
    createdAt: integer(row, 'created_at'),
    lastUsedAt: integerOrNull(row, 'last_used_at'),
  };
}

export function webauthnChallengeFromRow(row: Row): WebauthnChallengeRecord {
  return {
    challengeHash: text(row, 'challenge_hash'),
    purpose: oneOf(challengePurposes, 'purpose', text(row, 'purpose')),
    userId: textOrNull(row, 'user_id'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
  };
}

export function totpFromRow(row: Row): TotpRecord {
  return {
    userId: text(row, 'user_id'),
    secret: text(row, 'secret'),
    createdAt: integer(row, 'created_at'),
    confirmedAt: integerOrNull(row, 'confirmed_at'),
    lastStep: integerOrNull(row, 'last_step'),
  };
}

export function pendingSignInFromRow(row: Row): PendingSignInRecord {
  return {
    idHash: text(row, 'id_hash'),
    userId: text(row, 'user_id'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
  };
}
