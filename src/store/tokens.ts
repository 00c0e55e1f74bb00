/**
 * Refresh tokens (rotated, RFC 9700 §4.14.2) and access tokens revoked one by one (RFC 7009).
 */

import type { AuthMethod } from '../core/auth-methods.ts';
import type { AuditEvent } from '../core/events.ts';
import type { GrantRecord } from './grants.ts';
import type { UserRecord } from './users.ts';

/**
 * A refresh token (RFC 6749 §1.5, §6), stored by its hash. Each use exchanges it for a
 * successor (rotation, RFC 9700 §4.14.2); the used one is kept, marked rotated, so that a
 * second use is recognised as reuse.
 */
export interface RefreshTokenRecord {
  readonly hash: string;
  readonly grantId: string;
  readonly clientId: string;
  readonly userId: string;
  /**
   * The scope granted. A refreshed access token may narrow it; the refresh token never does
   * (RFC 6749 §6: the new refresh token's scope is identical to the old one's).
   */
  readonly scope: readonly string[];
  /** OIDC `auth_time` of the sign-in the grant came from (OIDC Core §12.2 keeps it). */
  readonly authTime: number;
  /** The browser session of that sign-in, for refreshed ID tokens; null for a device. */
  readonly sid: string | null;
  readonly createdAt: number;
  /** The earlier of the end of the grant's refresh lifetime and the idle timeout after issue. */
  readonly expiresAt: number;
  /** Set when it was exchanged for its successor; from then on, presenting it is reuse. */
  readonly rotatedAt: number | null;
  /** RFC 9449 §5: a public client's refresh token is bound to this DPoP key thumbprint. */
  readonly dpopJkt: string | null;
  /**
   * OIDC Core §5.5: the claims about the person the original request asked for in the ID
   * token (the `claims` parameter), repeated in refreshed ID tokens (§12.2). Empty in tokens
   * from before it was kept.
   */
  readonly idTokenClaims: readonly string[];
  /**
   * OIDC Core §5.2: the request's `claims_locales`, the languages of the names its ID tokens
   * carry (`name#ja-Kana-JP`); absent when it asked for none.
   */
  readonly claimsLocales?: readonly string[];
  /**
   * OIDC Core §5.5: the claims about the person the request asked for in UserInfo (the
   * `claims` parameter's `userinfo`); absent when it asked for none.
   */
  readonly userinfoClaims?: readonly string[];
  /**
   * The scopes the person approved for the claims the request asked for by name, beyond its
   * scope: the claims of these scopes asked for by name are released, the others are not.
   * Absent when none (and in rows from before, whose scope holds them).
   */
  readonly claimsScope?: readonly string[];
  /**
   * How the person signed in for the approval it came from (ID token `amr`), kept with its
   * `authTime`: a later sign-in approving the same grant again changes neither. Absent in
   * tokens from before it was kept: the grant's.
   */
  readonly amr?: readonly AuthMethod[];
  /** The class its ID tokens report (`acr`), when the original request asked through `acr_values`. */
  readonly acr?: string;
}

/** What a refresh writes with its token's rotation (`RefreshTokenStore.rotateWith`); a code's redemption writes the same, and the session's client (`RedemptionWrites`). */
export interface RotationWrites {
  /** The grant's `activeUntil` (`GrantStore.recordUse`; a revoked grant records nothing). */
  readonly activeUntil: number;
  /** The next refresh token, when the client is given one. */
  readonly refreshToken?: RefreshTokenRecord;
  readonly event?: AuditEvent;
}

export interface RefreshTokenStore {
  create(token: RefreshTokenRecord): Promise<void>;
  /**
   * Exchanges a refresh token: exactly one caller is answered true. It is marked rotated only
   * if it is unrotated, unexpired at `now`, issued to this client, and its grant is not
   * revoked; otherwise nothing changes and the answer is false (the caller read the token
   * before, `findForRefresh`, and `find` tells it why). Only when this
   * caller rotated it, the writes that follow (the next refresh token, the grant's use, the
   * event) are made with it, all or none: on SQLite one write of the turn's group commit, in a
   * savepoint; on PostgreSQL one statement shared with the turn's other rotations. A refresh
   * then commits once, as a code exchange does (`AuthorizationCodeStore.redeem`).
   */
  rotateWith(hash: string, clientId: string, now: number, writes: RotationWrites): Promise<boolean>;
  /** The record whatever its state, to tell reuse from expiry or revocation. */
  find(hash: string): Promise<RefreshTokenRecord | null>;
  /**
   * The token whatever its state, with its grant and its user as they are now (null when
   * gone): what a refresh decides its tokens from before it rotates the token, as
   * `AuthorizationCodeStore.findForExchange` is for a code. One statement on PostgreSQL,
   * shared with the refreshes of its turn.
   */
  findForRefresh(hash: string): Promise<RefreshExchange | null>;
}

/** A refresh token with what a refresh with it needs to know beforehand. */
export interface RefreshExchange {
  readonly token: RefreshTokenRecord;
  readonly grant: GrantRecord | null;
  readonly user: UserRecord | null;
}

/** Access tokens revoked one by one (RFC 7009 §2), by their `jti`. */
export interface AccessTokenStore {
  /**
   * Records the token as revoked, kept until `expiresAt`, when it would have expired anyway.
   * Revoking it again changes nothing.
   */
  revoke(jti: string, expiresAt: number): Promise<void>;
  isRevoked(jti: string): Promise<boolean>;
}
