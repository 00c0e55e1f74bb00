/**
 * Authorization codes (RFC 6749 §4.1.2), single use and bound to their PKCE challenge.
 */

import type { AuthMethod } from '../core/auth-methods.ts';
import type { GrantRecord } from './grants.ts';
import type { RotationWrites } from './tokens.ts';
import type { UserRecord } from './users.ts';

/** An authorization code (RFC 6749 §4.1.2), bound to its PKCE challenge (RFC 7636 §4.4). */
export interface AuthorizationCodeRecord {
  readonly hash: string;
  readonly clientId: string;
  readonly userId: string;
  readonly grantId: string;
  readonly redirectUri: string;
  readonly scope: readonly string[];
  readonly nonce: string | null;
  /** The S256 challenge; empty for a code asked for without PKCE (a client with PKCE optional). */
  readonly codeChallenge: string;
  readonly authTime: number;
  /** The browser session it was issued in (its ID token's `sid`). */
  readonly sid: string | null;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly consumedAt: number | null;
  /** RFC 9449 §10: the DPoP key thumbprint (`dpop_jkt`) the code must be redeemed with. */
  readonly dpopJkt: string | null;
  /** OIDC Core §5.5: the claims about the person its ID token carries (the `claims` parameter's `id_token`). */
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
   * How the person signed in for this approval (ID token `amr`, RFC 8176): the code's own,
   * as its `authTime` is, not the grant's, which a later sign-in approving again overwrites.
   * Absent in codes from before it was kept: the grant's.
   */
  readonly amr?: readonly AuthMethod[];
  /** The class its ID token reports (`acr`), when the request asked through `acr_values`. */
  readonly acr?: string;
}

export interface AuthorizationCodeStore {
  create(code: AuthorizationCodeRecord): Promise<void>;
  /**
   * Redeems a code: exactly one caller receives the record. It is marked consumed and
   * returned only if it is unconsumed, unexpired at `now`, and was issued to this client
   * for this redirect_uri and challenge (and DPoP key, if it is bound to one); otherwise nothing changes and null is returned.
   */
  consume(
    hash: string,
    /** `dpopJkt`: the key of the token request's DPoP proof, null without one; a code bound to another key is left as it is. */
    binding: { readonly clientId: string; readonly redirectUri: string; readonly codeChallenge: string; readonly dpopJkt?: string | null },
    now: number,
  ): Promise<AuthorizationCodeRecord | null>;
  /** The record whatever its state, to tell a replay from a mismatch after `consume` failed. */
  find(hash: string): Promise<AuthorizationCodeRecord | null>;
  /**
   * The code whatever its state, with its grant and its user as they are now (null when
   * gone): what a code exchange decides its tokens from before it redeems the code. One
   * statement on PostgreSQL.
   */
  findForExchange(hash: string): Promise<CodeExchange | null>;
  /**
   * Redeems a code as `consume` does and, only when this caller redeemed it, makes the
   * writes that follow in the same transaction: the grant's use (`GrantStore.recordUse` at
   * `now`), the refresh token, the session's client and the event. Either all of them are
   * committed with the code's redemption or none is. One statement on PostgreSQL, one
   * write of the round's group commit on SQLite. True when this caller redeemed it: the
   * caller read the code before (`findForExchange`), so the record is not sent back.
   */
  redeem(
    hash: string,
    binding: { readonly clientId: string; readonly redirectUri: string; readonly codeChallenge: string; readonly dpopJkt?: string | null },
    now: number,
    writes: RedemptionWrites,
  ): Promise<boolean>;
}

/** A code with what an exchange of it needs to know beforehand. */
export interface CodeExchange {
  readonly code: AuthorizationCodeRecord;
  readonly grant: GrantRecord | null;
  readonly user: UserRecord | null;
}

/** What a code exchange writes with the code's redemption (`AuthorizationCodeStore.redeem`). */
export interface RedemptionWrites extends RotationWrites {
  /** Back-Channel Logout 1.0 §2.7: the code's session received an ID token for the code's client (`SessionStore.addClient`). */
  readonly sessionClient?: { readonly sid: string; readonly expiresAt: number };
}
