/**
 * A person changes their own e-mail address (the account page). The new address is not used
 * until the link mailed to it is followed: until then the account keeps its address, and the
 * new one waits, by the hash of the link's token, bound to that one address. Following the
 * link, in a browser signed in as the account (flows/address-link.ts), sets the address,
 * verified (OIDC Core §5.1 email_verified: the person showed they receive its mail), and mails
 * the old address a notice, so that a change its owner did not make is noticed. A newer
 * request ends the older links; each link is single use and expires after
 * TESSERA_SIGN_UP_LINK_TTL.
 *
 * Each request is charged to the network address it came from and to the e-mail address it
 * names, on the budgets of "Forgot password?" (flows/recovery.ts): mail aimed at one inbox is
 * counted the same whichever page asked for it.
 *
 * The address is where "Forgot password?" sends its link, so moving it hands over the account:
 * only a recent sign-in may ask (`recentEnoughForAccountChange`, TESSERA_ACCOUNT_REAUTHENTICATE).
 */
import type { Locale } from '../config/locales.ts';
import { hashSecret, randomToken } from '../core/crypto.ts';
import { EMAIL_CHANGE_VERIFY_PATH } from '../core/endpoints.ts';
import { DuplicateError, type EmailChangeRecord, type UserRecord } from '../store/types.ts';
import { signInFirst, type Follower, type SignInFirst } from './address-link.ts';
import { isRefusal } from './attempts.ts';
import { transactionWithEvents } from './events.ts';
import { mailAddress } from './mail/outbox.ts';
import { reserveMailedLink } from './recovery.ts';
import { recentEnoughForAccountChange } from './second-factor/policy.ts';
import { endMailedLinks, mailLocale, type AccountDeps } from './users.ts';

/** Whether a person may change their address themselves: only where the link can be mailed. */
export function emailChangeOffered(deps: Pick<AccountDeps, 'mail'>): boolean {
  return deps.mail !== undefined;
}

export type EmailChangeResult =
  | { readonly kind: 'sent'; readonly email: string }
  | { readonly kind: 'invalid' }
  /** The account has this address, verified, already. */
  | { readonly kind: 'same' }
  | { readonly kind: 'limited'; readonly retryAfterSeconds: number }
  /** The session's sign-in is older than `TESSERA_ACCOUNT_REAUTHENTICATE`: sign in again first. */
  | { readonly kind: 'sign-in-again' }
  | { readonly kind: 'unavailable' };

export async function requestEmailChange(
  deps: AccountDeps,
  user: UserRecord,
  input: {
    readonly email: string;
    readonly ip: string;
    readonly locale: Locale;
    /** When the asking session signed in (its `auth_time`), in milliseconds. */
    readonly signedInAt: number;
  },
): Promise<EmailChangeResult> {
  const { mail } = deps;
  if (mail === undefined) return { kind: 'unavailable' };
  if (!recentEnoughForAccountChange(deps, input.signedInAt)) return { kind: 'sign-in-again' };
  const email = mailAddress(input.email);
  if (email === null) return { kind: 'invalid' };
  // The address the account has, unverified, may be asked for: the link then verifies it.
  if (user.emailVerified && user.email?.toLowerCase() === email.toLowerCase()) return { kind: 'same' };
  const attempt = await reserveMailedLink(deps, input.ip, email);
  if (isRefusal(attempt)) return { kind: 'limited', retryAfterSeconds: attempt.retryAfterSeconds };
  const now = deps.clock.now();
  const token = randomToken(32);
  const expiresAt = now + deps.config.signUp.linkTtlSeconds * 1000;
  const change: EmailChangeRecord = { tokenHash: hashSecret(token), userId: user.id, email, createdAt: now, expiresAt, usedAt: null };
  // Built from the issuer alone (docs/mail.md): no request header reaches a link.
  const link = `${deps.config.issuer}${EMAIL_CHANGE_VERIFY_PATH}?${new URLSearchParams({ token }).toString()}`;
  await transactionWithEvents(deps, async (tx, record) => {
    // A newer request ends the older ones: only the address asked for last can be confirmed.
    await tx.emailChanges.spendAllForUser(user.id, now);
    await tx.emailChanges.create(change);
    const asked = await record({ type: 'user.email_change_requested', userId: user.id, username: user.username });
    await mail.queue(tx, asked, {
      kind: 'email_change',
      to: { address: email, name: user.name ?? '' },
      locale: mailLocale(deps, user, input.locale),
      values: { username: user.username, email, link, expiresAt },
    });
  });
  return { kind: 'sent', email };
}

/** The address waiting for its link, for the account page; null when none is. */
export async function pendingEmailChange(deps: Pick<AccountDeps, 'store' | 'clock'>, user: UserRecord): Promise<string | null> {
  return (await deps.store.emailChanges.pendingFor(user.id, deps.clock.now()))?.email ?? null;
}

/** The live change `token` names, with its account, or null. */
export async function findEmailChange(
  deps: Pick<AccountDeps, 'store' | 'clock'>,
  token: string,
): Promise<{ readonly change: EmailChangeRecord; readonly user: UserRecord } | null> {
  if (token.length === 0 || token.length > 128) return null;
  const change = await deps.store.emailChanges.find(hashSecret(token), deps.clock.now());
  const user = change === null ? null : await deps.store.users.get(change.userId);
  return change === null || user === null || user.disabled ? null : { change, user };
}

export type EmailChangeLink =
  | { readonly kind: 'confirm'; readonly change: EmailChangeRecord; readonly user: UserRecord }
  | { readonly kind: 'invalid_link' }
  /** This browser is not signed in as the account whose change it is. */
  | SignInFirst;

/**
 * What the link `token` offers a browser signed in as `follower`: its button when that is the
 * account whose change it is; otherwise the sign-in first (flows/address-link.ts). The link
 * alone went to the new address, which whoever asked chose: it may be someone else's.
 */
export async function openEmailChangeLink(deps: Pick<AccountDeps, 'store' | 'clock'>, token: string, follower: Follower): Promise<EmailChangeLink> {
  const found = await findEmailChange(deps, token);
  if (found === null) return { kind: 'invalid_link' };
  return signInFirst(found.user, follower) ?? { kind: 'confirm', ...found };
}

export type EmailChangeVerifyResult =
  | { readonly kind: 'done'; readonly user: UserRecord; readonly email: string }
  | Extract<EmailChangeLink, { kind: 'invalid_link' | 'sign-in' }>;

/**
 * Follows the link, in a browser signed in as `follower` (openEmailChangeLink): exactly one
 * caller uses it up (one conditional UPDATE), in the transaction that sets the address, ends
 * the person's other waiting links and the reset links mailed to the old address, and queues
 * the notice to the old address.
 *
 * An address another account has (the request did not say whether one had it) cannot be this
 * one's too: the link then cannot be used, and nothing changes, the link included.
 */
export async function verifyEmailChange(deps: AccountDeps, token: string, follower: Follower): Promise<EmailChangeVerifyResult> {
  const found = await openEmailChangeLink(deps, token, follower);
  if (found.kind !== 'confirm') return found;
  const { user } = found;
  try {
    return await transactionWithEvents(deps, async (tx, record): Promise<EmailChangeVerifyResult> => {
      const now = Math.max(deps.clock.now(), user.updatedAt + 1);
      const used = await tx.emailChanges.consume(found.change.tokenHash, deps.clock.now());
      if (used === null) return { kind: 'invalid_link' };
      await endMailedLinks(tx, user.id, now);
      await tx.users.update(user.id, { email: used.email, emailVerified: true }, now);
      const changed = await record({ type: 'user.email_changed', userId: user.id, username: user.username, detail: { by: 'email' } });
      // As an operator's change is announced: webhooks' user.updated, CAEP token-claims-change.
      await record({ type: 'user.updated', userId: user.id, username: user.username, detail: { fields: 'email emailVerified', by: 'user' } });
      const old = user.email;
      if (deps.mail && old !== null && old.toLowerCase() !== used.email.toLowerCase()) {
        await deps.mail.queue(tx, changed, {
          kind: 'email_changed',
          to: { address: old, name: user.name ?? '' },
          locale: mailLocale(deps, user),
          values: { username: user.username, email: used.email, at: changed.at },
        });
      }
      return { kind: 'done', user: { ...user, email: used.email, emailVerified: true }, email: used.email };
    });
  } catch (error) {
    // The unique address refused it, and the transaction is undone. The link is not spent either:
    // its address would leave the asker's account page without becoming theirs, and that would
    // tell the asker, who need not read that inbox, that another account has it. It works once the
    // address is free again, until it expires or the asker asks for another.
    if (error instanceof DuplicateError && error.field === 'email') return { kind: 'invalid_link' };
    throw error;
  }
}
