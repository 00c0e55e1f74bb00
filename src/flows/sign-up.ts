/**
 * Sign-up (TESSERA_SIGN_UP=open): a person makes their own account with a username, a name, an
 * e-mail address and a passkey or a password. A passkey is registered before the link is
 * mailed (its challenge answered and verified now, while the person is at the page) and waits
 * with the sign-up; the account is then made with it and no password. With TESSERA_SIGN_UP_VERIFY=first (the default) the account
 * is made only when the link mailed to the address is followed, in the browser that signed up
 * or, elsewhere, with the password chosen in the form (flows/address-link.ts); with `later` it
 * is made at once, and the browser that made it signed in to it, its `email_verified` false
 * until the link is followed in a browser signed in as that account.
 *
 * Whether an address has an account already is never said: the page after the form is the
 * same, the work is the same (the budgets, the password hashed, one transaction with its
 * event), and the address that has an account is mailed a notice in place of a link. (With
 * `later`, the browser is signed in to the account made, or to none: whoever signed up learns
 * no more than signing in with the account they asked for would tell them.) A taken
 * username is said to be taken: the person must choose another, and a username is no secret
 * (it is typed on the sign-in page). Each sign-up is charged to its network address and to
 * its e-mail address, whether it has an account or not.
 */
import { randomUUID } from 'node:crypto';
import type { Locale } from '../config/locales.ts';
import { PASSWORD_ONLY, type AuthMethod } from '../core/auth-methods.ts';
import { hashSecret, randomToken } from '../core/crypto.ts';
import { SIGN_UP_VERIFY_PATH, FORGOT_PASSWORD_PATH } from '../core/endpoints.ts';
import { countedAddress } from '../core/networks.ts';
import { normalizeUsername } from '../core/username.ts';
import type { PasswordQueue } from '../core/password-queue.ts';
import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import { DuplicateError, newUserRecord, type SignUpPasskey, type SignUpRecord, type Stores, type UserRecord } from '../store/types.ts';
import { makerFirst, signInFirst, type Follower, type MakerFirst, type SignInFirst } from './address-link.ts';
import { Attempt, isRefusal } from './attempts.ts';
import { type RecordEvent, transactionWithEvents } from './events.ts';
import { headerText, mailAddress } from './mail/outbox.ts';
import { USERNAME } from './manage/users.ts';
import { signUpRegistrationOptions, verifySignUpRegistration, type SignUpRegistrationResult } from './passkeys/registration.ts';
import { passkeysAvailable } from './passkeys/relying-party.ts';
import { beginSession, type Browser } from './session/session.ts';
import { checkChosenPassword, type Busy, type Limited, type PasswordCheckDeps } from './sign-in.ts';
import type { FlowDeps } from './types.ts';
import { NO_PASSWORD, passwordProblem, type AccountDeps } from './users.ts';

const HOUR_MS = 60 * 60_000;

export const SIGN_UP_KEYS = {
  address: 'sign-up:ip:',
  /** The hash of the address, lower-cased: the counter names no one. */
  email: 'sign-up:email:',
} as const;

/** `tokens`: a browser signed in at sign-up ends the session it had, and that session's apps are told (beginSession). */
export type SignUpDeps = AccountDeps & Pick<FlowDeps, 'tokens'> & { readonly passwords: Pick<PasswordQueue, 'hash' | 'retryAfterSeconds'> };

/** Whether the sign-up page is offered: open, and a way to send the link unless the account needs none first. */
export function signUpOffered(deps: Pick<AccountDeps, 'config' | 'mail'>): boolean {
  const settings = deps.config.signUp;
  return settings.policy === 'open' && (deps.mail !== undefined || settings.verify === 'later');
}

/** Whether the sign-up page may offer a passkey: passkeys need the issuer to be a domain name. */
export function signUpPasskeysOffered(deps: Pick<AccountDeps, 'config' | 'mail'>): boolean {
  return signUpOffered(deps) && passkeysAvailable(deps.config.issuer);
}

export type SignUpField = 'username' | 'name' | 'email' | 'password';

/** The browser's answer to signUpPasskeyOptions, for the account id those options named. */
export interface SignUpPasskeyAnswer {
  readonly accountId: string;
  readonly response: string;
  /** The browser that asked for the options (a hash of its CSRF cookie). */
  readonly browser: string;
  /** What the passkey is called on the account page: the browser and system it was made on. */
  readonly name: string;
}

export interface SignUpInput {
  readonly username: string;
  readonly name: string;
  readonly email: string;
  /** Ignored when `passkey` is given. */
  readonly password: string;
  readonly passkey?: SignUpPasskeyAnswer | undefined;
  readonly ip: string;
  readonly locale: Locale;
  /** Where the person goes once the link is followed: a path on this server. */
  readonly returnTo: string;
  /**
   * The browser the form is posted from (the hash of its sign-up cookie, flows/session/cookies.ts `signUp`):
   * the link is used there in one step (flows/address-link.ts `makerFirst`). Absent: anywhere,
   * the link asks for the password.
   */
  readonly browser?: string | undefined;
}

export type SignUpResult =
  /** The same answer whether the address was new or had an account. */
  | { readonly kind: 'sent'; readonly email: string }
  | { readonly kind: 'invalid'; readonly field: SignUpField; readonly problem: 'missing' | 'format' | 'domain' | 'short' | 'long' }
  | { readonly kind: 'taken' }
  | { readonly kind: 'limited'; readonly retryAfterSeconds: number }
  | { readonly kind: 'busy'; readonly retryAfterSeconds: number }
  /** The passkey was not made: the browser's answer is refused (`reason` for the log). */
  | { readonly kind: 'passkey'; readonly problem: Exclude<SignUpRegistrationResult['kind'], 'verified'>; readonly reason?: string }
  | { readonly kind: 'closed' };

type Fields = { username: string; name: string; email: string };

function checkedFields(deps: SignUpDeps, input: Pick<SignUpInput, 'username' | 'name' | 'email'>): Fields | Extract<SignUpResult, { kind: 'invalid' }> {
  const username = normalizeUsername(input.username);
  if (username === '') return { kind: 'invalid', field: 'username', problem: 'missing' };
  if (!USERNAME.test(username)) return { kind: 'invalid', field: 'username', problem: 'format' };
  const name = headerText(input.name);
  if (name === '') return { kind: 'invalid', field: 'name', problem: 'missing' };
  if (input.name.length > 200) return { kind: 'invalid', field: 'name', problem: 'long' };
  const email = mailAddress(input.email);
  if (email === null) return { kind: 'invalid', field: 'email', problem: input.email.trim() === '' ? 'missing' : 'format' };
  const domains = deps.config.signUp.domains;
  if (domains !== null && !domains.includes(email.slice(email.lastIndexOf('@') + 1).toLowerCase()))
    return { kind: 'invalid', field: 'email', problem: 'domain' };
  return { username, name, email };
}

function checked(deps: SignUpDeps, input: SignUpInput): Fields | Extract<SignUpResult, { kind: 'invalid' }> {
  const fields = checkedFields(deps, input);
  if ('kind' in fields || input.passkey !== undefined) return fields;
  const problem = passwordProblem(input.password);
  if (problem !== null)
    return { kind: 'invalid', field: 'password', problem: input.password.length === 0 ? 'missing' : problem.includes('at least') ? 'short' : 'long' };
  return fields;
}

export type PasskeyOptionsResult =
  | { readonly kind: 'options'; readonly options: PublicKeyCredentialCreationOptionsJSON }
  | Extract<SignUpResult, { kind: 'invalid' | 'taken' | 'closed' }>;

/**
 * The options for navigator.credentials.create() at sign-up, for the username and name typed
 * so far, under a new account id (the passkey's user handle: the account's `sub` to be).
 * Nothing is counted or stored but the challenge: the sign-up itself is, when it is posted.
 */
export async function signUpPasskeyOptions(
  deps: SignUpDeps,
  input: Pick<SignUpInput, 'username' | 'name' | 'email'>,
  browser: string,
): Promise<PasskeyOptionsResult> {
  if (!signUpPasskeysOffered(deps)) return { kind: 'closed' };
  const fields = checkedFields(deps, input);
  if ('kind' in fields) return fields;
  if (await deps.store.users.findByUsername(fields.username)) return { kind: 'taken' };
  return { kind: 'options', options: await signUpRegistrationOptions(deps, { id: randomUUID(), username: fields.username, name: fields.name }, browser) };
}

/** The passkey answered for `answer`'s account, or why it was not; with no answer, no passkey (a password). */
async function passkeyOf(
  deps: SignUpDeps,
  answer: SignUpPasskeyAnswer | undefined,
): Promise<SignUpPasskey | null | Extract<SignUpResult, { kind: 'passkey' | 'closed' }>> {
  if (answer === undefined) return null;
  if (!signUpPasskeysOffered(deps)) return { kind: 'closed' };
  return newAccountPasskey(deps, answer);
}

export type NewAccountPasskeyRefusal = Extract<SignUpResult, { kind: 'passkey' }>;

/**
 * The passkey a new account is to be made with (sign-up's, an invitation's): the browser's
 * answer checked against the challenge given to this browser for that account id and
 * `purpose` (flows/passkeys/registration.ts), or why it is refused.
 */
export async function newAccountPasskey(deps: SignUpDeps, answer: SignUpPasskeyAnswer, purpose?: string): Promise<SignUpPasskey | NewAccountPasskeyRefusal> {
  // The account id comes back from the browser: it must be one this server could have made.
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(answer.accountId)) return { kind: 'passkey', problem: 'challenge' };
  const verified = await verifySignUpRegistration(deps, answer.accountId, answer.name, answer.response, answer.browser, purpose);
  if (verified.kind === 'verified') return verified.passkey;
  return verified.kind === 'rejected' ? { kind: 'passkey', problem: verified.kind, reason: verified.reason } : { kind: 'passkey', problem: verified.kind };
}

/** Makes the account's passkey from the one its making was answered with, in the account's transaction. */
export async function addPasskey(
  tx: Pick<Stores, 'passkeys'>,
  record: RecordEvent,
  user: UserRecord,
  passkey: SignUpPasskey,
  now: number,
  by: 'sign_up' | 'invitation' = 'sign_up',
): Promise<void> {
  await tx.passkeys.create({ ...passkey, userId: user.id, createdAt: now, lastUsedAt: null });
  await record({
    type: 'passkey.added',
    userId: user.id,
    username: user.username,
    detail: { passkey: passkey.name, synced: passkey.deviceType === 'multiDevice', by },
  });
}

/**
 * `browser`: where the form was posted from. With TESSERA_SIGN_UP_VERIFY=later the account made
 * at once is its maker's, and this browser is signed in to it: its address is confirmed by the
 * link followed in a browser signed in as the account (flows/address-link.ts), here in one step.
 */
export async function signUp(deps: SignUpDeps, input: SignUpInput, browser?: Browser): Promise<SignUpResult> {
  if (!signUpOffered(deps)) return { kind: 'closed' };
  const settings = deps.config.signUp;
  const fields = checked(deps, input);
  if ('kind' in fields) return fields;
  const { username, name, email } = fields;
  const attempt = await Attempt.reserve(
    deps.store.rateLimits,
    [
      { key: `${SIGN_UP_KEYS.address}${countedAddress(input.ip)}`, limit: settings.perAddressPerHour },
      { key: `${SIGN_UP_KEYS.email}${hashSecret(email.toLowerCase())}`, limit: settings.perEmailPerHour },
    ],
    HOUR_MS,
    deps.clock.now(),
  );
  // Every sign-up stays counted: a flood is a flood whether its accounts are made or not.
  if (isRefusal(attempt)) return { kind: 'limited', retryAfterSeconds: attempt.retryAfterSeconds };
  if (await deps.store.users.findByUsername(username)) return { kind: 'taken' };
  // The passkey is checked, or the password hashed on the password queue from this address,
  // whether the address has an account or not.
  const passkey = await passkeyOf(deps, input.passkey);
  if (passkey !== null && 'kind' in passkey) return passkey;
  const passwordHash = passkey !== null ? NO_PASSWORD : await deps.passwords.hash(input.password, deps.config.passwordHash, input.ip);
  if (passwordHash === null) return { kind: 'busy', retryAfterSeconds: deps.passwords.retryAfterSeconds() };
  const existing = await deps.store.users.findByEmail(email);
  const now = deps.clock.now();
  const token = randomToken(32);
  const link = `${deps.config.issuer}${SIGN_UP_VERIFY_PATH}?${new URLSearchParams({ token }).toString()}`;
  const expiresAt = now + settings.linkTtlSeconds * 1000;
  const pending: SignUpRecord = {
    tokenHash: hashSecret(token),
    userId: null,
    username,
    name,
    email,
    passwordHash,
    passkey,
    locale: input.locale,
    returnTo: input.returnTo,
    browser: input.browser ?? null,
    createdAt: now,
    expiresAt,
    usedAt: null,
  };
  const { mail } = deps;
  let made: UserRecord | null;
  try {
    made = await transactionWithEvents(deps, async (tx, record): Promise<UserRecord | null> => {
      const asked = await record({ type: 'signup.requested', username, detail: { existing: existing.length > 0 } });
      const owner = existing[0];
      if (owner !== undefined) {
        // The address's owner hears that someone tried, and how back into their own account.
        await mail?.queue(tx, asked, {
          kind: 'signup_exists',
          to: { address: email, name: owner.name ?? '' },
          locale: input.locale,
          values: { username: owner.username, link: `${deps.config.issuer}${FORGOT_PASSWORD_PATH}` },
        });
        return null;
      }
      if (settings.verify === 'first') {
        await tx.signUps.create(pending);
        await mail!.queue(tx, asked, { kind: 'verify', to: { address: email, name }, locale: input.locale, values: { username, link, expiresAt } });
        return null;
      }
      // Usable at once; the address is verified when the link is followed.
      const user = newUserRecord({
        id: passkey?.userId ?? randomUUID(),
        username,
        passwordHash,
        name,
        email,
        emailVerified: false,
        // Whoever signs up chose this address and has not proved it: it may be someone else's.
        emailSelfAsserted: true,
        locale: input.locale,
        createdAt: now,
      });
      await tx.users.create(user);
      const created = await record({ type: 'user.created', userId: user.id, username, detail: { by: 'sign_up' } });
      if (passkey !== null) await addPasskey(tx, record, user, passkey, now);
      if (mail) {
        await tx.signUps.create({ ...pending, userId: user.id });
        await mail.queue(tx, created, { kind: 'verify', to: { address: email, name }, locale: input.locale, values: { username, link, expiresAt } });
      }
      return user;
    });
  } catch (error) {
    // The address became an account's between the look and the write: answered as when it was one
    // already (its owner was not written to this time), so that the answer tells nobody whose it is.
    if (error instanceof DuplicateError && error.field === 'email') return { kind: 'sent', email };
    // The username was taken between the look and the write.
    if (error instanceof DuplicateError) return { kind: 'taken' };
    throw error;
  }
  // What the form proved: the password just chosen, or the passkey just made (its user
  // verification is not kept from the registration: presence, one factor, as a passkey
  // sign-in without it). A new account has no one-time codes to ask for.
  if (made !== null && browser !== undefined) await beginSession(deps, browser, made, madeWith(passkey), { clientId: null });
  return { kind: 'sent', email };
}

function madeWith(passkey: SignUpPasskey | null): readonly AuthMethod[] {
  if (passkey === null) return PASSWORD_ONLY;
  return [passkey.deviceType === 'multiDevice' ? 'swk' : 'hwk', 'user'];
}

/** The live sign-up link `token` names, or null. */
export async function findSignUp(deps: Pick<AccountDeps, 'store' | 'clock'>, token: string): Promise<SignUpRecord | null> {
  if (token.length === 0 || token.length > 128) return null;
  return deps.store.signUps.find(hashSecret(token), deps.clock.now());
}

/**
 * The browser that follows a link that makes the account (`first`): which browser it is (the
 * hash of its sign-up cookie, flows/session/cookies.ts `signUp`; null when it has none), and,
 * where it is not the one that signed up, the password typed on the link's page and the
 * network address it came from, which the check is charged to.
 */
export interface MakerProof {
  readonly browser: string | null;
  readonly typed?: { readonly password: string; readonly ip: string } | undefined;
}

/** A browser nobody knows: the link asks for the password, or, for a passkey, for the browser that signed up. */
const UNKNOWN_BROWSER: MakerProof = { browser: null };

/** The link makes an account and is followed in another browser (flows/address-link.ts `makerFirst`), for `username`. */
export type ElsewhereFirst = MakerFirst & { readonly username: string; readonly locale: string | null };

export type VerifyResult =
  /** `signedIn`: the address of an account made at once, confirmed by the browser signed in as it; otherwise the account was just made, and is signed in to next. */
  | { readonly kind: 'done'; readonly user: UserRecord; readonly returnTo: string; readonly signedIn: boolean }
  | { readonly kind: 'invalid_link' }
  /** Someone took the username while the link waited: the person signs up again. */
  | { readonly kind: 'taken' }
  /** The account was made at once (`later`), and this browser is not signed in as it. */
  | SignInFirst
  /** Another browser than the one that signed up, with no password (`password`) or a passkey sign-up. */
  | ElsewhereFirst
  /** The password typed is not the one chosen in the sign-up form: nothing is made, the link stays usable. */
  | { readonly kind: 'wrong_password'; readonly username: string; readonly locale: string | null }
  /** The password was not checked: too many wrong passwords, or no place on the password queue. */
  | ((Limited | Busy) & { readonly username: string; readonly locale: string | null });

/** A link of an account made at once can confirm its address while the account has it, and is enabled. */
function stillFor(user: UserRecord | null, link: SignUpRecord): user is UserRecord {
  return user !== null && !user.disabled && user.email?.toLowerCase() === link.email.toLowerCase();
}

/**
 * `confirm`: its button, with `password` when the page asks for the password chosen in the
 * sign-up form with it (another browser than the one that signed up).
 */
export type SignUpLink =
  | { readonly kind: 'confirm'; readonly link: SignUpRecord; readonly password: boolean }
  | { readonly kind: 'invalid_link' }
  | SignInFirst
  | (ElsewhereFirst & { readonly kind: 'maker-browser' });

/**
 * What the link `token` offers a browser signed in as `follower`, which is `maker.browser`:
 * its button, or the sign-in first (flows/address-link.ts). A link that makes the account
 * (`first`) is its maker's: in the browser that signed up, its button; in another, its button
 * with the password chosen in the form; a passkey sign-up's, only in the browser that signed
 * up. A link of an account made at once (`later`) is its account's alone.
 */
export async function openSignUpLink(
  deps: Pick<AccountDeps, 'store' | 'clock'>,
  token: string,
  follower: Follower,
  maker: MakerProof = UNKNOWN_BROWSER,
): Promise<SignUpLink> {
  const found = await findSignUp(deps, token);
  if (found === null) return { kind: 'invalid_link' };
  if (found.userId === null) {
    const elsewhere = makerFirst(found, maker.browser);
    if (elsewhere?.kind === 'maker-browser') return { kind: 'maker-browser', username: found.username, locale: found.locale };
    return { kind: 'confirm', link: found, password: elsewhere !== null };
  }
  const user = await deps.store.users.get(found.userId);
  // The address changed since (this link verified the old one), or the account is disabled.
  if (!stillFor(user, found)) return { kind: 'invalid_link' };
  return signInFirst(user, follower) ?? { kind: 'confirm', link: found, password: false };
}

/**
 * Follows a sign-up link, in a browser signed in as `follower`, which is `maker.browser`
 * (openSignUpLink): exactly one caller uses it up (one conditional UPDATE), in the transaction
 * that makes the account (its address verified) or verifies the address of the account made at
 * once. Where the page asks for the password, it is checked first, as a sign-in is (the
 * password queue, the guessing limits on the username to be and `maker.typed.ip`): a wrong one uses
 * nothing up.
 */
export async function verifySignUp(
  deps: AccountDeps & PasswordCheckDeps,
  token: string,
  follower: Follower,
  maker: MakerProof = UNKNOWN_BROWSER,
): Promise<VerifyResult> {
  const opened = await openSignUpLink(deps, token, follower, maker);
  if (opened.kind !== 'confirm') return opened;
  const found = opened.link;
  if (opened.password) {
    const asked = { username: found.username, locale: found.locale };
    // Nothing typed is no guess: said at once, counted against nothing.
    if (maker.typed === undefined || maker.typed.password === '') return { kind: 'password', ...asked };
    const check = await checkChosenPassword(deps, found, maker.typed);
    if (check.kind === 'wrong') return { kind: 'wrong_password', ...asked };
    if (check.kind !== 'right') return { ...check, ...asked };
  }
  try {
    return await transactionWithEvents(deps, async (tx, record): Promise<VerifyResult> => {
      const now = deps.clock.now();
      const used = await tx.signUps.consume(found.tokenHash, now);
      if (used === null) return { kind: 'invalid_link' };
      if (used.userId !== null) {
        const user = await tx.users.get(used.userId);
        if (!stillFor(user, used)) return { kind: 'invalid_link' };
        await tx.users.update(user.id, { emailVerified: true }, now);
        await record({ type: 'user.email_verified', userId: user.id, username: user.username, detail: { by: 'sign_up' } });
        return { kind: 'done', user: { ...user, emailVerified: true }, returnTo: used.returnTo, signedIn: true };
      }
      const user = newUserRecord({
        // A passkey's user handle is the account's id (WebAuthn Level 3 §5.4.3): the one it was made for.
        id: used.passkey?.userId ?? randomUUID(),
        username: used.username,
        passwordHash: used.passwordHash,
        name: used.name,
        email: used.email,
        emailVerified: true,
        locale: used.locale,
        createdAt: now,
      });
      await tx.users.create(user);
      await record({ type: 'user.created', userId: user.id, username: user.username, detail: { by: 'sign_up' } });
      if (used.passkey !== null) await addPasskey(tx, record, user, used.passkey, now);
      await record({ type: 'user.email_verified', userId: user.id, username: user.username, detail: { by: 'sign_up' } });
      return { kind: 'done', user, returnTo: used.returnTo, signedIn: false };
    });
  } catch (error) {
    if (error instanceof DuplicateError) return { kind: 'taken' };
    throw error;
  }
}
