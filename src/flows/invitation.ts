/**
 * Accepting an invitation (flows/manage/invitations.ts): the person invited chooses a username
 * and a password; the account is made with the invitation's address (verified: the link went
 * there), console role and organization membership, in the transaction that uses the link up (one conditional UPDATE),
 * so that the link makes one account, once, before it expires.
 */
import { randomUUID } from 'node:crypto';
import { hashSecret } from '../core/crypto.ts';
import { normalizeUsername } from '../core/username.ts';
import { DuplicateError, newUserRecord, type InvitationRecord, type UserRecord } from '../store/types.ts';
import { transactionWithEvents } from './events.ts';
import { headerText } from './mail/outbox.ts';
import { USERNAME } from './manage/users.ts';
import type { SignUpDeps, SignUpField } from './sign-up.ts';
import { passwordProblem, type AccountDeps } from './users.ts';

export async function findInvitation(deps: Pick<AccountDeps, 'store' | 'clock'>, token: string): Promise<InvitationRecord | null> {
  if (token.length === 0 || token.length > 128) return null;
  return deps.store.invitations.find(hashSecret(token), deps.clock.now());
}

export type AcceptResult =
  | { readonly kind: 'done'; readonly user: UserRecord; readonly clientId: string | null }
  | { readonly kind: 'invalid_link' }
  | { readonly kind: 'invalid'; readonly field: Exclude<SignUpField, 'email'> }
  | { readonly kind: 'taken' }
  | { readonly kind: 'busy'; readonly retryAfterSeconds: number };

export async function acceptInvitation(
  deps: SignUpDeps,
  input: { readonly token: string; readonly username: string; readonly name: string; readonly password: string; readonly ip: string; readonly locale: string },
): Promise<AcceptResult> {
  const invitation = await findInvitation(deps, input.token);
  if (invitation === null) return { kind: 'invalid_link' };
  const username = normalizeUsername(input.username);
  if (!USERNAME.test(username)) return { kind: 'invalid', field: 'username' };
  const name = headerText(input.name);
  if (name === '' || input.name.length > 200) return { kind: 'invalid', field: 'name' };
  if (passwordProblem(input.password) !== null) return { kind: 'invalid', field: 'password' };
  if (await deps.store.users.findByUsername(username)) return { kind: 'taken' };
  // Trusted: whoever holds a live invitation was sent it by an operator.
  const passwordHash = await deps.passwords.hash(input.password, deps.config.passwordHash, input.ip, { trusted: true });
  if (passwordHash === null) return { kind: 'busy', retryAfterSeconds: deps.passwords.retryAfterSeconds() };
  try {
    return await transactionWithEvents(deps, async (tx, record): Promise<AcceptResult> => {
      const now = deps.clock.now();
      const used = await tx.invitations.consume(invitation.tokenHash, now);
      if (used === null) return { kind: 'invalid_link' };
      const user = newUserRecord({
        id: randomUUID(),
        username,
        passwordHash,
        name,
        email: used.email,
        emailVerified: true,
        locale: input.locale,
        role: used.role,
        createdAt: now,
      });
      await tx.users.create(user);
      await record({ type: 'user.created', userId: user.id, username, clientId: used.clientId, detail: { by: 'invitation', role: used.role } });
      // The organization it invited them into, in the same transaction: the account is born a member.
      if (used.organizationId !== null) {
        const role = used.organizationRole ?? 'member';
        await tx.organizations.setMember({ organizationId: used.organizationId, userId: user.id, role, createdAt: now });
        await record({ type: 'organization.member_set', userId: user.id, username, detail: { organization: used.organizationId, role, by: 'invitation' } });
      }
      return { kind: 'done', user, clientId: used.clientId };
    });
  } catch (error) {
    // An account took the invited address meanwhile: the link can make no account with it.
    if (error instanceof DuplicateError && error.field === 'email') return { kind: 'invalid_link' };
    if (error instanceof DuplicateError) return { kind: 'taken' };
    throw error;
  }
}
