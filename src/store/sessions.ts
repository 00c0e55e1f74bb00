/**
 * Browser sessions after sign-in, and the clients given an ID token in each (Back-Channel Logout).
 */

import type { AuthMethod } from '../core/auth-methods.ts';

/** A browser session after sign-in. */
export interface SessionRecord {
  /** `hashSecret` of the session cookie's value. */
  readonly idHash: string;
  /**
   * The OIDC session id (`sid`, Back-Channel Logout 1.0 §2.1) given to clients in ID and
   * logout tokens. Random and public, unlike the cookie; kept when the same person signs in
   * again in the same browser.
   */
  readonly sid: string;
  readonly userId: string;
  /** When the user last entered their password (OIDC `auth_time`). */
  readonly authTime: number;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** How the person signed in (RFC 8176). Absent in a session from before it was kept: a password. */
  readonly amr?: readonly AuthMethod[];
  /** Where the browser signed in from, shown on the account page. */
  readonly ip: string | null;
  readonly userAgent: string | null;
}

export interface SessionStore {
  create(session: SessionRecord): Promise<void>;
  /** The session if it exists and has not expired at `now`. */
  get(idHash: string, now: number): Promise<SessionRecord | null>;
  /**
   * Moves the session `previousHash` to `next`'s cookie and sign-in (the same person signed
   * in again in this browser), keeping its row and so its OIDC session: `next` as stored, or
   * null when there is no such session of `next.sid` and `next.userId` (ended already). One
   * update, never a delete and an insert, so that a code's redemption waiting on the row
   * (`sql/codes.ts` LIVE_SESSION) finds the session under its new cookie, not gone.
   */
  continue(previousHash: string, next: SessionRecord): Promise<SessionRecord | null>;
  /** Ends a session: the removed record, or null when there was none (ended already). */
  remove(idHash: string): Promise<SessionRecord | null>;
  /** The user's sessions live at `now`, newest first. */
  listForUser(userId: string, now: number): Promise<SessionRecord[]>;
  /**
   * Ends every session of the user (signed out everywhere, disabled, removed, a new
   * password) but the one whose hash is `except` (the browser that changed the password);
   * returns the removed records.
   */
  removeForUser(userId: string, except?: string): Promise<SessionRecord[]>;
  /**
   * Records that the client received an ID token in the session `sid`, kept until
   * `expiresAt` (which only moves later), for Back-Channel Logout.
   */
  addClient(sid: string, clientId: string, expiresAt: number): Promise<void>;
  /** The clients recorded for `sid`, removed as they are returned: each caller gets a client once. */
  takeClients(sid: string): Promise<string[]>;
}
