/**
 * A link mailed to confirm an e-mail address on an account that exists already (sign-up's with
 * TESSERA_SIGN_UP_VERIFY=later, an address change's) is used only in a browser signed in as
 * that account, as GitHub's verification links are. Anyone else, or no one, is shown the
 * sign-in page, which comes back to the link. A link that makes the account (sign-up's with
 * `first`) has no account to sign in as yet: it is used in the browser that filled in the
 * sign-up form, or elsewhere with the password chosen there (`makerFirst`).
 *
 * The link shows that whoever follows it reads the address's mail, not that they hold the
 * account. Whoever made the account, or asked for the change, chose the address and may have
 * chosen someone else's: that person, following the link from their own browser, would confirm
 * their address on an account someone else holds, and a confirmed address is trusted (an
 * upstream sign-in joins the account that has it, verified; a reset link removes nothing from
 * an account whose address is no longer self-asserted). These are the "unexpired e-mail
 * change" and "classic-federated merge" attacks of "Pre-hijacked accounts" (Sudhodanan &
 * Paverd, USENIX Security 2022). Signed in as the account, the person shows both halves: the
 * account by their sign-in, the address by the link. A link that makes the account would make
 * it with the password (or passkey) its form's submitter chose, the address verified: the
 * address's owner, pressing its button, would make an account someone else holds the key to.
 * There the person shows the account's half by the browser that chose its password or
 * passkey, or by that password.
 *
 * No sign-in more recent than that is asked (TESSERA_ACCOUNT_REAUTHENTICATE). Following the
 * link chooses nothing: the address was chosen when the link was made, at the account's making
 * or by a recent sign-in (flows/email-change.ts `requestEmailChange`), and the link went to that
 * address alone. A session left open, or stolen, can confirm only what its holder chose and the
 * address's reader received; asking again would only make the person who opens the mail later,
 * in the browser they signed in with, sign in once more.
 */
import { digestsEqual } from '../core/crypto.ts';
import type { UserRecord } from '../store/types.ts';

/** Who follows a link: the account the browser is signed in as, or null when none. */
export type Follower = Pick<UserRecord, 'id' | 'username'> | null;

/** The link is not used in this browser: it signs in as `account` first, and comes back. */
export interface SignInFirst {
  readonly kind: 'sign-in';
  /** The account the link is for: the username the sign-in form is filled with, and the language of its mail. */
  readonly account: { readonly username: string; readonly locale: string | null };
  /** The username the browser is signed in as, someone else; null when it is signed in as no one. */
  readonly signedInAs: string | null;
}

/** Null when `follower` is `account`, who may use its link; otherwise, that they sign in as `account` first. */
export function signInFirst(account: Pick<UserRecord, 'id' | 'username' | 'locale'>, follower: Follower): SignInFirst | null {
  if (follower !== null && follower.id === account.id) return null;
  return { kind: 'sign-in', account: { username: account.username, locale: account.locale }, signedInAs: follower?.username ?? null };
}

/**
 * The link makes an account and is followed in another browser than the one whose form chose
 * its password or passkey (or one not known: a sign-up from before the browser was kept).
 * `password`: the page asks for the password chosen in that form, checked as a sign-in is.
 * `maker-browser`: the account is to be made with a passkey, which lives where it was made
 * and is not asked here: the link is to be opened in that browser.
 */
export interface MakerFirst {
  readonly kind: 'password' | 'maker-browser';
}

/**
 * Null when `browser` (the hash of the follower's sign-up cookie, flows/session/cookies.ts
 * `signUp`; null when it has none) is the one the sign-up form was posted from; otherwise, how
 * the follower shows they filled in that form.
 */
export function makerFirst(signUp: { readonly browser: string | null; readonly passkey: unknown }, browser: string | null): MakerFirst | null {
  if (signUp.browser !== null && browser !== null && digestsEqual(signUp.browser, browser)) return null;
  return { kind: signUp.passkey === null ? 'password' : 'maker-browser' };
}
