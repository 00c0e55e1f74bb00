/**
 * From "the upstream provider says this is X" to the Tessera user who signs in: an identity linked before signs in as its user; a first sign-in creates the user
 * just in time with the claims mapped, or links to an existing user only when the provider
 * and the account both verified the e-mail address, the operator allowed linking for that
 * provider, and the user holds no console role; an address some user has already is never
 * given to a second account. Creating
 * the user and linking the identity are one transaction: a refusal leaves no half-made user.
 */
import { upstreamMethods, type AuthMethod } from '../../core/auth-methods.ts';
import { randomToken } from '../../core/crypto.ts';
import { withoutUnsafeCharacters } from '../../core/display-text.ts';
import { normalizeUsername } from '../../core/username.ts';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';
import { DuplicateError, newUserRecord, type UserRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import type { FlowDeps } from '../types.ts';
import type { ProviderSettings } from './settings.ts';

/** A person as an upstream provider described them, its claims already mapped to Tessera's. */
export interface UpstreamIdentity {
  /** Who they are upstream, stable: the ID token's `sub`, GitHub's user id, the entry's DN. */
  readonly subject: string;
  /** What they are called for sign-in upstream (an address, a login), for people to read. */
  readonly label: string | null;
  /** The username a new account would take, before it is made unique. */
  readonly username: string | null;
  readonly email: string | null;
  readonly emailVerified: boolean;
  readonly name: string | null;
  readonly givenName: string | null;
  readonly familyName: string | null;
  readonly picture: string | null;
  readonly locale: string | null;
  readonly zoneinfo: string | null;
  readonly groups: readonly string[];
  /**
   * What Tessera knows the sign-in proved (RFC 8176), which the session records: `pwd` for a
   * directory's password; an OpenID provider's own `amr` as far as Tessera knows its values
   * (core/auth-methods.ts `upstreamMethods`); nothing for GitHub, which says nothing.
   */
  readonly amr: readonly AuthMethod[];
  /**
   * When the person last proved who they are there (ms), which the session takes as its
   * `auth_time`: an OpenID provider's `auth_time` (OIDC Core §2), never later than now; the
   * directory's password check, now; null where the provider does not say (GitHub, an
   * OpenID provider that sends no `auth_time`). A provider's answer is not itself a sign-in:
   * its own session may have signed the person in without them proving anything again.
   */
  readonly authTime: number | null;
}

/** Why a sign-in through a provider was refused: `signin.failed`'s `detail.reason`, and the page's words. */
export type UpstreamRefusal =
  /** The provider answered with an error (the person cancelled, or the provider refused). */
  | 'upstream_error'
  /** The answer came back to another browser than the one that left, or its state did not match. */
  | 'state_mismatch'
  /** No sign-in under way here for that answer: it expired, or was used already. */
  | 'expired'
  /** The provider's answer did not hold up: an ID token from another issuer, a wrong nonce, a bad signature. */
  | 'invalid_response'
  /** The provider could not be reached, or answered too slowly. */
  | 'unavailable'
  /** The e-mail address is not in the provider's allowed domains (or not verified there). */
  | 'domain_not_allowed'
  /** Not a member of any organisation the GitHub provider requires. */
  | 'organization_not_allowed'
  /**
   * A Tessera account has this e-mail address (verified or not), and the sign-in may not be
   * linked to it: linking is not allowed for the provider, or one side did not verify the address.
   */
  | 'email_taken'
  /** The Tessera account with this e-mail address holds a console role: never linked by a provider's word. */
  | 'console_role'
  /** The Tessera user is disabled. */
  | 'disabled'
  /** The directory did not know the username, or the password was wrong. */
  | 'wrong_password'
  /** The provider was removed, or never existed. */
  | 'unknown_provider';

export type AccountResult =
  | { readonly kind: 'user'; readonly user: UserRecord }
  | { readonly kind: 'refused'; readonly reason: UpstreamRefusal; readonly user?: UserRecord };

/** `example.com` for `a@Example.COM`; null when there is no domain. */
export function emailDomain(email: string | null): string | null {
  const at = email?.lastIndexOf('@') ?? -1;
  return email && at > 0 ? email.slice(at + 1).toLowerCase() : null;
}

/**
 * A person's claim as stored: without the characters no name may hold (a provider's word is
 * not refused for them, they are taken out: core/display-text.ts), trimmed, bounded, null
 * when empty.
 */
function claim(value: string | null, max = 200): string | null {
  const trimmed = value === null ? '' : withoutUnsafeCharacters(value).trim();
  return trimmed ? trimmed.slice(0, max) : null;
}

/**
 * The Tessera user `identity` signs in as, creating or linking one at a first sign-in. A
 * disabled user is refused (a provider cannot bring a disabled account back).
 */
export async function accountFor(
  deps: Pick<FlowDeps, 'store' | 'clock' | 'events' | 'config'>,
  provider: IdentityProviderRecord,
  settings: ProviderSettings,
  identity: UpstreamIdentity,
): Promise<AccountResult> {
  const domain = emailDomain(identity.email);
  // An allowed domain is proved by a verified address in it; an unverified one proves nothing.
  if (settings.allowedDomains.length > 0 && !(identity.emailVerified && domain !== null && settings.allowedDomains.includes(domain))) {
    return { kind: 'refused', reason: 'domain_not_allowed' };
  }
  const now = deps.clock.now();
  // The label and groups are printed by `tessera user show` and shown on /account.
  const use = {
    label: claim(identity.label, 320),
    groups: identity.groups.map((group) => withoutUnsafeCharacters(group).trim()).filter((group) => group !== ''),
  };
  const linked = await deps.store.linkedIdentities.get(provider.id, identity.subject);
  if (linked) {
    const user = await deps.store.users.get(linked.userId);
    if (!user) return { kind: 'refused', reason: 'unknown_provider' };
    if (user.disabled) return { kind: 'refused', reason: 'disabled', user };
    await deps.store.linkedIdentities.recordUse(provider.id, identity.subject, use, now);
    return { kind: 'user', user };
  }
  const link = (user: UserRecord) => ({ providerId: provider.id, subject: identity.subject, userId: user.id, ...use, createdAt: now, lastUsedAt: now });
  const email = claim(identity.email, 320);
  const existing = email === null ? [] : await deps.store.linkedIdentities.usersWithEmail(email);
  if (existing.length > 0) {
    // The address is someone's already, verified or not: theirs to link where that is safe,
    // never a second account with it.
    const user = existing[0]!;
    const refusal = linkRefusal(settings, identity, existing);
    if (refusal !== null) return { kind: 'refused', reason: refusal, user };
    if (user.disabled) return { kind: 'refused', reason: 'disabled', user };
    try {
      await transactionWithEvents(deps, async (tx, record) => {
        await tx.linkedIdentities.create(link(user));
        await record({ type: 'identity.linked', userId: user.id, username: user.username, detail: { provider: provider.id, how: 'email' } });
      });
    } catch (error) {
      // The same person's other tab linked it first: sign in through that link.
      if (!(error instanceof DuplicateError)) throw error;
    }
    return { kind: 'user', user };
  }
  const created = await createUser(deps, provider, identity, link);
  // Another door gave the address to an account meanwhile: never a second account with it.
  return created === null ? { kind: 'refused', reason: 'email_taken' } : { kind: 'user', user: created };
}

/**
 * Makes `user` a member of the organization whose own provider `provider` is, when that
 * provider signed them in with an address it verified in the organization's verified domain
 * (docs/organizations.md, "Sign-in by domain"): the operator gave that domain's sign-in to
 * that provider, so whom it signs in there is the organization's. A member already keeps
 * their role (one conditional statement); a console role holder is left to the operator, as
 * no provider's word reaches the console (`linkRefusal`); an unverified address proves
 * nothing. Every sign-in asks again, so a person removed from the organization who still signs
 * in through its provider is a member again: remove them at the provider, or the domain's
 * routing.
 */
export async function joinOrganizationOfProvider(
  deps: Pick<FlowDeps, 'store' | 'clock' | 'events'>,
  provider: IdentityProviderRecord,
  identity: Pick<UpstreamIdentity, 'email' | 'emailVerified'>,
  user: UserRecord,
): Promise<void> {
  const domain = emailDomain(identity.email);
  if (!identity.emailVerified || domain === null || user.role !== null) return;
  const organization = await deps.store.organizations.byVerifiedDomain(domain);
  if (organization === null || organization.providerId !== provider.id) return;
  await transactionWithEvents(deps, async (tx, record) => {
    const member = { organizationId: organization.id, userId: user.id, role: 'member' as const, createdAt: deps.clock.now() };
    if (await tx.organizations.join(member))
      await record({
        type: 'organization.member_set',
        userId: user.id,
        username: user.username,
        detail: { organization: organization.id, role: 'member', by: 'sign-in', provider: provider.id },
      });
  });
}

/**
 * Why a first sign-in may not link to the account that has its e-mail address, or null when
 * it may: the operator allowed linking for the provider, the provider verified the address,
 * the account verified it too (an address typed for an account proves nothing: linking on it
 * would hand the account to whoever holds the address upstream, or the upstream person to
 * whoever made the account), exactly one account has it, and that account holds no console
 * role. A provider is never a way into the console: an operator's account
 * is linked by no one's word but its own.
 */
function linkRefusal(settings: ProviderSettings, identity: UpstreamIdentity, existing: readonly UserRecord[]): UpstreamRefusal | null {
  const user = existing[0]!;
  if (!settings.allowLinking || !identity.emailVerified || !user.emailVerified || existing.length > 1) return 'email_taken';
  if (user.role !== null) return 'console_role';
  return null;
}

/**
 * What an upstream sign-in proved, as `user`'s session may count it: the provider's word
 * (`identity.amr`), except that for a user who holds a console role its second factors never
 * count, trusted or not (`upstreamMethods` without trust): a provider's `mfa` must not open
 * the console, whose changes need a second factor proved here.
 */
export function methodsFor(user: UserRecord, identity: UpstreamIdentity): readonly AuthMethod[] {
  return user.role === null ? identity.amr : upstreamMethods(identity.amr, false);
}

/** The new account's username: the one upstream, else the e-mail address, made unique with the provider's id or a random tail. */
function usernames(provider: IdentityProviderRecord, identity: UpstreamIdentity): string[] {
  const base = normalizeUsername(claim(identity.username, 64) ?? claim(verifiedEmail(identity), 64) ?? `${provider.id}-${identity.subject}`).slice(0, 64);
  return [base, `${base}-${provider.id}`.slice(0, 64), `${base.slice(0, 55)}-${randomToken(6).toLowerCase()}`];
}

/**
 * The address a new account is given: the provider's, only where the provider verified it. An
 * unverified one would be anyone's: kept, it would hold the address against its owner (their
 * sign-up, invitation and own provider are refused while an account has it), and once the
 * owner, sent to this account by "Forgot password?", confirmed it on /account, their verified
 * sign-in elsewhere would link to the account whose upstream identity is still the other
 * person's (pre-hijacking). The person adds an address of their own on /account.
 */
function verifiedEmail(identity: Pick<UpstreamIdentity, 'email' | 'emailVerified'>): string | null {
  return identity.emailVerified ? identity.email : null;
}

async function createUser(
  deps: Pick<FlowDeps, 'store' | 'clock' | 'events'>,
  provider: IdentityProviderRecord,
  identity: UpstreamIdentity,
  link: (user: UserRecord) => Parameters<FlowDeps['store']['linkedIdentities']['create']>[0],
): Promise<UserRecord | null> {
  const now = deps.clock.now();
  for (const username of usernames(provider, identity)) {
    const user = newUserRecord({
      id: `sub-${randomToken(16)}`,
      username,
      // No password: this person signs in through the provider. A malformed hash matches nothing.
      passwordHash: '!',
      name: claim(identity.name),
      email: claim(verifiedEmail(identity), 320),
      emailVerified: verifiedEmail(identity) !== null,
      givenName: claim(identity.givenName),
      familyName: claim(identity.familyName),
      picture: claim(identity.picture, 2048),
      locale: claim(identity.locale, 35),
      zoneinfo: claim(identity.zoneinfo, 64),
      createdAt: now,
    });
    try {
      await transactionWithEvents(deps, async (tx, record) => {
        await tx.users.create(user);
        await tx.linkedIdentities.create(link(user));
        await record({ type: 'user.created', userId: user.id, username, detail: { by: 'provider', provider: provider.id } });
        await record({ type: 'identity.linked', userId: user.id, username, detail: { provider: provider.id, how: 'created' } });
      });
      return user;
    } catch (error) {
      if (!(error instanceof DuplicateError)) throw error;
      // The same upstream person's other tab made the account first: use it.
      const raced = await deps.store.linkedIdentities.get(provider.id, identity.subject);
      const user = raced ? await deps.store.users.get(raced.userId) : null;
      if (user) return user;
      if (error.field === 'email') return null;
      // Otherwise the username was taken: try the next.
    }
  }
  throw new Error(`no free username for ${provider.id} ${identity.subject}`);
}

/** A linked identity as its person sees it: the provider's name (null: since removed), what they are called there, since when. */
export interface LinkedIdentityView {
  readonly providerId: string;
  readonly providerName: string | null;
  readonly label: string | null;
  readonly subject: string;
  readonly groups: readonly string[];
  readonly linkedAt: number;
  readonly lastUsedAt: number | null;
}

/** The upstream identities `userId` signs in through, oldest first (the account page, `tessera user show`). */
export async function linkedIdentitiesOf(deps: Pick<FlowDeps, 'store'>, userId: string): Promise<LinkedIdentityView[]> {
  const [links, providers] = await Promise.all([deps.store.linkedIdentities.listForUser(userId), deps.store.identityProviders.list()]);
  return links.map((link) => ({
    providerId: link.providerId,
    providerName: providers.find((provider) => provider.id === link.providerId)?.name ?? null,
    label: link.label,
    subject: link.subject,
    groups: link.groups,
    linkedAt: link.createdAt,
    lastUsedAt: link.lastUsedAt,
  }));
}
