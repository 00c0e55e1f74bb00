/**
 * Grants: what a person approved for a client, from which codes and tokens are issued.
 */

import type { AuthMethod } from '../core/auth-methods.ts';
import type { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE } from '../core/protocol.ts';

/** What the user approved: one approval, from which codes and tokens are issued. */
export interface GrantRecord {
  readonly id: string;
  readonly userId: string;
  readonly clientId: string;
  readonly scope: readonly string[];
  /** The grant type through which it was approved. */
  readonly kind: typeof GRANT_AUTHORIZATION_CODE | typeof GRANT_DEVICE_CODE;
  readonly authTime: number;
  readonly createdAt: number;
  /** Set once; a revoked grant issues nothing more and its tokens are inactive. */
  readonly revokedAt: number | null;
  /** For a device grant: where and when the device asked (RFC 8628 §5.4). */
  readonly device: DeviceOrigin | null;
  /** How the person signed in before approving (ID token `amr`); absent in grants from before. */
  readonly amr?: readonly AuthMethod[];
  /** The class reported in ID tokens (`acr`), set when the client asked through `acr_values`. */
  readonly acr?: string;
  /**
   * The organization the person approved for (the `organization` scope, docs/organizations.md):
   * its `org_id` and `org_name` are in the tokens issued under the grant, refreshed ones too.
   */
  readonly organizationId?: string;
  /**
   * The user's remembered consent for the client (the code flow only): at most one live
   * grant per user and client is, and later approvals grow it instead of adding grants.
   */
  readonly remembered: boolean;
  /** When a remembered grant was last approved again (or signed in through); null until then. */
  readonly renewedAt: number | null;
  /** When tokens were last issued under it (a sign-in or a refresh); null until the first time. */
  readonly lastUsedAt: number | null;
  /**
   * Until when the tokens issued under it can be used: the latest expiry of its access and
   * refresh tokens. Null until tokens are first issued. Past it, the grant is spent.
   */
  readonly activeUntil: number | null;
}

/** A grant as it is created: nothing has been issued under it yet, and it is not remembered. */
export type NewGrant = Omit<GrantRecord, 'lastUsedAt' | 'activeUntil' | 'remembered' | 'renewedAt'>;

/** An approval in the code flow, to be remembered (`GrantStore.remember`). */
export interface RememberedApproval {
  /** The id of the grant if none is remembered yet. */
  readonly id: string;
  readonly userId: string;
  readonly clientId: string;
  readonly scope: readonly string[];
  readonly authTime: number;
  /** How the person signed in before this approval (ID token `amr`). */
  readonly amr?: readonly AuthMethod[];
  /** The class reported in ID tokens (`acr`), when the client asked through `acr_values`. */
  readonly acr?: string;
  /** The organization chosen (or the person's only one); absent: the grant keeps the one it has. */
  readonly organizationId?: string;
}

export interface DeviceOrigin {
  readonly ip: string;
  readonly userAgent: string | null;
  readonly requestedAt: number;
}

export interface GrantStore {
  create(grant: NewGrant): Promise<void>;
  get(id: string): Promise<GrantRecord | null>;
  /** Sets `revokedAt` if not already set; true when this call revoked it. */
  revoke(id: string, now: number): Promise<boolean>;
  /** The user's grants that are not revoked, newest first. */
  listForUser(userId: string): Promise<GrantRecord[]>;
  /**
   * Revokes every grant of the client not revoked yet, in one statement (the operator
   * ending everything people got through an app); returns the grants it revoked, as revoked.
   */
  revokeForClient(clientId: string, now: number): Promise<GrantRecord[]>;
  /**
   * Records an approval as the user's remembered consent for the client, in one statement:
   * a new remembered grant when there is none live, or else the live one with its scope
   * grown to include `scope` and `renewedAt` set to `now`. Returns the grant.
   */
  remember(approval: RememberedApproval, now: number): Promise<GrantRecord>;
  /** The user's live remembered grant for the client, if any. */
  findRemembered(userId: string, clientId: string): Promise<GrantRecord | null>;
  /**
   * Records that tokens were issued under the grant at `now`, usable until `activeUntil`
   * (which only ever moves later). False, and nothing changed, when the grant is unknown or
   * revoked.
   */
  recordUse(id: string, now: number, activeUntil: number): Promise<boolean>;
  /** Deletes every grant of the user, revoked or not, with their codes and refresh tokens (a removed user). */
  removeForUser(userId: string): Promise<number>;
}
