/**
 * Invitations (`tessera user invite`): a single-use link, stored by the hash of its token and
 * bound to one e-mail address, where the person invited makes their account.
 */
import type { OperatorRole } from '../core/scopes.ts';
import type { OrganizationRole } from './organizations.ts';

export interface InvitationRecord {
  readonly tokenHash: string;
  /** The address the account will have, verified: the invitation was sent there. */
  readonly email: string;
  /** The console role the account will have, or none. */
  readonly role: OperatorRole | null;
  /** The app that invited them: where they land once the account is made. */
  readonly clientId: string | null;
  /** The organization the person becomes a member of, with `organizationRole`; null: none. */
  readonly organizationId: string | null;
  readonly organizationRole: OrganizationRole | null;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly usedAt: number | null;
}

export interface InvitationStore {
  create(invitation: InvitationRecord): Promise<void>;
  /** The record if it is unused and unexpired at `now`; does not use it up. */
  find(tokenHash: string, now: number): Promise<InvitationRecord | null>;
  /** Uses it up: exactly one caller receives the record, only while unused and unexpired at `now`. */
  consume(tokenHash: string, now: number): Promise<InvitationRecord | null>;
}
