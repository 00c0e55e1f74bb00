/**
 * Inviting someone (`tessera user invite`): one operation, which every door calls. The link is
 * single use, expires, and is bound to the address it is sent to: the account made from it has
 * that address, verified. Mailed when there is a mail server (in the transaction of the
 * invitation and its event, through the outbox); printed for the operator either way, as a
 * reset link is, since it is theirs to hand over too.
 */
import { hashSecret, randomToken } from '../../core/crypto.ts';
import { INVITATION_PATH } from '../../core/endpoints.ts';
import { isOperatorRole, type OperatorRole } from '../../core/scopes.ts';
import { transactionWithEvents } from '../events.ts';
import { mailAddress } from '../mail/outbox.ts';
import { holdsAll, mayAssignRole } from './authority.ts';
import { checkOrganizationRole, getOrganization } from './organizations.ts';
import type { ManageDeps } from './deps.ts';
import { conflict, field, forbidden, invalid } from './errors.ts';

/** How long an invitation works unless the operator says: a week. */
export const DEFAULT_INVITATION_TTL_SECONDS = 7 * 86400;
/** Bounds on an invitation's life: an hour to thirty days. */
export const INVITATION_TTL_RANGE = { min: 3600, max: 30 * 86400 } as const;

export interface InvitationInput {
  readonly email: string;
  /** A console role (`admin`, `support`, `viewer`), or none. */
  readonly role?: string | null;
  /** The app that invites them: they land there once their account is made. */
  readonly clientId?: string | null;
  /** An organization (its id or name) the person becomes a member of, with `organizationRole` (member unless given). */
  readonly organization?: string | null;
  readonly organizationRole?: string | null;
  readonly ttlSeconds?: number;
}

export interface Invitation {
  readonly url: string;
  readonly email: string;
  readonly expiresAt: number;
  /** Whether it was put in the outbox (a mail server is set). */
  readonly mailed: boolean;
}

export async function inviteUser(deps: ManageDeps, input: InvitationInput): Promise<Invitation> {
  const email = mailAddress(input.email);
  if (email === null) throw invalid`${field('email')}: an e-mail address, such as name@example.com, on one line`;
  const rawRole = input.role ?? null;
  if (rawRole !== null && rawRole !== 'none' && !isOperatorRole(rawRole)) throw invalid`${field('role')}: admin, support, viewer or none`;
  const role: OperatorRole | null = rawRole === null || rawRole === 'none' ? null : (rawRole as OperatorRole);
  if (!mayAssignRole(deps.caller.scopes, role)) throw forbidden`${field('role')}: only an operator who holds everything a role allows may give it`;
  const ttl = input.ttlSeconds ?? DEFAULT_INVITATION_TTL_SECONDS;
  if (!Number.isInteger(ttl) || ttl < INVITATION_TTL_RANGE.min || ttl > INVITATION_TTL_RANGE.max) {
    throw invalid`${field('ttl')}: seconds, from ${INVITATION_TTL_RANGE.min} to ${INVITATION_TTL_RANGE.max}`;
  }
  // The account made from it would have this address, which is one account's: that person signs in, or resets their password.
  if ((await deps.store.users.findByEmail(email)).length > 0) throw conflict`${field('email')} ${email}: another account has this e-mail address`;
  const clientId = input.clientId ?? null;
  if (clientId !== null && (await deps.store.clients.get(clientId)) === null) throw invalid`${field('client')}: no application ${clientId}`;
  const organization = input.organization ? await getOrganization(deps, input.organization) : null;
  if (organization === null && input.organizationRole) throw invalid`${field('organization_role')}: give the ${field('organization')} too`;
  const organizationRole = organization === null ? null : checkOrganizationRole(input.organizationRole, 'organization_role');
  // Making a member is managing the organization: the caller needs its scope as well.
  if (organization !== null && !holdsAll(deps.caller.scopes, ['admin:orgs']))
    throw forbidden`${field('organization')}: only a caller that manages organizations (admin:orgs) may invite someone into one`;
  const token = randomToken(32);
  const now = deps.clock.now();
  const expiresAt = now + ttl * 1000;
  // Built from the issuer alone, as every link Tessera gives out.
  const url = `${deps.config.issuer}${INVITATION_PATH}?${new URLSearchParams({ token }).toString()}`;
  const { mail } = deps;
  await transactionWithEvents(deps, async (tx, record) => {
    await tx.invitations.create({
      tokenHash: hashSecret(token),
      email,
      role,
      clientId,
      organizationId: organization?.id ?? null,
      organizationRole,
      createdAt: now,
      expiresAt,
      usedAt: null,
    });
    const event = await record({
      type: 'user.invited',
      clientId,
      detail: {
        role,
        expires_at: new Date(expiresAt).toISOString(),
        ...(organization === null ? {} : { organization: organization.id, organization_role: organizationRole }),
        by: 'operator',
      },
    });
    await mail?.queue(tx, event, {
      kind: 'invite',
      to: { address: email, name: '' },
      locale: deps.config.site.defaultLocale,
      values: { link: url, expiresAt },
    });
  });
  return { url, email, expiresAt, mailed: mail !== undefined };
}
