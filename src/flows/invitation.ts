/**
 * Accepting an invitation (flows/manage/invitations.ts): the person invited chooses a username
 * and a passkey or a password (the passkey where the issuer allows passkeys, as sign-up
 * decides; its challenge bound to this browser, the account id and the invitation); the account is made with the invitation's address (verified: the link went
 * there), console role and organization membership, in the transaction that uses the link up (one conditional UPDATE),
 * so that the link makes one account, once, before it expires.
 */
import { randomUUID } from 'node:crypto';
import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import { hashSecret } from '../core/crypto.ts';
import { normalizeUsername } from '../core/username.ts';
import { DuplicateError, newUserRecord, type InvitationRecord, type UserRecord } from '../store/types.ts';
import { transactionWithEvents } from './events.ts';
import { headerText } from './mail/outbox.ts';
import { USERNAME } from './manage/users.ts';
import { signUpRegistrationOptions } from './passkeys/registration.ts';
import { passkeysAvailable } from './passkeys/relying-party.ts';
import { addPasskey, newAccountPasskey, type NewAccountPasskeyRefusal, type SignUpDeps, type SignUpField, type SignUpPasskeyAnswer } from './sign-up.ts';
import { NO_PASSWORD, passwordProblem, type AccountDeps } from './users.ts';

/** Whether the invitation page may offer a passkey: passkeys need the issuer to be a domain name. */
export function invitationPasskeysOffered(deps: Pick<AccountDeps, 'config'>): boolean {
  return passkeysAvailable(deps.config.issuer);
}

/** The challenge of an invitation's passkey is good for that invitation alone. */
const passkeyPurpose = (invitation: InvitationRecord) => `invitation ${invitation.tokenHash}`;

export async function findInvitation(deps: Pick<AccountDeps, 'store' | 'clock'>, token: string): Promise<InvitationRecord | null> {
  if (token.length === 0 || token.length > 128) return null;
  return deps.store.invitations.find(hashSecret(token), deps.clock.now());
}

export type AcceptResult =
  | { readonly kind: 'done'; readonly user: UserRecord; readonly clientId: string | null }
  | { readonly kind: 'invalid_link' }
  | { readonly kind: 'invalid'; readonly field: Exclude<SignUpField, 'email'> }
  | { readonly kind: 'taken' }
  | { readonly kind: 'busy'; readonly retryAfterSeconds: number }
  /** The passkey was not made: the browser's answer is refused (`reason` for the log). */
  | NewAccountPasskeyRefusal
  /** A passkey answered where this issuer offers none. */
  | { readonly kind: 'closed' };

type Fields = { readonly username: string; readonly name: string };

function checkedFields(input: Fields): Fields | Extract<AcceptResult, { kind: 'invalid' }> {
  const username = normalizeUsername(input.username);
  if (!USERNAME.test(username)) return { kind: 'invalid', field: 'username' };
  const name = headerText(input.name);
  if (name === '' || input.name.length > 200) return { kind: 'invalid', field: 'name' };
  return { username, name };
}

export type InvitationPasskeyOptionsResult =
  | { readonly kind: 'options'; readonly options: PublicKeyCredentialCreationOptionsJSON }
  | Extract<AcceptResult, { kind: 'invalid_link' | 'invalid' | 'taken' | 'closed' }>;

/**
 * The options for navigator.credentials.create() on an invitation's page, for the username and
 * name typed so far, under a new account id (the passkey's user handle: the account's `sub` to
 * be); nothing is stored but the challenge, bound to this browser, that id and the invitation.
 */
export async function invitationPasskeyOptions(
  deps: SignUpDeps,
  input: Fields & { readonly token: string },
  browser: string,
): Promise<InvitationPasskeyOptionsResult> {
  if (!invitationPasskeysOffered(deps)) return { kind: 'closed' };
  const invitation = await findInvitation(deps, input.token);
  if (invitation === null) return { kind: 'invalid_link' };
  const fields = checkedFields(input);
  if ('kind' in fields) return fields;
  if (await deps.store.users.findByUsername(fields.username)) return { kind: 'taken' };
  const account = { id: randomUUID(), username: fields.username, name: fields.name };
  return { kind: 'options', options: await signUpRegistrationOptions(deps, account, browser, passkeyPurpose(invitation)) };
}

export async function acceptInvitation(
  deps: SignUpDeps,
  input: {
    readonly token: string;
    readonly username: string;
    readonly name: string;
    /** Ignored when `passkey` is given. */
    readonly password: string;
    readonly passkey?: SignUpPasskeyAnswer | undefined;
    readonly ip: string;
    readonly locale: string;
  },
): Promise<AcceptResult> {
  const invitation = await findInvitation(deps, input.token);
  if (invitation === null) return { kind: 'invalid_link' };
  const fields = checkedFields(input);
  if ('kind' in fields) return fields;
  const { username, name } = fields;
  if (input.passkey === undefined && passwordProblem(input.password) !== null) return { kind: 'invalid', field: 'password' };
  if (await deps.store.users.findByUsername(username)) return { kind: 'taken' };
  let passkey = null;
  let passwordHash: string | null = NO_PASSWORD;
  if (input.passkey !== undefined) {
    if (!invitationPasskeysOffered(deps)) return { kind: 'closed' };
    const made = await newAccountPasskey(deps, input.passkey, passkeyPurpose(invitation));
    if ('kind' in made) return made;
    passkey = made;
  } else {
    // Trusted: whoever holds a live invitation was sent it by an operator.
    passwordHash = await deps.passwords.hash(input.password, deps.config.passwordHash, input.ip, { trusted: true });
    if (passwordHash === null) return { kind: 'busy', retryAfterSeconds: deps.passwords.retryAfterSeconds() };
  }
  try {
    return await transactionWithEvents(deps, async (tx, record): Promise<AcceptResult> => {
      const now = deps.clock.now();
      const used = await tx.invitations.consume(invitation.tokenHash, now);
      if (used === null) return { kind: 'invalid_link' };
      const user = newUserRecord({
        // A passkey's user handle is the account's id (WebAuthn Level 3 §5.4.3): the one it was made for.
        id: passkey?.userId ?? randomUUID(),
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
      if (passkey !== null) await addPasskey(tx, record, user, passkey, now, 'invitation');
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
